"""The results page's comparison table from `stride sim compare ... --out DIR` runs.

    python3 bench/compare_table.py DIR/summary.json [DIR2/summary.json ...]

One row per transport (several summaries are merged, so transports run separately on the same
scenario and seed land in one table): STRIDE's own FCTs per size class (I < 10 KB, II 10-100 KB,
III 100 KB-1 MB, IV > 1 MB, all; average / p99), every other transport's FCT divided by
STRIDE's (> 1: STRIDE faster), drops, PFC pause time, the switches that paused before they had
marked a packet CE (of those that paused), and the watched ports' queue percentiles.
"""
import json
import sys


def load(p):
    return json.load(open(p))['transports']
def table(paths, ref='stride'):
    t = {}
    for p in paths:
        t.update(load(p))
    s = t[ref]['categories']
    cats = ['I', 'II', 'III', 'IV', 'all']
    out = ['| cc | done/flows | ' + ' | '.join(f'{c} avg / p99' for c in cats) + ' | drops | pause ms | paused before marking | queue p50 / p99 KB |',
           '|' + '---|' * (len(cats) + 6)]
    for name in sorted(t):
        r = t[name]
        cells = []
        for c in cats:
            a, b = r['categories'][c], s[c]
            if name == ref:
                cells.append(f"{a['avg_fct_us']:.0f} / {a['p99_fct_us']:.0f} µs")
            else:
                cells.append(f"{a['avg_fct_us']/b['avg_fct_us']:.2f} / {a['p99_fct_us']/b['p99_fct_us']:.2f}")
        if not r.get('pause_frames'):
            pb = '-'
        elif 'pausing_switches' not in r:
            pb = 'not counted'
        else:
            pb = f"{r['paused_before_marking']} of {r['pausing_switches']}"
        out.append(f"| {name} | {r['completed']}/{r['flows_total']} | " + ' | '.join(cells) +
                   f" | {r['drops']} | {r['pause_ms']:.2f} | {pb} | {r['queue_p50_kb']:.2f} / {r['queue_p99_kb']:.2f} |")
    return '\n'.join(out)


if __name__ == '__main__':
    print(table(sys.argv[1:]))

"""Pieces the benchmark scripts share."""
import contextlib
import re
import resource
import socket
import struct
import time
from pathlib import Path


@contextlib.contextmanager
def idle_polling():
    """Holds every CPU out of idle states with an exit latency above 0 us while the block runs
    (a PM QoS request through /dev/cpu_dma_latency, which ends when the file is closed; needs
    root). Yields whether the request was taken."""
    try:
        f = open("/dev/cpu_dma_latency", "wb", buffering=0)
    except OSError:
        yield False
        return
    try:
        f.write(struct.pack("i", 0))
        yield True
    finally:
        f.close()


def port():
    """A free UDP port on loopback (bound once and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_cpu(pid):
    """CPU seconds (user + system) a live process has used, threads that exited included, to
    the nanosecond: the process's CPU-time clock (`clock_getcpuclockid`); /proc/PID/stat
    counts in 10 ms ticks, too coarse for runs of a fraction of a second."""
    return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)


def children_cpu_split():
    """(user, system) CPU seconds of this process's reaped children (the total is the
    scheduler's exact run time; its split between user and system follows the tick samples)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def proc_switches(pid):
    """Context switches (voluntary + involuntary) of a live process's threads so far, from
    /proc/PID/task/*/status (threads that already exited are not counted)."""
    n = 0
    for st in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            for line in st.read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
        except OSError:
            pass  # the thread exited meanwhile
    return n


def children_switches():
    """Context switches (voluntary + involuntary) of this process's reaped children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_nvcsw + r.ru_nivcsw


def children_cpu():
    """CPU seconds (user + system) of this process's reaped children (RUSAGE_CHILDREN)."""
    return sum(children_cpu_split())


def cpu_times():
    """The machine's CPU time so far by kind (/proc/stat's first line, in ticks): user, nice,
    system, idle, iowait, irq, softirq, steal. None where there is no /proc/stat."""
    try:
        f = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    return dict(zip(names, (int(x) for x in f[1:9])))


def cpu_shares(before, after):
    """Each kind's share of the CPU time between two `cpu_times()` readings (None if either is
    None). `steal` is time the hypervisor gave the machine's vCPUs to someone else: a run with
    much of it measured a busy host, not only the code."""
    if not before or not after:
        return None
    d = {k: after[k] - before[k] for k in before}
    total = sum(d.values()) or 1
    return {k: round(v / total, 3) for k, v in d.items()}



def callgrind_calls(path):
    """The calls a callgrind output file records: (the program's total instructions, a list of
    (caller, callee, calls, the callee's inclusive instructions over those calls)), function
    names as callgrind writes them (with their " [object]" suffix when it gives one)."""
    names, total, calls = {}, 0, []
    fn = cfn = None
    count = None
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, i, name = m.groups()
            if name:
                names[i] = name
            if kind == "fn":
                fn = names[i]
            else:
                cfn = names[i]
            continue
        m = re.match(r"calls=(\d+)", line)
        if m:
            count = int(m.group(1))
            continue
        if count is not None:
            # The line after `calls=`: the call's position and inclusive cost.
            calls.append((fn, cfn, count, int(line.split()[-1])))
            count = None
            continue
        if line.startswith("summary:") or line.startswith("totals:"):
            total = int(line.split()[-1])
    return total, calls


def legacy_warm_up(count):
    """The warm-up round trips `stride perf client --rr COUNT` makes (1 %, at least 10), for
    binaries whose report predates its `warm_up_round_trips` field."""
    return max(count // 100, 10)

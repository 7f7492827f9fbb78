"""A Python model of the STRIDE controller (docs/spec.md section 8) with stride_cc's integer
arithmetic, for random stimulus of stride_cc_table. It is checked against every step of
vectors/cc (stride-proto's outputs) by test_stride_cc_table.py::test_model_matches_vectors before
it is trusted as a reference."""

M32 = 0xFFFFFFFF
EV_SAMPLE, EV_NACK, EV_TIMEOUT, EV_RESET = 0, 1, 2, 3
BR_NONE, BR_LOW, BR_HIGH, BR_GINC, BR_GDEC, BR_NACK, BR_TIMEOUT, BR_HELD = range(8)


def _s32(v):
    return v - (1 << 32) if v & 0x80000000 else v


class Controller:
    """One connection's controller state; step() applies one event and returns (rate, branch)."""

    def __init__(self, params, gate):
        self.p = params
        self.gate = gate
        self.reset()

    def reset(self):
        self.init = False
        self.stt_old = self.min_cur = self.min_prev = self.d = 0
        self.count = 0
        self.rate = self.p["rate_init"]

    def state(self):
        return {"rate": self.rate, "d": self.d, "stt_old": self.stt_old, "min_cur": self.min_cur,
                "min_prev": self.min_prev, "count": self.count}

    def step(self, event, stt=0):
        rate, self.last_branch = self._step(event, stt)
        return rate, self.last_branch

    def _step(self, event, stt):
        p = self.p
        if event == EV_RESET:
            self.reset()
            return self.rate, BR_NONE
        stt &= M32
        if event == EV_SAMPLE:
            first = not self.init
            if first:
                diff = 0
            else:
                raw = _s32((stt - self.stt_old) & M32)
                diff = max(-(1 << 30), min((1 << 30) - 1, raw)) & M32
            take = first or bool(((stt - self.min_cur) & M32) >> 31)
            e = (diff - self.d) & M32
            self.d = (self.d + ((_s32(e) >> p["alpha_shift"]) & M32)) & M32
            mcur1 = stt if take else self.min_cur
            mprev1 = stt if first else self.min_prev
            roll = self.count == ((p["min_window"] - 1) & 0xFFFF)
            self.min_cur = stt if roll else mcur1
            self.min_prev = mcur1 if roll else mprev1
            self.count = 0 if roll else (self.count + 1) & 0xFFFF
            self.stt_old = stt
            self.init = True
        # the queueing delay of this sample (a gated NACK: of the last sample)
        qstt = self.stt_old if (event == EV_NACK and self.gate) else stt
        m = self.min_prev if ((self.min_prev - self.min_cur) & M32) >> 31 else self.min_cur
        qd_raw = (qstt - m) & M32
        qd = 0 if qd_raw >> 31 else qd_raw
        lt_low = qd < p["t_low"]
        ge_high = qd >= p["t_high"]
        inc, dec, sh = 0, False, p["md_shift"]
        if event == EV_SAMPLE:
            if lt_low:
                branch, inc = BR_LOW, p["beta"]
            elif ge_high:
                branch, dec = BR_HIGH, True
            elif _s32(self.d) <= 0:
                branch, inc = BR_GINC, p["wbeta"]
            else:
                lead = (self.d & 0x7FFFFFFF).bit_length() - 1
                norm = p["norm_shift"]
                sh = 1 if lead >= norm else norm - lead
                branch, dec = BR_GDEC, True
        elif event == EV_NACK:
            if self.gate and self.init and lt_low:
                branch = BR_HELD
            else:
                branch, dec = BR_NACK, True
        else:
            branch, dec, sh = BR_TIMEOUT, True, 1
        r = self.rate
        if dec:
            cut = r >> sh
            self.rate = p["rate_min"] if cut > ((r - p["rate_min"]) & M32) else r - cut
        else:
            lim = p["rate_max"] - inc
            self.rate = p["rate_max"] if (lim < 0 or r > lim) else (r + inc) & M32
        return self.rate, branch

"""The exchange's local work at p ranks, without MPI: C(p) of docs/performance.md's latency model.

    python benchmarks/bench_exchange_local.py [--ranks 2,32,1000,16000] [--loops 5] [--json OUT]

``distscan.dist.exchange.Exchange`` called as the last rank of p (it folds the most carries), in
one process, with a communicator whose ``Allgather`` leaves every rank's record equal to this
one's and whose ``Sendrecv`` hands the message back: the Python and NumPy of the exchange (the
status comparison, the fold of the carries before this rank; the merges of recursive doubling)
without MPI.  Two flags: none (the common call's fast path) and ``AGREE_AFTER`` (what a rank whose
finish may fail sets: the gather's slow path).  CPU time (``time.process_time``), least of
``--loops`` loops, garbage collector off; µs per call.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distscan.ops.options import call_op  # noqa: E402
from distscan._carry import Carries  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.dist import exchange  # noqa: E402

CARRIES = [("sum int64", "sum", {}, "int64"), ("segmented sum int64", "sum", {"segments": True}, "int64"),
           ("recurrence float64", "sum", {"coefficients": 1}, "float64"),
           ("recurrence complex128", "sum", {"coefficients": 1}, "complex128"),
           ("compensated float64", "sum", {"compensated": True}, "float64")]


class EchoComm:
    """p ranks seen from the last one: every record gathered is this rank's; Sendrecv echoes."""

    def __init__(self, size):
        self.size = size

    def Get_size(self):
        return self.size

    def Get_rank(self):
        return self.size - 1

    def Allgather(self, rec, recs):
        recs[...] = rec

    def Sendrecv(self, send, dest, sendtag, recv, source, recvtag):
        recv[...] = send


def per_call(fn, loops, calls):
    best = float("inf")
    for _ in range(loops):
        t = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, time.process_time() - t)
    return best / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="2,32,1000,16000")
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    gc.disable()
    for p in map(int, a.ranks.split(",")):
        for name, base, options, dtype in CARRIES:
            op = call_op(base, **options)
            types = scan_types(op, np.dtype(dtype), np.dtype(dtype) if "coefficients" in options else None)
            carries = Carries(op, types.acc, types.state)
            if hasattr(carries, "prepare"):
                carries.prepare(1)  # what a plan compiles before its first exchange
            carry = carries.identity(1)
            row = {"carry": name, "ranks": p, "bytes": carry.nbytes}
            calls = max(20, 20000 // p)
            for method, doubling_from in (("gather", p + 1), ("doubling", 1)):
                exchange.DOUBLING_RANKS = doubling_from
                ex = exchange.Exchange(EchoComm(p), "flat", None, carry, carries.fold, carries.combine)
                ex.resolved = "flat"
                flags = (0, exchange.AGREE_AFTER) if method == "gather" else (0,)
                for flag in flags:
                    fn = lambda: ex(flag, 12345, 1000, carry)  # noqa: E731
                    fn()
                    key = f"{method}_us" + ("_agree_after" if flag else "")
                    row[key] = per_call(fn, a.loops, calls)
            rows.append(row)
            print(f"{name:24s} p {p:6d}  gather {row['gather_us']:8.1f} us "
                  f"(AGREE_AFTER {row['gather_us_agree_after']:8.1f})  doubling {row['doubling_us']:8.1f} us  "
                  f"({row['bytes']} B)", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

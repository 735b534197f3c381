import sys, traceback
from mpi4py import MPI
import numpy as np, distscan
comm = MPI.COMM_WORLD; R = comm.rank; P = comm.size
FAILS = []
def check(name, fn, ref=None, expect_error=False, cmp=None):
    """fn(): this rank's call. ref: function(list of results)->None/str (rank 0) or array to compare concatenation."""
    err = None; res = None
    try:
        res = fn()
    except Exception as e:
        err = (type(e).__name__, str(e)[:400])
    allr = comm.allgather((err, None if res is None else np.asarray(res)))
    if R == 0:
        errs = [a[0] for a in allr]
        status = "ok"
        if any(errs):
            kinds = [e[0] if e else None for e in errs]
            msgs = set(e[1] for e in errs if e)
            if len(set(kinds)) > 1: status = f"INCONSISTENT errors {kinds}: {[e for e in errs if e]}"
            elif not expect_error: status = f"UNEXPECTED ERROR {kinds[0]}: {list(msgs)[0]}"
            else: status = f"ok (error {kinds[0]}: {list(msgs)[0][:200]})"
        elif expect_error:
            status = f"NO ERROR (expected one); results {[a[1] for a in allr]}"
        elif ref is not None:
            got = [a[1] for a in allr]
            if callable(ref):
                why = ref(got)
                if why: status = "MISMATCH " + why
            else:
                g = np.concatenate([np.atleast_1d(v) if v.ndim == 0 else v for v in got])
                ref_ = np.asarray(ref)
                if g.dtype != ref_.dtype or g.shape != ref_.shape or not (np.array_equal(g, ref_, equal_nan=True) if g.dtype.kind in "fc" else np.array_equal(g, ref_)):
                    ok = g.shape == ref_.shape and g.dtype == ref_.dtype and g.dtype.kind in "fc" and np.allclose(g, ref_, rtol=1e-5, equal_nan=True)
                    if not ok:
                        status = f"MISMATCH got {g!r} ref {ref_!r} parts {got}"
        print(f"[{name}] {status}", flush=True)
        if not status.startswith("ok"): FAILS.append(name)
    comm.Barrier()

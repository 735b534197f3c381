"""The CPU state loops in a process where numba's cached type codes are wrong.

numba types a read-only or unaligned array by a fingerprint without its byte order and keeps the
first answer: after any numba function of the process was called with a byte-swapped array
(typed as a Python object), every native array of the same fingerprint is typed so too, and a
loop compiled for arrays refused it for the rest of the process.  That is one known way to the
refusal CI saw on 2026-11-26 ("No matching definition for argument type(s) array(int32, 2d, C),
readonly array(int32, 2d, C), ...", tests/dist/test_state_calls_adversarial.py); what set it off
there is not identified (no byte-swapped array reached numba in the suite's runs that were
watched).  distscan.ops.jit now checks numba's own typing of the arguments when the dispatch
refuses them.

A poisoned process is a child (the poison lasts as long as the process): it scans every case
and saves the results, which must be the bits the clean test process gets for the same cases.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="starts a process of its own; run it from a serial pytest"),
]
numba = pytest.importorskip("numba")

DTYPES = ["int8", "int32", "int64", "uint16", "float32", "float64", "complex64", "complex128"]


def poison():
    """Call a throwaway numba function with byte-swapped arrays of every fingerprint the loops'
    arguments have (ndim 1 and 2, contiguous and strided, read-only and writable)."""
    @numba.njit
    def touch(x):
        return 0

    for dt in DTYPES:
        for ndim in (1, 2):
            swapped = np.zeros((6,) * ndim, np.dtype(dt).newbyteorder(">"))
            for view in (swapped.copy(), swapped[::-2]):
                for writeable in (False, True):
                    view.flags.writeable = writeable
                    try:
                        touch(view)
                    except Exception:  # noqa: BLE001 - numba refuses them: the poison is its cache
                        pass


def _views(a):
    """``a`` as the loops may get it: writable, read-only, and a reversed read-only view."""
    ro = a.copy()
    ro.flags.writeable = False
    rev = a[::-1].copy()[::-1]
    rev.flags.writeable = False
    return {"writable": a.copy(), "read-only": ro, "reversed read-only": rev}


def cases(seed: int):
    """Every state scan the CPU loops make, by name: (name, function of no arguments)."""
    import distscan

    rng = np.random.default_rng(seed)
    out = []
    for dt in DTYPES:
        kind = np.dtype(dt).kind
        for shape in ((41,), (23, 3)):
            x = (rng.standard_normal(shape) * 9).astype(dt) if kind != "c" else (
                rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
            a = (rng.standard_normal(shape) * (1 if kind in "fc" else 3)).astype(dt)
            f = rng.random(shape[0]) < 0.2
            xs, coefficients, flags = _views(x), _views(a), _views(f)
            for vname in xs:
                xv, av, fv = xs[vname], coefficients[vname], flags[vname]
                tag = f"{dt} {shape} {vname}"
                for reverse in (False, True):
                    for exclusive in (False, True):
                        out.append((f"segmented sum {tag} reverse={reverse} exclusive={exclusive}",
                                    lambda xv=xv, fv=fv, r=reverse, e=exclusive: distscan.cumsum(
                                        xv, segments=fv, reverse=r, exclusive=e)))
                    if kind != "c":
                        out.append((f"segmented max {tag} reverse={reverse}",
                                    lambda xv=xv, fv=fv, r=reverse: distscan.cummax(xv, segments=fv, reverse=r)))
                    if kind in "fc":
                        out.append((f"recurrence {tag} reverse={reverse}",
                                    lambda xv=xv, av=av, r=reverse: distscan.linear_recurrence(av, xv, reverse=r)))
                        out.append((f"segmented recurrence {tag} reverse={reverse}",
                                    lambda xv=xv, av=av, fv=fv, r=reverse: distscan.linear_recurrence(
                                        av, xv, segments=fv, reverse=r)))
                    if kind == "f":
                        out.append((f"compensated {tag} reverse={reverse}",
                                    lambda xv=xv, r=reverse: distscan.cumsum(xv, compensated=True, reverse=r)))
                if kind in "iu":
                    out.append((f"recurrence {tag}",
                                lambda xv=xv, av=av: distscan.linear_recurrence(av, xv)))
    return out


CHILD = r"""
import sys, numpy as np
sys.path.insert(0, {root!r})
from tests.ops.test_numba_typecodes import cases, poison, refusals
poison()
errors, results = [], {{}}
for name, fn in cases({seed}):
    try:
        results[name] = np.asarray(fn())
    except Exception as e:
        errors.append(f"{{name}}: {{type(e).__name__}}: {{e}}")
np.savez({path!r}, **{{f"r{{k}}": v for k, v in enumerate(results.values())}}, names=np.array(list(results)))
errors += refusals()
print("\n".join(errors[:20]) or "ok")
"""


def refusals():
    """What distscan's refusal path must still refuse in a poisoned process: another dtype (the
    wrapped loop raises), and a byte-swapped array of the loop's dtype (the path returns no
    function; numba's own dispatch may take one, reading its bytes as native, once it has typed a
    native array of the same fingerprint: numba 0.61 did here).  A list of what went wrong."""
    from distscan.ops.jit import _dispatched_safely, _entry_if_arguments_convert

    ro_int32 = numba.types.Array(numba.int32, 1, "A", readonly=True, aligned=False)
    dispatcher = numba.njit((ro_int32,))(lambda x: x.sum())
    loop = _dispatched_safely(dispatcher)
    wrong = []
    native = np.arange(5, dtype=np.int32)
    native.flags.writeable = False
    try:
        if loop(native) != 10:
            wrong.append("a native read-only int32 array gave another sum")
    except TypeError as e:
        wrong.append(f"a native read-only int32 array was refused: {e}")
    floats = np.arange(5.0)
    floats.flags.writeable = False
    try:
        loop(floats)
        wrong.append("a loop compiled for int32 took a float64 array")
    except TypeError:
        pass
    swapped = native.astype(">i4")
    swapped.flags.writeable = False
    if _entry_if_arguments_convert(dispatcher, (swapped,)) is not None:
        wrong.append("the refusal path took a byte-swapped int32 array")
    return wrong


def test_state_loops_work_where_numba_cached_wrong_type_codes(tmp_path):
    """Every CPU state loop (segmented, reverse, exclusive, recurrence, segmented recurrence,
    compensated; one column and three; writable, read-only and reversed read-only inputs) in a
    process whose numba type codes were poisoned gives the clean process's bits, and the path
    that runs them still refuses another dtype and a byte-swapped array."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = str(tmp_path / "poisoned.npz")
    # the clean results first: the child then finds the loops in numba's disk cache
    clean = [(name, np.asarray(fn())) for name, fn in cases(2611)]
    proc = subprocess.run([sys.executable, "-c", CHILD.format(root=root, seed=2611, path=path)],
                          capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok", proc.stdout
    got = np.load(path)
    assert list(got["names"]) == [name for name, _ in clean]
    for k, (name, want) in enumerate(clean):
        have = got[f"r{k}"]
        assert have.dtype == want.dtype and have.shape == want.shape, name
        assert have.tobytes() == want.tobytes(), name

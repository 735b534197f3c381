"""Ranks that call with parts of different kinds: every call equals NumPy on the concatenation of
the parts, or raises the same exception on every rank, and no call hangs.

Hypothesis draws, for every rank on its own, the kind of its part in each of several calls in a
row: contiguous, strided, reversed and Fortran views, lists, scalars, 0-d arrays, read-only,
byte-swapped, ``np.memmap`` and masked arrays; ``out=`` (of the result dtype, byte-swapped, or of
another dtype that NumPy computes alike) and ``dtype=`` on some ranks only; operator aliases
(``"sum"``, ``"add"``, ``np.add``); empty parts beside a large one the CPU scans in chunks; and
calls that must fail (one rank's operator or axis is wrong, one rank asks for another dtype),
each followed by valid ones.  A scenario runs under ``mpiexec`` at 2, 3 and 4 ranks in a process
of its own (tests/dist/ranks_differ_worker.py) with a timeout: a hang fails the test, not the run.

The scenarios of issue 28 (one odd rank, the others contiguous, four calls each; they hung from
the second call) are an explicit example.  ``DISTSCAN_HYPOTHESIS_EXAMPLES`` sets how many
scenarios are drawn per rank count (default 4; each is one launch of about 12 calls).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.dist import ranks_differ_worker as worker  # noqa: E402
from tests.support.launch import mpi_command, python_env, require_mpiexec  # noqa: E402
from tests.support.reference import assert_scan_equal, reference_scan  # noqa: E402

WORKER = os.path.join(os.path.dirname(__file__), "ranks_differ_worker.py")
EXAMPLES = int(os.environ.get("DISTSCAN_HYPOTHESIS_EXAMPLES", "4"))
TIMEOUT_S = int(os.environ.get("DISTSCAN_RANKS_DIFFER_TIMEOUT", "120"))

KINDS = ["contiguous", "strided", "reversed", "fortran", "list", "scalar", "zero_d", "readonly", "byteswapped",
         "memmap", "masked"]
DTYPES = {"sum": ["int64", "int32", "float64", "float32", "uint8", "bool"], "prod": ["int64", "float64"],
          "max": ["int64", "float32", "int16"], "min": ["float64", "uint32"], "bitwise_xor": ["int64", "uint8"]}
# A large part the CPU backend scans in chunks (1 MiB of accumulator) when it is seeded.
LARGE = 150_001


def _spec(kind="contiguous", alias=0, out="none", dtype_kw=None, bad=None, mask_seed=0):
    return {"kind": kind, "alias": alias, "out": out, "dtype_kw": dtype_kw, "bad": bad, "mask_seed": mask_seed}


def _fit(spec, call, rank):
    """The spec a rank can really use in this call (kinds that need one element, a 1-D part, a
    dtype that a list keeps; else a contiguous array)."""
    n = call["counts"][rank]
    kind = spec["kind"]
    one = n == 1 and not call["trailing"]
    if kind == "scalar" and not (one and call["axis"] in (0, None)):
        kind = "contiguous"
    if kind == "zero_d" and not (one and call["axis"] is None):
        kind = "contiguous"
    if kind == "list" and (call["dtype"] not in ("int64", "float64", "bool")
                           or n == 0 and (call["trailing"] or call["dtype"] != "float64")):
        # a list keeps neither int32 nor, when empty, a dtype (np.array([]) is float64) or a trailing
        # shape: parts built so are refused on every rank (tests/dist/test_agree.py), not drawn here
        kind = "contiguous"
    out = spec["out"]
    if out == "cast" and call["dtype"] not in ("int64", "float64", "float32"):
        # an out of a narrower dtype makes NumPy compute in it when the input is narrower than the
        # result (np.cumsum(bool, out=int32) sums in int32): a mismatch when one rank does it
        out = "same"
    return {**spec, "kind": kind, "out": out}


@st.composite
def calls(draw, ranks, dtypes=None):
    dtypes = dtypes or DTYPES
    op = draw(st.sampled_from(sorted(dtypes)))
    dtype = draw(st.sampled_from(dtypes[op]))
    axis = draw(st.sampled_from([0, 0, 0, None]))
    trailing = draw(st.sampled_from([[], [], [3]]))
    counts = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 5, 17]), min_size=ranks, max_size=ranks))
    if draw(st.integers(0, 5)) == 0:  # an empty part beside a large, chunked one
        big = draw(st.integers(0, ranks - 1))
        counts = [LARGE if r == big else 0 for r in range(ranks)]
        trailing = []
    call = {"seed": draw(st.integers(0, 2**32 - 1)), "op": op, "dtype": dtype, "axis": axis, "trailing": trailing,
            "counts": counts, "exclusive": draw(st.booleans()),
            "initial": draw(st.sampled_from([None, None, 1])) if dtype != "bool" else None}
    specs = [_spec(draw(st.sampled_from(KINDS)), draw(st.integers(0, 3)),
                   draw(st.sampled_from(["none", "none", "same", "swapped", "cast"])),
                   draw(st.sampled_from([None, None, "result"])), None, draw(st.integers(0, 1000)))
             for _ in range(ranks)]
    failing = draw(st.integers(0, 7))
    if failing < 3:  # one rank does something that must fail on every rank
        r = draw(st.integers(0, ranks - 1))
        specs[r]["bad"] = ["op", "axis", None][failing]
        if failing == 2:
            specs[r]["dtype_kw"] = "float32" if dtype != "float32" else "float64"  # a dtype the others do not compute in
    call["specs"] = [_fit(s, call, r) for r, s in enumerate(specs)]
    return call


def scenarios(ranks):
    return st.lists(calls(ranks), min_size=10, max_size=14).map(lambda cs: {"calls": cs})


def issue_scenario(ranks):
    """Issue 28's scenarios: rank 1 odd, the others contiguous, four calls in a row each."""
    odd = [("strided", {}), ("list", {}), ("scalar", {}), ("out", {}), ("zero_d", {"axis": None}),
           ("byteswapped", {}), ("memmap", {}), ("masked", {})]
    out = []
    for seed, (kind, extra) in enumerate(odd):
        for _ in range(4):
            counts = [1 if kind in ("scalar", "zero_d") else 10] + [1 if kind in ("scalar", "zero_d") else 10] * (ranks - 1)
            if kind == "zero_d":
                counts = [0] * ranks
                counts[1] = 1
            call = {"seed": seed, "op": "sum", "dtype": "int64", "axis": extra.get("axis", 0), "trailing": [],
                    "counts": counts, "exclusive": False, "initial": None}
            specs = [_spec() for _ in range(ranks)]
            specs[1] = _spec(kind="contiguous", out="same") if kind == "out" else _spec(kind=kind, mask_seed=seed)
            call["specs"] = specs
            out.append(call)
    return {"calls": out}


def expected(call):
    """Per rank: the values it must return, or None where the call must fail on every rank."""
    specs = call["specs"]
    if any(s["bad"] for s in specs) or any(s["dtype_kw"] not in (None, "result") for s in specs):
        return None
    g = worker.global_array(call)
    parts = worker.effective_parts(g, call, specs)
    whole = np.concatenate(parts) if parts else g
    dtype = worker.result_dtype(call)
    result = []
    for r, part in enumerate(parts):
        if call["axis"] is None:
            # axis=None scans the flattened global array: the concatenation of the flattened parts
            flat = np.concatenate([p.reshape(-1) for p in parts])
            ref = reference_scan(flat, call["op"], exclusive=call["exclusive"], initial=call["initial"])
            lo = sum(p.size for p in parts[:r])
            mine = ref[lo:lo + part.size]
        else:
            ref = reference_scan(whole, call["op"], exclusive=call["exclusive"], initial=call["initial"])
            lo = sum(call["counts"][:r])
            mine = ref[lo:lo + call["counts"][r]]
        assert mine.dtype == dtype
        out_dtype = worker.make_out((0,), call, specs[r])
        if out_dtype is not None:
            with np.errstate(all="ignore"):
                mine = mine.astype(out_dtype.dtype.newbyteorder("="))
        if specs[r]["kind"] == "scalar":
            mine = mine.reshape(())
        result.append(mine)
    return result


def _summary(outcome):
    if not outcome["ok"]:
        return f"{outcome['type']}: {outcome['message'][:300]}"
    values = outcome["values"]
    return f"{outcome['dtype']} {outcome['shape']} {values[:6] if isinstance(values, list) else values}"


def run_scenario(ranks, scenario, tmp_path, worker_args=(), timeout=None):
    require_mpiexec()
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    for old in tmp_path.glob("rank-*.json"):
        old.unlink()
    cmd = mpi_command(ranks, [sys.executable, WORKER, str(path), str(tmp_path), *worker_args])
    # Open MPI's mpirun refuses root (the GPU machines) without these; MPICH ignores them.
    env = python_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout or TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        output, _ = proc.communicate()
        pytest.fail(f"hang: no end in {timeout or TIMEOUT_S} s at {ranks} ranks; last lines:\n" + "\n".join(output.splitlines()[-12:])
                    + f"\nscenario: {json.dumps(scenario)[:4000]}")
    assert proc.returncode == 0, output[-3000:]
    records = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(ranks)]
    for k, call in enumerate(scenario["calls"]):
        got = [rec[k] for rec in records]
        want = expected(call)
        where = (f"call {k} of {len(scenario['calls'])} at {ranks} ranks: {json.dumps(call)[:1500]}\n"
                 f"outcomes: {[_summary(g) for g in got]}")
        if want is None or not all(g["ok"] for g in got):
            assert not any(g["ok"] for g in got), f"some ranks returned, others raised: {where}"
            assert len({(g["type"], g["message"]) for g in got}) == 1, f"ranks raised different errors: {where}"
            assert want is None, f"a valid call raised: {where}"
            continue
        for r, (g, w) in enumerate(zip(got, want)):
            values = np.asarray(g["values"]).astype(w.dtype) if w.size else np.empty(w.shape, w.dtype)
            try:
                assert np.dtype(g["dtype"]).newbyteorder("=") == w.dtype, (g["dtype"], w.dtype)
                assert tuple(g["shape"]) == w.shape, (g["shape"], w.shape)
                assert_scan_equal(values.reshape(w.shape), w)
            except AssertionError as exc:
                raise AssertionError(f"rank {r}: {exc}\n{where}") from None


@pytest.mark.parametrize("ranks", [2, 3, 4])
@settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(data=st.data())
@example(data=None)
def test_ranks_that_call_differently(ranks, data, tmp_path_factory):
    scenario = issue_scenario(ranks) if data is None else data.draw(scenarios(ranks))
    run_scenario(ranks, scenario, tmp_path_factory.mktemp(f"np{ranks}"))

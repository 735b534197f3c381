"""The command's scans of issue 30 end to end: ``--reverse``, ``--segments FLAGS.npy``,
``--compensated``, the NaN-aware and other new ``--op`` names (with ``--verify``), and
``distscan recurrence A.npy B.npy``, at 1 rank (in-process) and at 2, 3 and 8 ranks (one mpiexec
job per rank count, ``_mpi_run.CliBatches``; 8 ranks oversubscribed), against sequential
references: integers exactly, floats within stated bounds, in the chunked pipeline's resident and
streamed modes (``--memory-limit``: a part far larger than the budget is read twice, not refused).
Failures end with one line, the same non-zero status on every rank, and no output left behind
(a read of the segment flags that fails on the last rank alone, too).
"""

import contextlib
import io
import os

import numpy as np
import pytest

from tests.support.launch import CliBatches
from tests.support.reference import recurrence_reference, segmented_reference
from distscan import cli
from distscan.pipeline import default_output

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]

N = 20_011  # rows: uneven blocks at 2 and 3 ranks


def _data(folder, seed):
    """The inputs of every case (seeded by the rank count), saved into ``folder`` when given."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(-50, 50, (N, 3)).astype(np.int32)
    flags = rng.random(N) < 0.002
    a = rng.uniform(-1, 1, N)
    b = rng.standard_normal(N)
    exact = (rng.integers(-2**20, 2**20, N) * 2.0**-10).astype(np.float32)  # sums exact in float64
    nans = rng.standard_normal(N)
    nans[rng.random(N) < 0.1] = np.nan
    g = rng.integers(-60, 60, N)
    for name, arr in [("ints", ints), ("flags", flags), ("a", a), ("b", b), ("exact", exact), ("nans", nans),
                      ("g", g), ("plus", 1.0 + np.abs(nans)), ("short", flags[:-1]), ("a2", np.stack([a, a], 1))]:
        if folder is not None:
            np.save(folder / f"{name}.npy", arr)
    return dict(ints=ints, flags=flags, a=a, b=b, exact=exact, nans=nans, g=g)


# (key, argv after the files are made, output file name, check(data, result))
def _check_reverse(d, y):
    np.testing.assert_array_equal(y, np.cumsum(d["ints"][::-1], axis=0, dtype=np.int64)[::-1])


def _check_seg_exclusive_max(d, y):
    np.testing.assert_array_equal(y, segmented_reference(d["ints"], d["flags"], "max", exclusive=True))


def _check_reverse_seg_sum(d, y):
    np.testing.assert_array_equal(y, segmented_reference(d["ints"], d["flags"], "sum", reverse=True, dtype=np.int64))


def _check_recurrence(d, y):
    ref = recurrence_reference(d["a"], d["b"], initial=2.0, segments=d["flags"], reverse=True)
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-12 * (np.abs(ref).max() + 1))


def _check_compensated(d, y):
    exact = np.cumsum(d["exact"].astype(np.float64))  # exact: multiples of 2^-10 below 2^35
    rounded = exact.astype(np.float32)
    ulp = np.spacing(np.abs(rounded))
    assert np.all(np.abs(y.astype(np.float64) - rounded) <= 2 * ulp), np.max(np.abs(y - rounded) / ulp)


def _check_nansum(d, y):
    ref = np.nancumsum(d["nans"])
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-12 * (np.nansum(np.abs(d["nans"])) + 1))


def _check_nansum_int(d, y):
    np.testing.assert_array_equal(y, np.nancumsum(d["nans"], dtype=np.int64))


def _check_nanprod_int_rev_seg_excl(d, y):
    # NaN read as the identity before the conversion to int32 (not INT32_MIN); 1 + |x| truncated
    # is 1 to 4, so the products of a run wrap as NumPy's int32 arithmetic does
    x = np.where(np.isnan(d["nans"]), 1.0, 1.0 + np.abs(d["nans"])).astype(np.int32)
    with np.errstate(over="ignore"):
        ref = segmented_reference(x, d["flags"], "prod", exclusive=True, reverse=True, dtype=np.int32)
    np.testing.assert_array_equal(y, ref)


def _check_logaddexp(d, y):
    np.testing.assert_allclose(y, np.logaddexp.accumulate(d["nans"]), rtol=1e-12, equal_nan=True)


def _check_gcd(d, y):
    np.testing.assert_array_equal(y, np.gcd.accumulate(d["g"]))


GOOD = [
    ("reverse", ["ints.npy", "--reverse"], "ints.reverse-cumsum.npy", _check_reverse),
    ("seg_excl_max", ["ints.npy", "--segments", "flags.npy", "--exclusive", "--op", "max"],
     "ints.exclusive-segmented-cummax.npy", _check_seg_exclusive_max),
    ("rev_seg_sum", ["ints.npy", "--segments", "flags.npy", "--reverse", "--dtype", "int64"],
     "ints.reverse-segmented-cumsum.npy", _check_reverse_seg_sum),
    ("recurrence", ["recurrence", "a.npy", "b.npy", "--initial", "2", "--segments", "flags.npy", "--reverse"],
     "b.reverse-segmented-recurrence.npy", _check_recurrence),
    ("compensated", ["exact.npy", "--compensated", "--verify"], "exact.compensated-cumsum.npy", _check_compensated),
    # parts far larger than a 4 KB budget: streamed (the flags and coefficients read twice too)
    ("streamed_rev_seg_sum", ["ints.npy", "--segments", "flags.npy", "--reverse", "--dtype", "int64",
                              "--memory-limit", "4K"], "ints.reverse-segmented-cumsum.npy", _check_reverse_seg_sum),
    ("streamed_recurrence", ["recurrence", "a.npy", "b.npy", "--initial", "2", "--segments", "flags.npy",
                             "--reverse", "--memory-limit", "4K"], "b.reverse-segmented-recurrence.npy",
     _check_recurrence),
    ("streamed_compensated", ["exact.npy", "--compensated", "--memory-limit", "4K"], "exact.compensated-cumsum.npy",
     _check_compensated),
    ("nansum", ["nans.npy", "--op", "nansum", "--verify"], "nans.scan-nansum.npy", _check_nansum),
    # NaN into an integer --dtype: the identity first, as numpy.nancumsum (was INT_MIN, 2026-11-26)
    ("nansum_int", ["nans.npy", "--op", "nansum", "--dtype", "int64", "--verify"], "nans.scan-nansum.npy",
     _check_nansum_int),
    ("streamed_nansum_int", ["nans.npy", "--op", "nansum", "--dtype", "int64", "--memory-limit", "4K"],
     "nans.scan-nansum.npy", _check_nansum_int),
    ("nanprod_int_rev_seg", ["plus.npy", "--op", "nanprod", "--dtype", "int32", "--segments", "flags.npy",
                             "--reverse", "--exclusive"], "plus.reverse-exclusive-segmented-scan-nanprod.npy",
     _check_nanprod_int_rev_seg_excl),
    ("logaddexp", ["nans.npy", "--op", "logaddexp"], "nans.scan-logaddexp.npy", _check_logaddexp),
    ("gcd", ["g.npy", "--op", "gcd", "--verify"], "g.scan-gcd.npy", _check_gcd),
]

BAD = [
    ("short_flags", ["ints.npy", "--segments", "short.npy"], "one flag (bool or integer) per row"),
    ("shapes", ["recurrence", "a2.npy", "b.npy"], "must be the same"),
    ("verify_reverse", ["ints.npy", "--reverse", "--verify"], "does not check --reverse"),
    ("compensated_ints", ["ints.npy", "--compensated"], "compensated"),
]


def _argv(folder, words):
    return [str(folder / w) if w.endswith(".npy") else w for w in words]


# The last rank's reads of the segment flags fail (the others read theirs): agreed on every rank.
FLAGS_READ_FAILS = """
import distscan.pipeline.files as files
if rank == size - 1:
    def read_aux(self, *a, **k):
        raise OSError("injected: flags unreadable")
    patch(files.Files, "read_aux", read_aux)
"""
FLAGS_FAIL_WORDS = ["ints.npy", "--segments", "flags.npy", "--reverse"]


@pytest.fixture(scope="module")
def op_batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory, timeout=300)
    for ranks in (2, 3, 8):
        for key, words, *_ in GOOD + BAD:
            def prepare(folder, words=words, ranks=ranks):
                _data(folder, ranks)
                return _argv(folder, words) + ["--quiet"], {}
            b.add(ranks, key, prepare)

        def failing(folder, ranks=ranks):
            _data(folder, ranks)
            return _argv(folder, FLAGS_FAIL_WORDS) + ["--quiet"], {"setup": FLAGS_READ_FAILS}
        b.add(ranks, "flags_read_fails", failing)
    return b


def _one_rank(tmp_path, words):
    _data(tmp_path, 1)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(_argv(tmp_path, words) + ["--quiet"])
    return tmp_path, code, err.getvalue()


def _outputs(folder):
    return sorted(f for f in os.listdir(folder) if f.count(".") > 1 or f.endswith(".part"))


@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
@pytest.mark.parametrize("key,words,name,check", GOOD, ids=[g[0] for g in GOOD])
def test_scans_of_issue_30_match_references(tmp_path, op_batches, ranks, key, words, name, check):
    if ranks == 1:
        folder, code, err = _one_rank(tmp_path, words)
    else:
        folder, proc, _ = op_batches.get(ranks, key)
        code, err = proc.returncode, proc.stderr
    assert code == 0, err
    check(_data(None, ranks), np.load(folder / name))


@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
@pytest.mark.parametrize("key,words,message", BAD, ids=[b[0] for b in BAD])
def test_bad_combinations_fail_cleanly(tmp_path, op_batches, ranks, key, words, message):
    if ranks == 1:
        folder, code, err = _one_rank(tmp_path, words)
    else:
        folder, proc, _ = op_batches.get(ranks, key)
        code, err = proc.returncode, proc.stderr
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.startswith("distscan: error")]
    assert len(lines) == 1 and message in lines[0], err  # rank 0 speaks for every rank
    assert _outputs(folder) == [], _outputs(folder)  # nothing published, no temporary file


@pytest.mark.parametrize("ranks", [2, 3, 8])
def test_a_flags_read_failing_on_one_rank_fails_every_rank(op_batches, ranks):
    folder, proc, _ = op_batches.get(ranks, "flags_read_fails")
    assert proc.returncode == 1 and set(proc.codes) == {1}, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("distscan: error")]
    assert len(lines) == 1 and f"rank {ranks - 1}" in lines[0] and "injected: flags unreadable" in lines[0], \
        proc.stderr
    assert _outputs(folder) == [], _outputs(folder)


def test_default_output_names_of_the_new_scans():
    assert default_output("d/x.npy", "sum", reverse=True) == "d/x.reverse-cumsum.npy"
    assert default_output("x.npy", "max", True, segmented=True) == "x.exclusive-segmented-cummax.npy"
    assert default_output("x.npy", "sum", compensated=True) == "x.compensated-cumsum.npy"
    assert default_output("b.npy", "sum", recurrence=True, reverse=True) == "b.reverse-recurrence.npy"
    assert default_output("x.npy", "nansum") == "x.scan-nansum.npy"


def test_recurrence_help_names_its_form(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.args.build_recurrence_parser().parse_args(["--help"])
    assert exc.value.code == 0
    assert "y[i] = a[i] * y[i-1] + b[i]" in capsys.readouterr().out
    assert cli.main(["recurrence", "--help"]) == 0  # the command's own form
    assert "distscan recurrence" in capsys.readouterr().out

"""Shared fixtures: the communicator under test, seeded random data, temporary folders, GPU detection.

The same test files run serially (``pytest``) and under ``mpiexec -n K python -m
pytest --with-mpi -m anyranks`` (tests/run.sh); ``comm`` is then a duplicate of
``COMM_WORLD`` so that a test cannot disturb another.  Test files written for any
rank count carry ``pytestmark = pytest.mark.anyranks`` (the marker, not the file
name, selects what tests/run.sh runs under mpiexec).  Tests that need several ranks
are also marked ``@pytest.mark.mpi(min_size=2)`` (pytest-mpi skips them otherwise).

Under mpiexec (a launcher's rank variable is set):

* every line of pytest's own output starts with ``[rank N] `` (whole lines, so the
  ranks' output does not interleave inside a line);
* ``--basetemp DIR`` becomes ``DIR/rank-N`` on rank N (pytest empties the folder it is
  given at start-up: a folder shared by the ranks would be emptied under the others);
  without ``--basetemp`` each rank gets ``<tmp>/distscan-tests-<uid>/mpi-<launcher pid>/rank-N``.

Random data comes from the ``rng`` fixture (or ``shared_rng(comm)``): a fresh seed per
test, the same on every rank (rank 0's), or ``DISTSCAN_TEST_SEED`` when set; a failing
test's report has a "random seed" section with the seed and the command that repeats it.
"""

import os
import tempfile

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import get_op

try:
    from mpi4py import MPI
except ImportError:  # pragma: no cover - the test extra installs mpi4py
    MPI = None


# -- running under a launcher --------------------------------------------------------------------------

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")  # MPICH (hydra), Open MPI, PMIx launchers


def launcher_rank():
    """This process's rank from the launcher's environment, or None when not started by mpiexec."""
    for name in _RANK_VARS:
        v = os.environ.get(name, "")
        if v.isdigit():
            return int(v)
    return None


UNDER_MPIEXEC = launcher_rank() is not None


class _RankLines:
    """A file wrapper that writes whole lines only, each starting with ``[rank N] ``."""

    def __init__(self, f, rank):
        self._f, self._prefix, self._buf = f, f"[rank {rank}] ", ""

    def write(self, text):
        self._buf += text
        if "\n" in self._buf:
            done, self._buf = self._buf.rsplit("\n", 1)
            self._f.write("".join(self._prefix + line + "\n" for line in done.split("\n")))
            self._f.flush()
        return len(text)

    def flush(self):  # a partial line waits for its end (or for close_line at exit)
        pass

    def close_line(self):
        if self._buf:
            self._f.write(self._prefix + self._buf + "\n")
            self._buf = ""
        self._f.flush()

    def __getattr__(self, name):
        return getattr(self._f, name)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    rank = launcher_rank()
    if rank is None:
        return
    # Per-rank temporary folders (read by pytest's tmp_path factory, configured after this hook).
    base = config.option.basetemp
    if base:
        config.option.basetemp = os.path.join(str(base), f"rank-{rank}")
    else:
        job = f"mpi-{os.getppid()}"  # the launcher's proxy: the same for the ranks of one job on a node
        root = os.path.join(tempfile.gettempdir(), f"distscan-tests-{os.getuid() if hasattr(os, 'getuid') else 0}")
        config.option.basetemp = os.path.join(root, job, f"rank-{rank}")
        config._distscan_own_basetemp = True
    # pytest creates the folder itself (emptying it first), but not its parents.
    os.makedirs(os.path.dirname(os.path.abspath(config.option.basetemp)), exist_ok=True)


def pytest_sessionfinish(session, exitstatus):
    """Under mpiexec without --basetemp: a passing rank removes its folder (a failing one keeps it)."""
    config = session.config
    if launcher_rank() is None or exitstatus != 0 or not getattr(config, "_distscan_own_basetemp", False):
        return
    import shutil
    shutil.rmtree(config.option.basetemp, ignore_errors=True)
    try:
        os.rmdir(os.path.dirname(config.option.basetemp))  # the job's folder, once every rank has left it
    except OSError:
        pass


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    tw = config.get_terminal_writer() if config.pluginmanager.has_plugin("terminalreporter") else None
    f = getattr(tw, "_file", None)
    if isinstance(f, _RankLines):
        f.close_line()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Under mpiexec, prefix pytest's output lines with the rank (terminal reporter configured by now)."""
    rank = launcher_rank()
    if rank is None or not session.config.pluginmanager.has_plugin("terminalreporter"):
        return
    tw = session.config.get_terminal_writer()
    if hasattr(tw, "_file") and not isinstance(tw._file, _RankLines):
        tw._file = _RankLines(tw._file, rank)


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU"
        return False


HAVE_GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def require_gpu():
    """CuPy, or skip the calling test module: no CuPy, no driver or no device."""
    cp = pytest.importorskip("cupy")
    if not HAVE_GPU:
        pytest.skip("needs a CUDA GPU", allow_module_level=True)
    return cp


# -- seeded random data ----------------------------------------------------------------------------------

SEED_ENV = "DISTSCAN_TEST_SEED"
_SEEDS = pytest.StashKey[list]()
_CURRENT = {"item": None}
_SEED_COMM = {}


def _seed_comm():
    """A private duplicate of COMM_WORLD for seed broadcasts (None when serial or without mpi4py)."""
    if MPI is None or not MPI.Is_initialized() or MPI.COMM_WORLD.Get_size() == 1:
        return None
    if "comm" not in _SEED_COMM:
        _SEED_COMM["comm"] = MPI.COMM_WORLD.Dup()
    return _SEED_COMM["comm"]


def draw_seed(comm=None):
    """``DISTSCAN_TEST_SEED`` or a fresh seed; rank 0's on every rank of ``comm``; recorded for the report."""
    env = os.environ.get(SEED_ENV, "").strip()
    seed = int(env) if env else int(np.random.SeedSequence().entropy % (1 << 63))
    if comm is not None and comm.Get_size() > 1:
        seed = comm.bcast(seed, root=0)
    item = _CURRENT["item"]
    if item is not None:
        item.stash.setdefault(_SEEDS, []).append(seed)
    return seed


def shared_rng(comm):
    """A generator seeded alike on every rank of ``comm`` (rank 0's seed, or DISTSCAN_TEST_SEED)."""
    seed = draw_seed(comm)
    print(f"seed={seed}")
    return np.random.default_rng(seed)


@pytest.fixture
def rng():
    """A NumPy generator from a fresh seed (or DISTSCAN_TEST_SEED), the same on every rank under mpiexec.

    The seed is printed in the report of a failing test, with the command that repeats it.
    """
    return np.random.default_rng(draw_seed(_seed_comm()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _CURRENT["item"] = item
    try:
        yield
    finally:
        _CURRENT["item"] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    seeds = item.stash.get(_SEEDS, [])
    if seeds and report.failed:
        text = ", ".join(map(str, seeds))
        report.sections.append(("random seed", f"seed {text}; repeat with: {SEED_ENV}={seeds[0]} "
                                               f"python -m pytest '{item.nodeid}'"))
    if seeds and call.when == "call":
        item.user_properties.append(("seed", seeds[0] if len(seeds) == 1 else seeds))


# -- temporary folders ------------------------------------------------------------------------------------

@pytest.fixture
def rank_tmp_path(tmp_path):
    """This rank's own folder (under mpiexec, the per-rank basetemp set above keeps ranks apart)."""
    return tmp_path


@pytest.fixture
def shared_tmp_path(tmp_path):
    """One folder that every rank sees: rank 0's ``tmp_path``, broadcast (``tmp_path`` when serial).

    Ranks meet before the test (the folder exists) and after it (no rank removes or reuses it early).
    """
    comm = _seed_comm()
    if comm is None:
        yield tmp_path
        return
    from pathlib import Path
    folder = Path(comm.bcast(str(tmp_path / "shared") if comm.Get_rank() == 0 else None, root=0))
    if comm.Get_rank() == 0:
        folder.mkdir()
    comm.Barrier()
    yield folder
    comm.Barrier()


def all_ranks_ok(comm, check):
    """Run ``check()`` on every rank; fail on every rank if it failed on any."""
    error = None
    try:
        check()
    except AssertionError as exc:
        error = exc
    failed = comm.allgather(None if error is None else str(error))
    bad = [(r, m) for r, m in enumerate(failed) if m is not None]
    assert not bad, "\n".join(f"rank {r}: {m}" for r, m in bad)


@pytest.fixture
def comm():
    if MPI is None:
        pytest.skip("mpi4py is not installed")
    c = MPI.COMM_WORLD.Dup()
    yield c
    c.Free()


def reference_scan(g, op, *, exclusive=False, initial=None, dtype=None):
    """NumPy's scan of the whole (global) array ``g`` along axis 0, the way distscan defines it."""
    op = get_op(op)
    types = scan_types(op, g.dtype, dtype)
    acc = g.astype(types.acc) if not op.logical else (g != 0)
    if initial is not None:
        init = np.broadcast_to(np.asarray(initial).astype(types.acc), (1,) + g.shape[1:])
        acc = np.concatenate([init, acc])
    if acc.shape[0] == 0:
        return np.empty(g.shape, types.result)
    ref = op.ufunc.accumulate(acc, axis=0, dtype=types.acc)
    if initial is not None:
        ref = ref[:-1] if exclusive else ref[1:]
    elif exclusive:
        first = np.full((1,) + g.shape[1:], op.identity(types.acc), types.acc)
        ref = np.concatenate([first, ref[:-1]])
    return ref.astype(types.result)


def random_array(rng, n, dtype, trailing=()):
    """Fresh random data of ``dtype`` (never zeros only), small enough values for float checks."""
    dtype = np.dtype(dtype)
    shape = (n,) + tuple(trailing)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def assert_scan_equal(result, expected, *, float_rtol=None):
    """Integers and bool exactly; floats within a bound relative to the running magnitude."""
    result = np.asarray(result)
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(result, expected)
        return
    if float_rtol is None:
        float_rtol = {2: 2e-2, 4: 1e-4, 8: 1e-10, 16: 1e-10}[expected.dtype.itemsize if expected.dtype.kind == "f"
                                                           else expected.dtype.itemsize // 2]
    np.testing.assert_allclose(result.astype(np.complex128), expected.astype(np.complex128),
                               rtol=float_rtol, atol=float_rtol * max(1.0, float(np.sqrt(expected.shape[0] if expected.ndim else 1))),
                               equal_nan=True)


def block_counts(n, size):
    """Balanced split of n rows over size ranks (parts differ by at most one)."""
    base, extra = divmod(n, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def local_part(g, counts, rank):
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    return g[starts[rank]:starts[rank + 1]]

"""Fixtures and pytest hooks (what tests share besides fixtures is in tests/support).

The same test files run serially (``pytest``) and under ``mpiexec -n K python -m
pytest --with-mpi -m anyranks`` (tests/run.sh); ``comm`` is then a duplicate of
``COMM_WORLD`` so that a test cannot disturb another.  The markers (pyproject.toml lists
them; ``--strict-markers`` makes a misspelt one an error):

``anyranks``   written for any rank count: runs serially and under mpiexec.  Test files
               written so carry ``pytestmark = pytest.mark.anyranks``; the marker, not the
               file name, selects what tests/run.sh runs under mpiexec, every such test at
               2, 3 and 4 ranks.
``manyranks``  an ``anyranks`` test that stresses the carry combination (many ranks, uneven
               and empty parts, more ranks than rows, the node hierarchy, the exchanges, carries
               of reverse and segmented scans and of recurrences, a failure on one rank of
               many): tests/run.sh runs only these at 8 ranks
               (``-m "anyranks and manyranks"``), which need not repeat every case of the
               smaller counts.  A test marked ``manyranks`` without ``anyranks`` is an error.
``mpi``        (pytest-mpi) ``@pytest.mark.mpi(min_size=2)``: needs several ranks; skipped
               otherwise.
``gpu``        needs a CUDA GPU with CuPy; skipped without one.

Under mpiexec (a launcher's rank variable is set):

* every line of pytest's own output starts with ``[rank N] `` (whole lines, so the
  ranks' output does not interleave inside a line);
* ``--basetemp DIR`` becomes ``DIR/rank-N`` on rank N (pytest empties the folder it is
  given at start-up: a folder shared by the ranks would be emptied under the others);
  without ``--basetemp`` each rank gets ``<tmp>/distscan-tests-<uid>/mpi-<launcher pid>/rank-N``.

Random data comes from the ``rng`` fixture (or ``tests.support.seeds.shared_rng(comm)``): a fresh
seed per test, the same on every rank (rank 0's), or ``DISTSCAN_TEST_SEED`` when set; a failing
test's report has a "random seed" section with the seed and the command that repeats it.
"""

import os
import tempfile

import numpy as np
import pytest

from tests.support import seeds
from tests.support.devices import HAVE_GPU
from tests.support.ranks import launcher_rank
from tests.support.two_modes import Ctx

try:
    from mpi4py import MPI
except ImportError:  # pragma: no cover - the test extra installs mpi4py
    MPI = None


# -- running under a launcher --------------------------------------------------------------------------

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


def _hypothesis_draws_alike_on_every_rank():
    """Hypothesis (6.131 on) mixes into its draws the constants of the project's modules loaded so
    far (``providers._get_local_constants``), and ranks import different modules (lazy imports of a
    kind of call that one rank made): a derandomized test then drew other examples on other ranks,
    and their calls met as mismatched collectives (CI, 2026-11-27: "reverse differs across ranks"
    in tests/dist/test_ranks_differ_options.py after tests/dist/test_mixed_calls_per_rank.py).
    Under a launcher the local constants are none, so a test's draws depend on its seed alone."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - the test extra installs hypothesis
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        none = providers.Constants()
        providers._get_local_constants = lambda: none


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    rank = launcher_rank()
    if rank is None:
        return
    _hypothesis_draws_alike_on_every_rank()
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


def pytest_collection_modifyitems(config, items):
    loose = [item.nodeid for item in items if item.get_closest_marker("manyranks")
             and not item.get_closest_marker("anyranks")]
    if loose:
        raise pytest.UsageError("marked manyranks but not anyranks (a subset of anyranks: see tests/conftest.py): "
                                + ", ".join(loose[:5]))
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# -- seeded random data ----------------------------------------------------------------------------------

@pytest.fixture
def rng():
    """A NumPy generator from a fresh seed (or DISTSCAN_TEST_SEED), the same on every rank under mpiexec.

    The seed is printed in the report of a failing test, with the command that repeats it.
    """
    return np.random.default_rng(seeds.draw_seed(seeds.seed_comm()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    seeds.running(item)
    try:
        yield
    finally:
        seeds.running(None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    drawn = item.stash.get(seeds.SEEDS, [])
    if drawn and report.failed:
        text = ", ".join(map(str, drawn))
        report.sections.append(("random seed", f"seed {text}; repeat with: {seeds.SEED_ENV}={drawn[0]} "
                                               f"python -m pytest '{item.nodeid}'"))
    if drawn and call.when == "call":
        item.user_properties.append(("seed", drawn[0] if len(drawn) == 1 else drawn))


# -- temporary folders ------------------------------------------------------------------------------------

@pytest.fixture
def plan_runs(monkeypatch):
    """How many ``ScanPlan.run`` calls the API makes (none on a warm one-rank call that the lean route,
    ``ScanPlan.one_rank_state``, takes); the call kinds are forgotten first."""
    from distscan._kinds import KINDS
    from distscan.dist.plan import ScanPlan
    made = []
    real = ScanPlan.run

    def counting(self, *args, **kwargs):
        made.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ScanPlan, "run", counting)
    KINDS.clear()
    return made


@pytest.fixture
def rank_tmp_path(tmp_path):
    """This rank's own folder (under mpiexec, the per-rank basetemp set above keeps ranks apart)."""
    return tmp_path


@pytest.fixture
def shared_tmp_path(tmp_path):
    """One folder that every rank sees: rank 0's ``tmp_path``, broadcast (``tmp_path`` when serial).

    Ranks meet before the test (the folder exists) and after it (no rank removes or reuses it early).
    """
    comm = seeds.seed_comm()
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


# -- the communicator under test ---------------------------------------------------------------------------

@pytest.fixture
def comm():
    if MPI is None:
        pytest.skip("mpi4py is not installed")
    c = MPI.COMM_WORLD.Dup()
    yield c
    c.Free()


@pytest.fixture(params=[pytest.param("serial", id="serial"),
                        pytest.param("dist", id="dist", marks=pytest.mark.mpi)])
def ctx(request):
    """One test in two modes (tests.support.two_modes): ``serial`` on COMM_SELF, ``dist`` over COMM_WORLD."""
    distributed = request.param == "dist"
    comm = MPI.COMM_WORLD.Dup() if distributed else MPI.COMM_SELF
    seed = seeds.draw_seed(comm if distributed else None)
    print(f"seed={seed} ({seeds.SEED_ENV}={seed} repeats this run), mode={request.param}, ranks={comm.Get_size()}")
    yield Ctx(comm, distributed, seed)
    if distributed:
        comm.Free()

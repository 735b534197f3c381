"""Helpers for tests that launch programs under ``mpiexec`` (shared by the test files).

``find_mpiexec()`` looks next to ``sys.executable`` first (the virtual environment's
``bin``, where the ``mpich`` wheel puts its launcher), then on ``PATH``.
``mpi_command(n, args)`` builds the launch line (``--oversubscribe`` for Open MPI;
MPICH's hydra oversubscribes by itself).  ``run(cmd, timeout=...)`` runs it in its
own process group and kills the whole group on timeout, failing the test: a hang
is a failure, never a stuck CI job.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_LAUNCHERS = ("mpiexec", "mpirun")


def find_mpiexec():
    """Path of an MPI launcher, or None: beside ``sys.executable`` first, then on ``PATH``."""
    here = Path(sys.executable).parent
    for name in _LAUNCHERS:
        candidate = here / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in _LAUNCHERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_mpiexec() -> str:
    """The launcher, or skip the test with the reason."""
    import pytest

    launcher = find_mpiexec()
    if launcher is None:
        pytest.skip(f"no mpiexec/mpirun next to {sys.executable} or on PATH (pip install mpich)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed")
    return launcher


_FLAVOR = {}


def _is_open_mpi(launcher: str) -> bool:
    if launcher not in _FLAVOR:
        try:
            out = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _FLAVOR[launcher] = "Open MPI" in out or "OpenRTE" in out
    return _FLAVOR[launcher]


def mpi_command(n: int, args, launcher=None) -> list:
    """``[mpiexec, -n, n, *args]`` (with ``--oversubscribe`` under Open MPI)."""
    launcher = launcher or require_mpiexec()
    extra = ["--oversubscribe"] if _is_open_mpi(launcher) else []
    return [launcher, *extra, "-n", str(n), *map(str, args)]


def python_env(**extra) -> dict:
    """The environment with the repository first on ``PYTHONPATH`` (the package need not be installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(cmd, *, timeout: float = 60, env=None, cwd=None) -> subprocess.CompletedProcess:
    """Run ``cmd``, capturing text output; on timeout kill its process group and fail the test."""
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env if env is not None else python_env(), cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        import pytest

        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        pytest.fail(f"hung: {' '.join(map(str, cmd))} did not finish within {timeout} s\n"
                    f"stdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_mpi(n: int, args, *, timeout: float = 60, env=None, cwd=None) -> subprocess.CompletedProcess:
    """``run(mpi_command(n, args))``."""
    return run(mpi_command(n, args), timeout=timeout, env=env, cwd=cwd)


# -- several command lines in one mpiexec job ---------------------------------------------------------
#
# Starting mpiexec, the interpreters and MPI costs far more than a small scan.  ``CliBatches``
# runs every ``distscan`` command line registered for one rank count in ONE mpiexec job: each
# rank calls ``distscan.cli.main(argv)`` for each job in turn (a barrier between jobs), with
# that job's environment variables and optional monkeypatches (``setup`` source) applied and
# then undone, and its file descriptors 1 and 2 redirected to files, so everything the job
# prints (Python or the MPI library) is captured per rank.  Each job's result has
# ``returncode`` (the largest of the ranks'), ``codes`` (every rank's), ``stdout`` and
# ``stderr`` (the ranks' output in rank order) and ``seconds`` (the slowest rank's).

_DRIVER_HELP = "python tests/support/launch.py cli-batch JOBS.json   (under mpiexec; see CliBatches)"


class _Patches:
    """``patch(obj, name, value)`` for a job's setup source; undone after the job."""

    def __init__(self):
        self._undo = []

    def __call__(self, obj, name, value):
        self._undo.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def undo(self):
        while self._undo:
            obj, name, old = self._undo.pop()
            setattr(obj, name, old)


def _driver(jobs_file: str) -> int:
    import json
    import time
    import traceback

    from mpi4py import MPI

    from distscan import cli

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    with open(jobs_file) as f:
        jobs = json.load(f)
    for i, job in enumerate(jobs):
        world.Barrier()
        base = f"{job['capture']}.rank{rank}"
        saved_env = {k: os.environ.get(k) for k in job.get("env", {})}
        os.environ.update(job.get("env", {}))
        patches = _Patches()
        cwd = os.getcwd()
        sys.stdout.flush()
        sys.stderr.flush()
        saved_fds = os.dup(1), os.dup(2)
        out, err = os.open(base + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), \
            os.open(base + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        t0 = time.monotonic()
        try:
            if job.get("cwd"):
                os.chdir(job["cwd"])
            if job.get("setup"):
                exec(job["setup"], {"patch": patches, "rank": rank, "size": size, "__name__": "setup"})
            code = cli.main(job["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - what the interpreter would print, and its exit status
            sys.stderr.write(traceback.format_exc())
            code = 1
        seconds = time.monotonic() - t0
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in (out, err, *saved_fds):
            os.close(fd)
        os.chdir(cwd)
        patches.undo()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        with open(base + ".json", "w") as f:
            json.dump({"code": code, "seconds": seconds}, f)
    world.Barrier()
    return 0


class BatchResult(subprocess.CompletedProcess):
    """One job's outcome: ``returncode`` (the largest of the ranks'), ``codes``, ``stdout``, ``stderr``, ``seconds``."""

    def __init__(self, args, codes, stdout, stderr, seconds):
        super().__init__(args, max(codes), stdout, stderr)
        self.codes, self.seconds = codes, seconds


class CliBatches:
    """Command lines registered per rank count, run in one mpiexec job per rank count on first use.

    ``add(ranks, key, prepare)`` registers a job: ``prepare(folder)`` (called in a folder of its own
    just before the launch) returns ``(argv, options)``; options may hold ``env`` (variables for
    that job), ``setup`` (Python source run first on every rank, with ``patch(obj, name, value)``,
    ``rank`` and ``size``), ``cwd``, ``after`` (a function called once the whole batch has run)
    and anything else, returned to the test.  ``get(ranks, key)`` returns
    ``(folder, result, options)`` with ``options["before"]``, the folder's files and sizes before
    the launch.
    """

    def __init__(self, tmp_path_factory, timeout: float = 150):
        self._factory, self._timeout = tmp_path_factory, timeout
        self._jobs, self._results = {}, {}

    def add(self, ranks: int, key, prepare):
        self._jobs.setdefault(ranks, {})[key] = prepare

    def get(self, ranks: int, key):
        if ranks not in self._results:
            try:
                self._results[ranks] = self._run(ranks)
            except BaseException as exc:  # the tests that ask again fail at once, with the same message
                self._results[ranks] = exc
                raise
        if isinstance(self._results[ranks], BaseException):
            import pytest

            pytest.fail(f"the batch on {ranks} ranks failed (see the first test that asked for it): "
                        f"{self._results[ranks]}")
        return self._results[ranks][key]

    def _run(self, ranks):
        import json

        top = self._factory.mktemp(f"batch{ranks}")
        keys, jobs, options = [], [], []
        for n, (key, prepare) in enumerate(self._jobs[ranks].items()):
            folder = top / f"job{n}"
            folder.mkdir()
            argv, opts = prepare(folder)
            opts = dict(opts or {})
            opts["before"] = files_and_sizes(folder)
            keys.append(key)
            options.append(opts)
            jobs.append({"folder": str(folder), "capture": str(top / f"job{n}"), "argv": [str(a) for a in argv], "cwd": opts.get("cwd") and str(opts["cwd"]),
                         "env": {k: str(v) for k, v in opts.get("env", {}).items()}, "setup": opts.get("setup")})
        spec = top / "jobs.json"
        spec.write_text(json.dumps(jobs))
        t0 = __import__("time").monotonic()
        proc = run(mpi_command(ranks, [sys.executable, __file__, "cli-batch", spec]),
                   timeout=min(self._timeout, 60 + 2 * len(jobs)))
        wall = __import__("time").monotonic() - t0
        for opts in options:
            if opts.get("after"):
                opts["after"]()
        if proc.returncode != 0 or proc.stdout or proc.stderr:
            import pytest

            done = [os.path.exists(f"{job['capture']}.rank0.json") for job in jobs]
            stuck = f"; it stopped in job {done.index(False)}: {jobs[done.index(False)]['argv']}" if not all(done) else ""
            pytest.fail(f"the batch of {len(jobs)} command lines on {ranks} ranks failed (exit {proc.returncode})"
                        f"{stuck}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        results = {}
        for key, job, opts in zip(keys, jobs, options):
            outs, errs, codes, secs = [], [], [], []
            for r in range(ranks):
                base = f"{job['capture']}.rank{r}"
                with open(base + ".json") as f:
                    res = json.load(f)
                codes.append(res["code"])
                secs.append(res["seconds"])
                for suffix, acc in ((".out", outs), (".err", errs)):
                    with open(base + suffix) as f:
                        acc.append(f.read())
            opts["batch_seconds"] = wall
            results[key] = (Path(job["folder"]), BatchResult(job["argv"], codes, "".join(outs), "".join(errs),
                                                             max(secs)), opts)
        return results


def files_and_sizes(folder) -> dict:
    """``{path: size}`` of the regular files under ``folder``."""
    found = {}
    for root, dirs, names in os.walk(str(folder)):
        for name in names:
            p = os.path.join(root, name)
            if os.path.isfile(p):
                found[p] = os.path.getsize(p)
    return found


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "cli-batch":
        sys.path[0] = str(REPO)  # the repository, not tests/support, is where imports start
        raise SystemExit(_driver(sys.argv[2]))
    sys.exit(f"usage: {_DRIVER_HELP}")

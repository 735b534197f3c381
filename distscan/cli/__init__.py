"""The command line: ``python -m distscan INPUT.npy`` (also under ``mpiexec -n K``).

Every rank runs the same command; rank 0 alone prints.  A failure anywhere ends
with one line on stderr (``distscan: error: ...``, the full traceback with
``--debug``) and the same non-zero exit status on every rank.  The last step of
every run is a non-blocking agreement on the exit status with a timeout: if a
rank failed alone (a bug: every phase agrees on its failures) and the others
cannot join, the job is aborted with ``MPI_Abort`` rather than left hanging.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
import traceback

import numpy as np

from ..dist.agree import abort_job

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_VERIFY = 0, 1, 2, 3
# Seconds the final status agreement waits for the other ranks before aborting the job
# (environment variable DISTSCAN_FINAL_TIMEOUT, checked at start-up by _check_env).
_DEFAULT_FINAL_TIMEOUT = 20.0

# Launcher variables that say this process is one of several ranks.
_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")

_DESCRIPTION = """\
Prefix scan (cumulative sum, product, max, min, ...) of the array in an .npy file,
in parallel over MPI ranks. Each rank reads only its block of rows along axis 0,
scans it in chunks, and writes its part of the result into one .npy file, reads,
scan and writes overlapping.
The scan runs along axis 0; rows of a multi-dimensional array are scanned
column by column. Result dtypes follow NumPy (cumsum of int32 is int64).
"""

_EPILOG = """\
examples:
  distscan-example                                    # writes example.npy (10,000,019 int32)
  mpiexec -n 4 python -m distscan example.npy         # -> example.cumsum.npy
  mpiexec -n 4 python -m distscan example.npy --op max --exclusive --verify --report run.json
  python -m distscan data.npy --op bitwise_xor -o x.npy --force   # one process is fine too

output:
  Without -o the result goes beside the input: data.npy -> data.cumsum.npy
  (cumprod, cummax, cummin; data.scan-<op>.npy for other operators; an
  "exclusive-" prefix for exclusive scans, e.g. data.exclusive-cumsum.npy).
  The file is written under a short temporary name in the same folder
  (NAME.distscan-<tag>-<host>-<pid>.part, locked while the run lives) and
  renamed when every rank has succeeded (and --verify passed, and the --report
  file was written): a file under the final name is always complete, and a
  non-zero exit status means nothing was published. SIGINT or SIGTERM (to
  mpiexec or any rank) removes the temporary file and ends every rank; a
  temporary file left by a killed run is removed by the next run to the same
  output (said on stderr). The input is never overwritten; --force replaces
  regular files only (never a FIFO, device, socket or directory).
  Without mpi4py the command runs as one process. Like numpy.save and cp, the
  command does not wait for the disk: the output may still sit in the page cache
  when it exits. --fsync makes it durable (file, then the rename) before exit.

progress:
  Rank 0 shows a bar when its stderr is a terminal, or when the launcher that
  started it (mpiexec, mpirun, srun, ...) writes to a terminal; otherwise (a log
  file) at most five lines, on runs longer than a few seconds. --progress forces
  the bar, --no-progress (or --quiet) shows nothing; DISTSCAN_PROGRESS=1, lines
  or 0 does the same from the environment.

verification (--verify):
  An independent check: every rank reduces its input slice (NumPy reduce, not
  accumulate; float sums in float64 or long double), the slice totals are
  combined in rank order without MPI scans, and rows sampled from every slice
  (always its first and last row) are read back from the written file and
  compared. Integers, booleans, max and min must match exactly; float sums
  within 16*eps*sqrt(k)*sum|x| (+ rounding to the output dtype), products
  within 4*k*eps*|ref|, k = elements in the prefix; float rows whose exact
  value overflows (products: or underflows) the dtype are skipped and counted.
  For exact cases every output row is also checked against the row before it.
  Floating-point warnings (overflow to inf, as NumPy gives) are not printed.

exit status:
  0 success, 1 error, 2 bad command line, 3 verification failed.
"""


class _Parser(argparse.ArgumentParser):
    """argparse that prints (help, usage errors) on rank 0 only; every rank exits the same way."""

    def __init__(self, *args, rank: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self._rank = rank

    def _print_message(self, message, file=None):
        if self._rank == 0:
            super()._print_message(message, file)


def _op_arg(text: str) -> str:
    from ..ops import get_op
    try:
        return get_op(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _algorithm_arg(text: str) -> str:
    from ..algorithms import resolve_algorithm
    try:
        return resolve_algorithm(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _dtype_arg(text: str) -> str:
    try:
        return np.dtype(text).name
    except TypeError:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r} (e.g. int64, float32, uint8)") from None


def _gpu_arg(text: str) -> str:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"GPU index must be an integer >= 0, got {text!r}")
    return text.strip()


def _size_arg(text: str) -> str:
    from ..pipeline.context import parse_bytes
    try:
        parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def build_parser(rank: int = 0) -> argparse.ArgumentParser:
    from ..ops import OPS
    p = _Parser(prog="distscan", description=_DESCRIPTION, epilog=_EPILOG, rank=rank,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="INPUT.npy", help="input .npy file (C order, numeric dtype, at least 1-D)")
    p.add_argument("-o", "--output", metavar="OUTPUT.npy",
                   help="output .npy file (default: beside the input, e.g. INPUT.cumsum.npy)")
    p.add_argument("--op", type=_op_arg, default="sum", metavar="OP",
                   help=f"operator: {', '.join(OPS)} (aliases such as cumsum, add, maximum work); default sum")
    p.add_argument("--exclusive", action="store_true",
                   help="exclusive scan: element i combines the elements before i (the first is the identity)")
    p.add_argument("--dtype", type=_dtype_arg, metavar="DT",
                   help="result dtype (input cast to it first, as numpy.cumsum(dtype=...)); default as NumPy")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the scan runs (default auto: cpu for file input)")
    p.add_argument("--strategy", choices=("auto", "reduce_then_scan", "scan_then_add"), default="auto",
                   help="distributed scan shape: reduce_then_scan (3N bytes) or scan_then_add (4N); default auto")
    p.add_argument("--algorithm", type=_algorithm_arg, default="auto", metavar="NAME",
                   help="scan algorithm (docs/algorithms.md): auto (fastest), kogge_stone, "
                        "kogge_stone_double_buffer, brent_kung, blelloch, coarsened (inside a tile), "
                        "hierarchical, domino, lookback (between tiles); default auto")
    p.add_argument("--hierarchy", choices=("auto", "flat", "node"), default="auto",
                   help="how slice totals travel: flat Exscan, or node then cluster; default auto")
    p.add_argument("--gpu", metavar="INDEX", type=_gpu_arg,
                   help="--backend cuda: the GPU this rank uses (default: DISTSCAN_GPU, else the rank's index on "
                        "its node; DISTSCAN_ALLOW_SHARED_GPU=1 lets more ranks than GPUs share them)")
    p.add_argument("--gpu-memory-limit", metavar="SIZE", type=_size_arg,
                   help="--backend cuda: GPU memory the pipeline may use per rank, e.g. 512M or 8G (default 85%% "
                        "of free); a larger shard is streamed through the GPU in chunks with a carry")
    p.add_argument("--memory-limit", metavar="SIZE", type=_size_arg,
                   help="host memory a rank may hold, e.g. 4G (default: half the available memory, split "
                        "between the ranks of a node); a larger slice is read twice instead of held")
    p.add_argument("--fsync", action="store_true",
                   help="make the output durable on disk before it is renamed into place (slower; see below)")
    p.add_argument("--verify", action="store_true", help="check the result by an independent route (see below)")
    p.add_argument("--report", metavar="FILE.json",
                   help="write sizes, ranks, backend, per-phase times and throughput as JSON")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--quiet", action="store_true", help="print nothing on success, no progress bar")
    p.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                   help="show a progress bar on rank 0 even where no terminal is detected")
    p.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="show no progress")
    p.add_argument("--debug", action="store_true", help="print full tracebacks on errors (from every rank)")
    return p


def _one_line(text) -> str:
    line = " ".join(str(text).split())
    if not line and isinstance(text, BaseException):
        line = {MemoryError: "out of memory"}.get(type(text), type(text).__name__)
    return line or "unknown error"


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def _check_report_path(path: str, input_path: str, output_path: str) -> None:
    from ..io import check_replaceable, same_file
    if same_file(path, input_path) or same_file(path, output_path):
        raise ValueError(f"--report {path} would overwrite the input or output file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"report folder does not exist: {folder}")
    check_replaceable(path, True, "--report")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"cannot write the report into {folder} (permission denied)")


def _check_env(env=None) -> float:
    """Check every ``DISTSCAN_*`` variable the command (or the library under it) reads.

    Returns the final-agreement timeout.  Raises ``ValueError`` naming the
    variable, so a typo ends in one line at start-up, not in a traceback later.
    """
    env = os.environ if env is None else env

    def get(name):
        v = env.get(name)
        return None if v is None or not v.strip() else v.strip()

    timeout = _DEFAULT_FINAL_TIMEOUT
    v = get("DISTSCAN_FINAL_TIMEOUT")
    if v is not None:
        try:
            timeout = float(v)
        except ValueError:
            timeout = float("nan")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"DISTSCAN_FINAL_TIMEOUT must be a number of seconds > 0, got {v!r}")
    v = get("DISTSCAN_NODE_SIZE")
    if v is not None and not (v.isdigit() and int(v) >= 1):
        raise ValueError(f"DISTSCAN_NODE_SIZE must be an integer >= 1 (ranks per node), got {v!r}")
    v = get("DISTSCAN_GPU")
    if v is not None and not v.isdigit():
        raise ValueError(f"DISTSCAN_GPU must be a GPU index (an integer >= 0), got {v!r}")
    from ..pipeline.progress import check_env_value
    check_env_value(get("DISTSCAN_PROGRESS"))
    v = get("DISTSCAN_ALLOW_SHARED_GPU")
    if v is not None and v.lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise ValueError(f"DISTSCAN_ALLOW_SHARED_GPU must be 1 or 0 (true/false, yes/no, on/off), got {v!r}")
    return timeout


def _report_writer(report: dict):
    def write(f):
        json.dump(report, f, indent=2)
        f.write("\n")
    return write


def _say(text: str, stream=None) -> None:
    """Print a success message; a closed or broken stdout cannot turn a published run into a failure."""
    try:
        print(text, file=stream or sys.stdout, flush=True)
    except (OSError, ValueError):
        pass


def _run(args, comm, rank: int) -> dict:
    from .. import io as _io
    from .. import pipeline
    from ..pipeline.progress import NullProgress, Progress, choose_mode

    output = args.output or pipeline.default_output(args.input, args.op, args.exclusive)
    if args.report:
        _io.decide_on_root(comm, lambda: _check_report_path(args.report, args.input, output))
    job = pipeline.Job(input=args.input, output=output, op=args.op, exclusive=args.exclusive, dtype=args.dtype,
                       backend=args.backend, strategy=args.strategy, hierarchy=args.hierarchy,
                       algorithm=args.algorithm, force=args.force, verify=args.verify, gpu=args.gpu,
                       gpu_memory_limit=args.gpu_memory_limit, memory_limit=args.memory_limit, fsync=args.fsync)
    mode, ncols = ("off", None) if rank != 0 or args.quiet else choose_mode(args.progress)

    def progress(label, total):
        if mode != "off":
            return Progress(total, label, mode=mode, ncols=ncols, delay=0.5 if mode == "bar" else 3.0)
        return NullProgress(total, label)

    notes = []

    def notice(message):  # rank 0 only (the writer's checks run there)
        notes.append(message)
        if not args.quiet:
            _say(f"distscan: {message}", sys.stderr)

    def before_publish(report, writer):
        report["argv"] = list(sys.argv[1:]) if args._argv is None else list(args._argv)
        report["time_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        report["notes"] = list(notes)
        if args.report:
            writer.attach(args.report, _report_writer(report))

    report = pipeline.run(job, comm, progress=progress, notice=notice, before_publish=before_publish)
    if rank == 0 and not args.quiet:
        t = report["times_s"]
        _say(f"distscan: wrote {report['output']} ({report['elements']:,} {report['result_dtype']}, "
             f"{_human(report['output_bytes'])}): {'exclusive ' if job.exclusive else ''}{report['op']} scan "
             f"on {report['ranks']} rank{'s' if report['ranks'] > 1 else ''} in {t['total']:.3f} s "
             f"(read {t['read']:.3f} s, scan {t['scan']:.3f} s, write {t['write']:.3f} s)")
        if "gpu" in report:
            g = report["gpu"]["per_rank"][0]
            _say(f"distscan: GPU {g['mode']} ({g['strategy']}): host->device {t.get('h2d', 0):.3f} s, "
                 f"exscan {t.get('exscan', 0):.4f} s, device->host {t.get('d2h', 0):.3f} s "
                 f"(GPU engine times, max over ranks)")
        if report["verify"]:
            v = report["verify"]
            _say(f"distscan: verify passed: {v.get('summary') or format(v['checked_rows'], ',') + ' rows checked'}")
        if args.report:
            _say(f"distscan: report written to {args.report}")
    return report


def _final_agreement(comm, code: int, timeout: float) -> tuple:
    """Non-blocking MAX/MIN of the exit codes with a timeout: ``(max, min)``; aborts if ranks cannot join."""
    from mpi4py import MPI
    send = np.array([code, -code], dtype=np.int64)
    recv = np.empty_like(send)
    req = comm.Iallreduce(send, recv, op=MPI.MAX)
    deadline = time.monotonic() + timeout
    while not req.Test():
        if time.monotonic() > deadline:
            sys.stderr.write(f"distscan: error: rank {comm.Get_rank()}: the other ranks did not finish "
                             f"within {timeout:g} s of this one; aborting the job\n")
            abort_job(code or EXIT_ERROR)
        time.sleep(0.002)
    return int(recv[0]), int(-recv[1])


# Seconds a signalled rank that holds no temporary file waits before it aborts the job.
_ABORT_GRACE_S = 2.0


class _Interrupts:
    """SIGINT and SIGTERM end the run on every rank within moments, leaving no temporary file.

    A Python signal handler runs only when the main thread returns to the
    interpreter, which a rank blocked inside an MPI call (waiting for a rank
    that will never come) does not.  So the handler itself does nothing; the
    C-level handler also writes the signal number to a pipe (``set_wakeup_fd``),
    and a watcher thread blocked on that pipe wakes at once, whatever the main
    thread is doing.  It removes this process's temporary files
    (:func:`distscan.io.emergency_cleanup`), prints one line, and ends the job:
    ``MPI_Abort`` (the launcher then stops every rank) or ``os._exit`` without
    MPI.  A signal that arrives once the output is already published (renamed
    into place) is ignored: the run is finishing and its result is complete.
    """

    def __init__(self, rank: int, size: int, abort):
        self.rank, self.size, self.abort = rank, size, abort
        self.active = False

    def __enter__(self):
        from .. import io as _io
        _io.forget_temps()
        if threading.current_thread() is not threading.main_thread():
            return self
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        try:
            self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
            self._old = {s: signal.signal(s, self._noop) for s in (signal.SIGINT, signal.SIGTERM)}
        except (ValueError, OSError):  # pragma: no cover - not the main thread of the main interpreter
            os.close(self._r)
            os.close(self._w)
            return self
        self.active = True
        self._thread = threading.Thread(target=self._watch, name="distscan-signals", daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _noop(signum, frame):
        pass

    def _watch(self):
        while True:
            try:
                data = os.read(self._r, 1)
            except OSError:
                return
            if not data or data == b"\0":
                return
            self._handle(data[0])

    def _handle(self, signum: int):
        from .. import io as _io
        removed, published = _io.emergency_cleanup()
        if published:
            return
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        where = f"rank {self.rank}: " if self.size > 1 else ""
        what = "the temporary output was removed and " if removed else ""
        try:
            os.write(2, f"distscan: error: {where}interrupted by {name}; {what}nothing was published\n".encode())
        except OSError:
            pass
        if not removed and self.size > 1:
            # This rank holds no temporary file yet (the signal came while rank 0 was creating
            # it): an abort now could stop rank 0 before it removes the file.  Mark the run
            # instead: it fails at its next agreement on every rank, which removes the file;
            # abort only if the run is stuck past a grace period.
            _io.mark_interrupted(name)
            time.sleep(_ABORT_GRACE_S)
            if _io.emergency_cleanup()[1]:
                return  # the agreement was already past: the output is complete and in place
        self.abort(128 + signum)

    def __exit__(self, *exc):
        if not self.active:
            return False
        for s, h in self._old.items():
            signal.signal(s, h)
        signal.set_wakeup_fd(self._old_fd)
        try:
            os.write(self._w, b"\0")
        except OSError:
            pass
        self._thread.join(timeout=5)
        os.close(self._r)
        os.close(self._w)
        return False


def _launched_ranks(env=None) -> int:
    env = os.environ if env is None else env
    for name in _LAUNCHER_SIZE_VARS:
        try:
            return int(env.get(name, ""))
        except ValueError:
            continue
    return 1


def main(argv=None) -> int:
    """Run the command line; returns the exit status (the console script exits with it).

    Without mpi4py the command runs as one process (plain file I/O, no MPI).
    """
    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    if MPI is None and _launched_ranks() > 1:
        sys.stderr.write(f"distscan: error: started as one of {_launched_ranks()} MPI ranks, but mpi4py is not "
                         "installed: every rank would scan the whole file alone (pip install 'distscan[mpi]', "
                         "or run one process without mpiexec)\n")
        return EXIT_ERROR
    world = MPI.COMM_WORLD if MPI is not None else None
    rank = world.Get_rank() if world is not None else 0
    size = world.Get_size() if world is not None else 1
    parser = build_parser(rank)
    try:
        args = parser.parse_args(argv)
        if args.backend != "cuda":
            for flag, value in (("--gpu", args.gpu), ("--gpu-memory-limit", args.gpu_memory_limit)):
                if value is not None:
                    parser.error(f"{flag} needs --backend cuda (the {args.backend} backend uses no GPU)")
    except SystemExit as exc:  # --help (0) or a usage error (2): same arguments, same outcome everywhere
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args._argv = argv
    from ..pipeline.verify import VerificationError

    # Environment values: checked before any work; the first bad one (rank order) is reported once.
    try:
        final_timeout, env_error = _check_env(), None
    except ValueError as exc:
        final_timeout, env_error = _DEFAULT_FINAL_TIMEOUT, str(exc)
    errors = [env_error] if world is None else world.allgather(env_error)
    if any(errors):
        if rank == 0:
            sys.stderr.write(f"distscan: error: {_one_line(next(e for e in errors if e))}\n")
            sys.stderr.flush()
        return EXIT_ERROR

    def abort(code):
        if world is not None:
            abort_job(code)
        os._exit(code)

    # Two private communicators: one for the work, one only for the final status agreement,
    # so a rank that failed alone can never have its status matched with a collective of the work.
    comm, status_comm = (world.Dup(), world.Dup()) if world is not None else (None, None)
    code, error = EXIT_OK, None
    with _Interrupts(rank, size, abort):
        try:
            # Overflow to inf in a float product is the defined result (as in NumPy): no warnings
            # from every rank on the console.
            with np.errstate(all="ignore"):
                _run(args, comm, rank)
        except KeyboardInterrupt:  # only when the watcher could not be installed (not the main thread)
            sys.stderr.write(f"distscan: error: interrupted on rank {rank}; aborting\n")
            sys.stderr.flush()
            abort(130)
        except VerificationError as exc:
            code, error = EXIT_VERIFY, exc
        except Exception as exc:  # noqa: BLE001 - one line, same status on every rank
            code, error = EXIT_ERROR, exc
        hi, lo = _final_agreement(status_comm, code, final_timeout) if status_comm is not None else (code, code)
    if error is not None and args.debug:
        sys.stderr.write(f"distscan: rank {rank} traceback:\n{''.join(traceback.format_exception(error))}")
    if hi == lo:
        # Every rank ended the same way: the error was agreed; rank 0 speaks for all.
        if error is not None and rank == 0:
            sys.stderr.write(f"distscan: error: {_one_line(error)}\n")
    elif error is not None:
        # A failure on some ranks only (not agreed: a bug); each failing rank reports its own.
        sys.stderr.write(f"distscan: error: rank {rank}: {_one_line(error)}\n")
    sys.stderr.flush()
    for c in (comm, status_comm):
        try:
            if c is not None:
                c.Free()
        except Exception:  # noqa: BLE001 - a communicator left by a failed run is harmless at exit
            pass
    return hi

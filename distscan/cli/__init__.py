"""The command line: ``python -m distscan INPUT.npy`` (also under ``mpiexec -n K``).

Every rank runs the same command; rank 0 alone prints.  A failure anywhere ends
with one line on stderr (``distscan: error: ...``, the full traceback with
``--debug``) and the same non-zero exit status on every rank.  The last step of
every run is a non-blocking agreement on the exit status with a timeout: if a
rank failed alone (a bug: every phase agrees on its failures) and the others
cannot join, the job is aborted with ``MPI_Abort`` rather than left hanging.
"""

from __future__ import annotations

import os

# The command uses no BLAS: one BLAS thread per rank (unless the user chose), so that NumPy's
# import does not start a pool of threads per core in every rank (measured on the H200 host,
# 8 ranks: NumPy's import 0.84 -> 0.57 s, the command's start-up 0.91 -> 0.68 s).  Set before
# NumPy loads, which ``import distscan`` does not do (distscan/__init__.py).
for _blas in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")

import math
import sys
import time
import traceback

import numpy as np

from ..dist.agree import abort_job, decide_on_root, fingerprint, raise_mismatch
from .. import pipeline
from ..io import check_replaceable, same_file
from ..pipeline.chunks import io_threads
from ..pipeline.gpu_env import staging_from_env
from ..pipeline.progress import NullProgress, Progress, check_env_value, choose_mode
from .args import build_parser, build_recurrence_parser
from .signals import (ENDING, EXIT_ERROR, EXIT_OK, EXIT_USAGE, EXIT_VERIFY, Interrupts, final_agreement,
                      launched_ranks, signalled_status)


# Seconds the final status agreement waits for the other ranks before aborting the job
# (environment variable DISTSCAN_FINAL_TIMEOUT, checked at start-up by _check_env).
_DEFAULT_FINAL_TIMEOUT = 20.0


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


def _check_report_path(path: str, output_path: str, inputs) -> None:
    """``inputs``: every file the job reads (the input, segment flags, coefficients)."""
    if same_file(path, output_path) or any(same_file(path, f) for f in inputs if f is not None):
        raise ValueError(f"--report {path} would overwrite an input or the output file")
    check_replaceable(path, True, "--report")  # also the folder, as typed: missing or not a directory
    folder = os.path.dirname(os.path.abspath(path))
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
    v = get("DISTSCAN_DOUBLING_RANKS")
    if v is not None and not v.isdigit():
        raise ValueError(f"DISTSCAN_DOUBLING_RANKS must be an integer >= 0 (ranks), got {v!r}")
    v = get("DISTSCAN_GPU")
    if v is not None and not v.isdigit():
        raise ValueError(f"DISTSCAN_GPU must be a GPU index (an integer >= 0), got {v!r}")
    check_env_value(get("DISTSCAN_PROGRESS"))
    staging_from_env(env)
    io_threads(env)
    v = get("DISTSCAN_ALLOW_SHARED_GPU")
    if v is not None and v.lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise ValueError(f"DISTSCAN_ALLOW_SHARED_GPU must be 1 or 0 (true/false, yes/no, on/off), got {v!r}")
    return timeout


def _report_writer(report: dict):
    import json  # deferred: only --report writes JSON

    def write(f):
        json.dump(report, f, indent=2)
        f.write("\n")
    return write


def process_age():
    """Seconds since this process started (Linux ``/proc``; None elsewhere): the interpreter, the
    imports and ``MPI_Init`` before the command's own work, for the report."""
    try:
        with open("/proc/self/stat", "rb") as f:
            started = int(f.read().rsplit(b")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            return max(0.0, float(f.read().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return None


def gpu_summary(report: dict) -> str:
    """One line on the GPUs of a run: where the chunks went, CUDA's start and the GPU phases."""
    t, ranks = report["times_s"], [g for g in report["gpu"]["per_rank"] if g is not None]
    on_gpu = sum(g.get("chunks_on_gpu", 0) for g in ranks)
    on_host = sum(g.get("chunks_on_host", 0) for g in ranks)
    devices = sorted({g["device"] for g in ranks if g.get("device") is not None})
    parts = [f"GPU{'s' if len(devices) != 1 else ''} {', '.join(map(str, devices)) or 'none'}"]
    if on_gpu or on_host:
        parts.append(f"chunks {on_gpu} on GPU, {on_host} on the host")
    if t.get("context") is not None:
        slowest = max(ranks, key=lambda g: g.get("context_s") or 0.0, default={})
        steps = ", ".join(f"{k} {v:.2f}" for k, v in (slowest.get("start_steps_s") or {}).items())
        parts.append(f"CUDA start {t['context']:.3f} s (beside the reads{'; its steps ended at ' + steps + ' s' if steps else ''})")
    parts.append(f"host->device {t.get('h2d', 0):.3f} s, device->host {t.get('d2h', 0):.3f} s "
                 "(GPU busy time, max over ranks)")
    return "; ".join(parts)


def _failed_check(exc: BaseException) -> bool:
    """Whether ``exc`` is ``--verify``'s verdict (exit status 3) rather than an error."""
    from ..pipeline.verify import VerificationError  # deferred: loaded by --verify runs only
    return isinstance(exc, VerificationError)


def _say(text: str, stream=None) -> None:
    """Print a success message; a closed or broken stdout cannot turn a published run into a failure."""
    try:
        print(text, file=stream or sys.stdout, flush=True)
    except (OSError, ValueError):
        pass


def _run(args, comm, rank: int) -> dict:

    coefficients = getattr(args, "coefficients", None)
    output = args.output or pipeline.default_output(
        args.input, args.op, args.exclusive, reverse=args.reverse, segmented=args.segments is not None,
        compensated=args.compensated, recurrence=coefficients is not None)
    if args.report:
        reads = (args.input, args.segments, coefficients)
        decide_on_root(comm, lambda: _check_report_path(args.report, output, reads))
    job = pipeline.Job(input=args.input, output=output, op=args.op, exclusive=args.exclusive, dtype=args.dtype,
                       backend=args.backend, strategy=args.strategy, hierarchy=args.hierarchy,
                       algorithm=args.algorithm, force=args.force, verify=args.verify, gpu=args.gpu,
                       gpu_memory_limit=args.gpu_memory_limit, memory_limit=args.memory_limit, fsync=args.fsync,
                       reverse=args.reverse, segments=args.segments, compensated=args.compensated,
                       coefficients=coefficients, initial=getattr(args, "initial", None))
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

    report = pipeline.run(job, comm, progress=progress, notice=notice, before_publish=before_publish,
                          startup_s=process_age())
    if rank == 0 and not args.quiet:
        t = report["times_s"]
        b = report["backend"]
        where = ", ".join(f"{name} on {len(r)} rank{'s' if len(r) > 1 else ''}" for name, r in b["ranks"].items())
        _say(f"distscan: wrote {report['output']} ({report['elements']:,} {report['result_dtype']}, "
             f"{_human(report['output_bytes'])}): {'reverse ' if job.reverse else ''}"
             f"{'exclusive ' if job.exclusive else ''}{report['op']} scan "
             f"on {report['ranks']} rank{'s' if report['ranks'] > 1 else ''} ({where}; {b['why']}) "
             f"in {t['total']:.3f} s (read {t['read']:.3f} s, scan {t['scan']:.3f} s, write {t['write']:.3f} s)")
        if "gpu" in report:
            _say(f"distscan: {gpu_summary(report)}")
        if report["verify"]:
            v = report["verify"]
            _say(f"distscan: verify passed: {v.get('summary') or format(v['checked_rows'], ',') + ' rows checked'}")
        if args.report:
            _say(f"distscan: report written to {args.report}")
    return report


def main(argv=None) -> int:
    """Run the command line; returns the exit status (the console script exits with it).

    Without mpi4py the command runs as one process (plain file I/O, no MPI).
    """
    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    if MPI is None and launched_ranks() > 1:
        sys.stderr.write(f"distscan: error: started as one of {launched_ranks()} MPI ranks, but mpi4py is not "
                         "installed: every rank would scan the whole file alone (pip install 'distscan[mpi]', "
                         "or run one process without mpiexec)\n")
        return EXIT_ERROR
    world = MPI.COMM_WORLD if MPI is not None else None
    rank = world.Get_rank() if world is not None else 0
    size = world.Get_size() if world is not None else 1

    def abort(code):
        if world is not None:
            abort_job(code)
        os._exit(code)

    # The signal watcher is up before the first collective (the environment's allgather, the
    # communicators' Dup): a rank interrupted there ends every rank, not only itself.
    with Interrupts(rank, size, abort):
        return _main(argv, world, rank, abort)


# Options a rank may give itself (mpiexec's MPMD form: "-n 1 distscan ... --gpu 0 : -n 1 distscan ...
# --gpu 1"); every other argument must be the same on every rank (_agree_on_arguments).
_PER_RANK = frozenset({"gpu", "gpu_memory_limit", "memory_limit", "quiet", "progress", "debug"})
_NAMES = {"input": "INPUT", "coefficients": "A", "recurrence": "the subcommand"}
# Paths: rank 0's are the job's (it reads the headers, names the output and the report for all), so
# only whether one is given must agree (a rank with --segments takes other collectives).
_PATHS = frozenset({"input", "output", "segments", "coefficients", "report"})


def _shared_arguments(args, recurrence: bool) -> dict:
    fields = {"recurrence": recurrence, **{k: v for k, v in vars(args).items() if k not in _PER_RANK}}
    fields = {k: ("given" if v is not None else None) if k in _PATHS else v for k, v in fields.items()}
    return {_NAMES.get(k, f"--{k.replace('_', '-')}"): v for k, v in sorted(fields.items())}


def _agree_on_arguments(world, rank: int, code, shared, env_error):
    """One allgather, before any other collective, of every rank's parse outcome (``code``: None, or
    the exit status of --help or a usage error), its shared arguments and its environment's error.
    Ranks given different command lines (the MPMD form of mpiexec, a wrapper) hung where one
    rank's parse ended it (a usage error, --help) or took other collectives (--report, --segments),
    and aborted after the final agreement's timeout with the temporary file left (2026-11-27).
    Returns ``(status or None, the environment errors of every rank)``."""
    mine = (code, env_error, 0 if shared is None else fingerprint(shared))
    everyone = [mine] if world is None else world.allgather(mine)
    codes = {c for c, _, _ in everyone}
    if len(codes) == 1 and code is not None:
        return code, []  # --help or the same usage error everywhere: rank 0's parser printed it
    if len(codes) > 1 or len({crc for _, _, crc in everyone}) > 1:
        why = "the ranks were given different command lines (mpiexec's MPMD form?)"
        if codes == {None}:  # every rank parsed its arguments: name the first that differs
            try:
                raise_mismatch(world, "arguments", shared)
            except ValueError as exc:
                why = f"{exc}; the ranks must be given the same command line"
        if rank == 0 and code is None:  # (rank 0's parser told its own usage error)
            sys.stderr.write(f"distscan: error: {_one_line(why)}\n")
            sys.stderr.flush()
        return EXIT_USAGE, []
    return None, [e for _, e, _ in everyone]


def _main(argv, world, rank: int, abort) -> int:
    """:func:`main` once MPI is up and the signal watcher installed."""
    words = list(sys.argv[1:] if argv is None else argv)
    recurrence = bool(words) and words[0] == "recurrence"  # distscan recurrence A.npy B.npy
    parser = build_recurrence_parser(rank) if recurrence else build_parser(rank)
    args, code = None, None
    try:
        args = parser.parse_args(words[1:] if recurrence else words)
        if args.backend == "cpu":
            for flag, value in (("--gpu", args.gpu), ("--gpu-memory-limit", args.gpu_memory_limit)):
                if value is not None:
                    parser.error(f"{flag} needs --backend cuda or auto (the cpu backend uses no GPU)")
    except SystemExit as exc:  # --help (0) or a usage error (2): agreed below, with the arguments
        args, code = None, exc.code if isinstance(exc.code, int) else EXIT_USAGE

    # Environment values: checked before any work; the first bad one (rank order) is reported once.
    try:
        final_timeout, env_error = _check_env(), None
    except ValueError as exc:
        final_timeout, env_error = _DEFAULT_FINAL_TIMEOUT, str(exc)
    shared = None if args is None else _shared_arguments(args, recurrence)
    code, errors = _agree_on_arguments(world, rank, code, shared, env_error)
    if code is not None:
        return code
    args._argv = argv
    if any(errors):
        if rank == 0:
            sys.stderr.write(f"distscan: error: {_one_line(next(e for e in errors if e))}\n")
            sys.stderr.flush()
        return EXIT_ERROR

    # Two private communicators: one for the work, one only for the final status agreement,
    # so a rank that failed alone can never have its status matched with a collective of the work.
    comm, status_comm = (world.Dup(), world.Dup()) if world is not None else (None, None)
    code, error = EXIT_OK, None
    try:
        # Overflow to inf in a float product is the defined result (as in NumPy): no warnings
        # from every rank on the console.
        with np.errstate(all="ignore"):
            _run(args, comm, rank)
    except KeyboardInterrupt:  # only when the watcher could not be installed (not the main thread)
        sys.stderr.write(f"distscan: error: interrupted on rank {rank}; aborting\n")
        sys.stderr.flush()
        abort(130)
    except Exception as exc:  # noqa: BLE001 - one line, same status on every rank
        code, error = (EXIT_VERIFY if args.verify and _failed_check(exc) else EXIT_ERROR), exc
    if error is not None and signalled_status() is not None:
        # This rank's signal watcher printed the run's one line: the failure that followed (the
        # agreed interruption, or rank 0's rename of the file the watcher removed) takes the
        # signal's status, above every other, and no rank prints it (below).
        code = signalled_status()
    hi, lo = final_agreement(status_comm, code, final_timeout) if status_comm is not None else (code, code)
    if error is not None and ENDING.is_set():
        time.sleep(5)  # the signal watcher is ending the process, with its own line (cli/signals.py)
    if error is not None and args.debug:
        sys.stderr.write(f"distscan: rank {rank} traceback:\n{''.join(traceback.format_exception(error))}")
    if hi > 128:
        pass  # a rank's signal watcher printed the line (cli/signals.py)
    elif hi == lo:
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

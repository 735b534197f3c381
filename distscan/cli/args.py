"""The command line's arguments: the parser, its help text, and the checks of each value."""

from __future__ import annotations

import argparse

import numpy as np

from ..algorithms import resolve_algorithm
from ..ops import ALL_OPS, get_op
from ..pipeline.context import parse_bytes


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
  non-zero exit status means nothing was published. SIGINT, SIGTERM or SIGHUP
  (to any rank; SIGINT or SIGTERM to mpiexec) removes the temporary file and
  ends every rank; a
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
  0 success, 1 error, 2 bad command line, 3 verification failed, 128 + N
  interrupted by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
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
    try:
        return get_op(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _algorithm_arg(text: str) -> str:
    try:
        return resolve_algorithm(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def dtype_named(text: str) -> np.dtype | None:
    """``np.dtype(text)``, or None where NumPy cannot read ``text`` as a dtype: the one rule of the
    command's ``--dtype`` and distscan-example's.  NumPy refuses a name in three ways: TypeError
    (``'bogus'``), ValueError (``'((2,)i8'``) and SyntaxError (its parser of ``'(i8,2)'``)."""
    try:
        return np.dtype(text)
    except (TypeError, ValueError, SyntaxError):
        return None


def _dtype_arg(text: str) -> str:
    dt = dtype_named(text)
    if dt is None:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r} (e.g. int64, float32, uint8)")
    if dt.kind not in "biufc" or dt.names is not None or dt.subdtype is not None:
        # a string, record, datetime or object dtype: a usage error (exit 2), not a failure later
        raise argparse.ArgumentTypeError(f"--dtype {text!r} is not a numeric dtype (e.g. int64, float32, uint8)")
    return dt.name


def _gpu_arg(text: str) -> str:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"GPU index must be an integer >= 0, got {text!r}")
    return text.strip()


def _number_arg(text: str):
    """An integer, a real number, or a complex one as Python writes it (``1+2j``): a complex
    recurrence's y[-1].  Integers first, exactly: a float rounded those past 2^53 (found 2026-11-25)."""
    for parse in (int, float, complex):
        try:
            return parse(text.replace(" ", ""))
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a number: {text!r} (e.g. 0.5, or 1+2j for complex data)")


def _path_arg(text: str) -> str:
    """A file to write: ``-o ""`` or ``--report ""`` was taken as not given (the default output
    beside the input; no report) where it names no file (found 2026-11-25)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file")
    return text


def _size_arg(text: str) -> str:
    try:
        parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


_RECURRENCE_DESCRIPTION = """\
Linear recurrence y[i] = a[i] * y[i-1] + b[i] (y[-1] = --initial, default 0) over the arrays
in two .npy files of the same shape, in parallel over MPI ranks, along axis 0: each rank
composes its rows' affine maps, the ranks exchange one map each, and each rank runs its rows
from the value before them.  --reverse: y[i] = a[i] * y[i+1] + b[i] from the end.  The result
dtype is NumPy's for a*b + b (or --dtype).  Each rank streams its rows (A, B and Y) in chunks,
as a scan does.
"""

_RECURRENCE_EPILOG = """\
examples:
  mpiexec -n 4 python -m distscan recurrence decay.npy signal.npy -o filtered.npy
  python -m distscan recurrence gamma_not_done.npy rewards.npy --reverse -o returns.npy
  python -m distscan recurrence a.npy b.npy --segments starts.npy --initial 1.0

The output, its temporary name, --force, --report and the exit status are as for a scan
(python -m distscan --help).
"""


def build_parser(rank: int = 0) -> argparse.ArgumentParser:
    p = _Parser(prog="distscan", description=_DESCRIPTION, epilog=_EPILOG, rank=rank,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="INPUT.npy", help="input .npy file (C order, numeric dtype, at least 1-D)")
    p.add_argument("--op", type=_op_arg, default="sum", metavar="OP",
                   help=f"operator: {', '.join(ALL_OPS)} (aliases such as cumsum, add, maximum, fmax work; "
                        "logaddexp is logcumsumexp); default sum")
    p.add_argument("--exclusive", action="store_true",
                   help="exclusive scan: element i combines the elements before i (the first is the identity)")
    p.add_argument("--compensated", action="store_true",
                   help="float sums carried as (sum, error) pairs, rounded once (docs/operators.md gives the bound)")
    _shared_options(p, "INPUT.cumsum.npy")
    p.add_argument("--strategy", choices=("auto", "reduce_then_scan", "scan_then_add"), default="auto",
                   help="distributed scan shape: reduce_then_scan (3N bytes) or scan_then_add (4N); default auto")
    p.add_argument("--algorithm", type=_algorithm_arg, default="auto", metavar="NAME",
                   help="scan algorithm (docs/algorithms.md): auto (fastest), kogge_stone, "
                        "kogge_stone_double_buffer, brent_kung, blelloch, coarsened (inside a tile), "
                        "hierarchical, domino, lookback, lookahead (between tiles); default auto")
    p.add_argument("--hierarchy", choices=("auto", "flat", "node"), default="auto",
                   help="how slice totals travel: one exchange of every rank's carry (an Allgather, or "
                        "recursive doubling from DISTSCAN_DOUBLING_RANKS ranks), or node then cluster; default auto")
    p.add_argument("--verify", action="store_true", help="check the result by an independent route (see below)")
    _output_options(p)
    return p


def build_recurrence_parser(rank: int = 0) -> argparse.ArgumentParser:
    """``distscan recurrence A.npy B.npy``: the parser of the linear-recurrence command."""
    p = _Parser(prog="distscan recurrence", description=_RECURRENCE_DESCRIPTION, epilog=_RECURRENCE_EPILOG,
                rank=rank, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("coefficients", metavar="A.npy", help="the coefficients a (the same shape as B)")
    p.add_argument("input", metavar="B.npy", help="the inputs b")
    p.add_argument("--initial", type=_number_arg, default=0.0, metavar="Y0",
                   help="y[-1], the value before the first element (and where each segment starts again; "
                        "complex data take a complex value, e.g. 1+2j); default 0")
    _shared_options(p, "B.recurrence.npy")
    _output_options(p)
    p.set_defaults(op="sum", exclusive=False, compensated=False, strategy="auto", algorithm="auto",
                   hierarchy="auto", verify=False)
    return p


def _shared_options(p, default_name: str) -> None:
    """What a scan and a recurrence both take: output, direction, segments, dtype, backend, GPU, memory."""
    p.add_argument("-o", "--output", type=_path_arg, metavar="OUTPUT.npy",
                   help=f"output .npy file (default: beside the input, e.g. {default_name})")
    p.add_argument("--reverse", action="store_true",
                   help="suffix scan: element i combines the elements from i to the end (the last rank's rows first)")
    p.add_argument("--segments", metavar="FLAGS.npy",
                   help="one flag per row (bool, or integers 0/1): a True row starts a new segment, whose scan "
                        "drops what came before (with --reverse the flags still mark each run's first row)")
    p.add_argument("--dtype", type=_dtype_arg, metavar="DT",
                   help="result dtype (input cast to it first, as numpy.cumsum(dtype=...)); default as NumPy")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where each rank scans its chunks: auto (default): its GPU where one is visible and the "
                        "host would take longer to scan its part than CUDA takes to start and repay (about 2 s for "
                        "integer sums, max and min, whose chunks run on the host meanwhile; 1.5 s for float sums "
                        "and state scans, which wait for the GPU), else the "
                        "host; cuda: its GPU (ranks beyond the GPUs of a node scan on the host); cpu: the host. "
                        "CUDA starts while the first chunks are read. The summary and --report say what ran "
                        "where, and why")
    p.add_argument("--gpu", metavar="INDEX", type=_gpu_arg,
                   help="the GPU this rank uses (default: DISTSCAN_GPU, else the rank's index on its node; "
                        "DISTSCAN_ALLOW_SHARED_GPU=1 lets ranks beyond the GPUs share them instead of scanning "
                        "on the host)")
    p.add_argument("--gpu-memory-limit", metavar="SIZE", type=_size_arg,
                   help="GPU memory a rank's chunks may use, e.g. 64M (default: two chunk slots, 64 MB at "
                        "most); a smaller limit sends each chunk through the GPU in pieces")
    p.add_argument("--memory-limit", metavar="SIZE", type=_size_arg,
                   help="host memory a rank may hold, e.g. 4G (default: half the available memory, split "
                        "between the ranks of a node); a larger slice is read twice instead of held, in chunks that "
                        "shrink to fit the limit")


def _output_options(p) -> None:
    p.add_argument("--fsync", action="store_true",
                   help="make the output durable on disk before it is renamed into place (slower; see below)")
    p.add_argument("--report", type=_path_arg, metavar="FILE.json",
                   help="write sizes, ranks, backend, per-phase times and throughput as JSON")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--quiet", action="store_true", help="print nothing on success, no progress bar")
    p.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                   help="show a progress bar on rank 0 even where no terminal is detected")
    p.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="show no progress")
    p.add_argument("--debug", action="store_true", help="print full tracebacks on errors (from every rank)")

"""``distscan-example``: write a random ``.npy`` to try the command on.

    distscan-example                       # example.npy: 10,000,019 int32 values in [-1000, 1000)
    distscan-example --n 100000000 --dtype float32 -o big.npy --seed 7

The file is filled chunk by chunk through a memory map, so it may be larger
than memory.  A prime default length makes every rank count give uneven parts.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys

import numpy as np

from .args import dtype_named

_CHUNK = 1 << 22


def _fill(rng, dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        return rng.integers(lo, hi, size=n, endpoint=False).astype(dtype)
    if dtype.kind == "f":
        return (rng.random(n) * 2 - 1).astype(dtype)
    if dtype.kind == "c":
        return (rng.random(n) * 2 - 1 + 1j * (rng.random(n) * 2 - 1)).astype(dtype)
    raise ValueError(f"dtype {dtype} is not supported (use a bool, integer, float or complex dtype)")


def write_example(path: str, n: int, dtype, seed: int = 0) -> None:
    """Write ``n`` random values of ``dtype`` to the ``.npy`` file ``path``."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc":
        raise ValueError(f"dtype {dtype} is not supported (use a bool, integer, float or complex dtype)")
    if n < 0:
        raise ValueError(f"--n must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    tmp = f"{path}.{os.getpid()}.part"
    try:
        mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(n,))
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            mm[lo:hi] = _fill(rng, dtype, hi - lo)
        mm.flush()
        del mm
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="distscan-example", description="Write a random .npy file to scan with distscan.",
                                epilog="then: mpiexec -n 4 python -m distscan example.npy --verify --force")
    p.add_argument("-o", "--output", default="example.npy", help="file to write (default example.npy)")
    p.add_argument("--n", type=int, default=10_000_019, help="number of values (default 10,000,019)")
    p.add_argument("--dtype", default="int32", help="dtype (default int32; any bool/int/float/complex)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    args = p.parse_args(argv)
    dtype = dtype_named(args.dtype)  # (the rule of distscan's --dtype)
    if dtype is None:
        p.error(f"unknown dtype {args.dtype!r}")
    if os.path.exists(args.output) and not args.force:
        sys.stderr.write(f"distscan-example: error: {args.output} exists (use --force to overwrite it)\n")
        return 1
    try:
        write_example(args.output, args.n, dtype, args.seed)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"distscan-example: error: {exc}\n")
        return 1
    size = args.n * dtype.itemsize
    print(f"wrote {args.output}: {args.n:,} {dtype} values ({size / 1e6:.1f} MB), seed {args.seed}")
    print("next, try:")
    print(f"  {next_command(args.output)}")
    return 0


def next_command(path: str) -> str:
    """The command to try next, runnable verbatim: ``--force`` because the README's first command
    (or an earlier try) may already have written the output; the launcher and the interpreter by
    full path where they are not found on ``PATH``."""
    here = os.path.dirname(sys.executable)
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None and os.access(os.path.join(here, "mpiexec"), os.X_OK):
        mpiexec = os.path.join(here, "mpiexec")
    elif mpiexec is not None:
        mpiexec = "mpiexec"
    python = os.path.basename(sys.executable)
    if shutil.which(python) is None or os.path.abspath(shutil.which(python)) != os.path.abspath(sys.executable):
        python = sys.executable
    launch = f"{shlex.quote(mpiexec)} -n 4 " if mpiexec else ""
    return f"{launch}{shlex.quote(python)} -m distscan {shlex.quote(path)} --verify --force --report report.json"


if __name__ == "__main__":
    raise SystemExit(main())

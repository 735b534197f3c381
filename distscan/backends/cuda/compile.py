"""Finding, compiling and caching the CUDA kernels of ``kernels/``.

The kernels are C++ templates (``kernels/scan_kernels.cu``) on the item types, the operator
functor and the tile shape.  One module is compiled with NVRTC per (input, accumulator, output
types, operator, tile shape), the instantiations it needs named by ``name_expressions``
(:func:`names`), without CuPy's -ftz=true, and kept on disk (``modules.raw_module``), so later
processes load it; :func:`precompile` builds many in parallel processes; modules are memoized
per device.  The source starts with a hash of every file in ``kernels/``, so the disk cache,
keyed on it, never serves a binary built from older headers.

The sources are found next to the package in a checkout (``<repo>/kernels``) and
as the ``distscan.kernels`` package data when installed.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .modules import raw_module
# (choose_tuning, kernel_acc_dtype and kernel_algorithm are also the callers' through this module)
from .tuning import (BLOCK_ALGORITHMS, DEFAULT_DEVICE, DEVICE_ALGORITHMS, Tuning, choose_tuning,  # noqa: F401
                     kernel_acc_dtype, kernel_algorithm)

# NumPy dtype -> C++ type in the kernels (kernels/util/types.cuh says the same).
_CTYPE = {np.dtype(t): c for t, c in [
    (np.bool_, "bool"), (np.int8, "signed char"), (np.uint8, "unsigned char"), (np.int16, "short"),
    (np.uint16, "unsigned short"), (np.int32, "int"), (np.uint32, "unsigned int"), (np.int64, "long long"),
    (np.uint64, "unsigned long long"), (np.float16, "__half"), (np.float32, "float"), (np.float64, "double"),
    (np.complex64, "distscan::Complex<float>"), (np.complex128, "distscan::Complex<double>")]}


def ctype(dtype) -> str:
    """C++ type name of a NumPy dtype in the kernels.

    Raises
    ------
    TypeError
        For a dtype the kernels do not handle.
    """
    dt = np.dtype(dtype).newbyteorder("=")
    try:
        return _CTYPE[dt]
    except KeyError:
        raise TypeError(f"the CUDA kernels do not handle dtype {dt}") from None


def kernels_dir() -> Path:
    """Directory holding ``scan_kernels.cu`` and its headers (checkout or installed).

    Raises
    ------
    FileNotFoundError
        If neither location holds the sources.
    """
    here = Path(__file__).resolve()
    candidates = [here.parents[3] / "kernels", here.parents[2] / "kernels"]  # checkout, installed
    try:
        import importlib.resources as resources

        res = resources.files("distscan.kernels")
        candidates.append(Path(str(res)))
    except Exception:  # noqa: BLE001 - not installed as a package: fine, try the others
        pass
    for cand in candidates:
        if (cand / "scan_kernels.cu").is_file():
            return cand
    raise FileNotFoundError(
        "distscan's CUDA sources (scan_kernels.cu) were not found in " + ", ".join(map(str, candidates))
    )


@functools.lru_cache(maxsize=None)
def _source() -> tuple[str, str]:
    kdir = kernels_dir()
    digest = hashlib.sha256()
    # every source in kernels/ and its folders, in the order of their paths (stable across
    # machines); the path goes in too, so that a file moved between folders changes the hash
    sources = sorted((f.relative_to(kdir).as_posix(), f) for f in kdir.rglob("*") if f.suffix in (".cu", ".cuh"))
    for rel, f in sources:
        digest.update(rel.encode())
        digest.update(f.read_bytes())
    text = (kdir / "scan_kernels.cu").read_text()
    return f"// distscan kernels sha256 {digest.hexdigest()}\n{text}", str(kdir)


# The C++ structs of the state operators' states (kernels/util/states.cuh), by state kind.
_STATE_STRUCTS = {"segmented": "SegState", "segmented_ends": "SegEndsState", "affine": "AffState",
                  "affine_starts": "AffStartsState", "affine_ends": "AffEndsState", "compensated": "CompState"}


def state_ctype(kind: str, value_dtype) -> str:
    """C++ type of a state of ``kind`` (``distscan.ops.state``) over values of ``value_dtype``."""
    return f"distscan::{_STATE_STRUCTS[kind]}<{ctype(value_dtype)} >"


# How a linear recurrence's coefficients come (ModuleKey.coef_one; ext_states.coefficient_row): rows
# of their own, one row for every row, or one tame row (|a| <= 1: ext_states.one_coefficient).
COEF_ROWS, COEF_ONE, COEF_TAME = 0, 1, 2
COEF_MODES = (COEF_ROWS, COEF_ONE, COEF_TAME)


@dataclass(frozen=True)
class ModuleKey:
    in_dtype: np.dtype
    acc_dtype: np.dtype  # kernel accumulator dtype (float16 already mapped to float32; a state's value dtype)
    out_dtype: np.dtype
    functor: str
    tuning: Tuning
    block: str = "coarsened"    # BLOCK_ALGORITHMS
    device: str = DEFAULT_DEVICE  # DEVICE_ALGORITHMS
    # The extended module (reverse scans, state operators: scan_ext_kernel and the ordered
    # reductions) instead of the plain one; state: the state kind, whose struct is the
    # accumulator ("" for plain operators); reverse: the suffix scan.
    ext: bool = False
    state: str = ""
    reverse: bool = False
    # C++ that defines a declared operator's functor (distscan.ops.declared), appended to the
    # kernels' source: the name expressions instantiate the templates at the end of the unit
    source: str = ""
    # with ext: the columns scan's kernels for (n, w) rows (COLUMN_ROLES) instead of the 1-D ones,
    # a module of their own, compiled only for calls of several columns
    columns: bool = False
    # with ext: a recurrence's one coefficient (a column) for every row (COEF_ONE; COEF_TAME: tame)
    coef_one: int = COEF_ROWS


ROLES = ("scan_incl", "scan_excl", "reduce_partials", "reduce_final", "add_offset", "add_offset_columns",
         "tiles_reduce", "tiles_carry", "tiles_incl", "tiles_excl", "add_tile_prefix")
EXT_ROLES = ("ext_incl", "ext_excl", "reduce_tiles", "reduce_final_ordered")
COLUMN_ROLES = ("cols_reduce", "cols_carry", "cols_incl", "cols_excl", "lifted_reduce", "lifted_excl")


def names(key: ModuleKey) -> dict:
    """The name expression of each kernel of one module, by role."""
    tin, tout = ctype(key.in_dtype), ctype(key.out_dtype)
    tacc = state_ctype(key.state, key.acc_dtype) if key.state else ctype(key.acc_dtype)
    op = f"distscan::{key.functor}"
    t = key.tuning
    # the launch shape: the device algorithm, then its policy (kernels/agent/agent_policy.cuh)
    shape = f"{t.block_threads}, {t.items}, {t.window}, {t.min_blocks}, {BLOCK_ALGORITHMS[key.block]}"
    tile_policy = policy = f"distscan::TilePolicy<{shape}>"
    if key.device == "lookahead":
        policy = f"distscan::LookaheadPolicy<{policy}, {t.stages}, {t.depth}, {t.behind}>"
    launch = f"{DEVICE_ALGORITHMS[key.device]}, {policy}"
    if key.ext and key.columns:  # kernels/agent/agent_columns.cuh: KIND 1 COLUMN_STATES, 2 COLUMN_LIFTED
        rev = "true" if key.reverse else "false"
        return {
            "cols_reduce": f"distscan::reduce_state_column_tiles_kernel<{tin}, {tacc}, {op}, 1, {rev}>",
            "cols_carry": f"distscan::carry_column_tiles_kernel<{tacc}, {op}>",
            "cols_incl": f"distscan::scan_state_column_tiles_kernel<{tin}, {tacc}, {tout}, {op}, false, 1, {rev}>",
            "cols_excl": f"distscan::scan_state_column_tiles_kernel<{tin}, {tacc}, {tout}, {op}, true, 1, {rev}>",
            "lifted_reduce": f"distscan::reduce_state_column_tiles_kernel<{tacc}, {tacc}, {op}, 2, false>",
            "lifted_excl": f"distscan::scan_state_column_tiles_kernel<{tacc}, {tacc}, {tacc}, {op}, true, 2, false>",
        }
    if key.ext:
        rev = "true" if key.reverse else "false"
        return {
            "ext_incl": f"distscan::scan_ext_kernel<{tin}, {tacc}, {tout}, {op}, false, {launch}, {rev}>",
            "ext_excl": f"distscan::scan_ext_kernel<{tin}, {tacc}, {tout}, {op}, true, {launch}, {rev}>",
            "reduce_tiles": f"distscan::reduce_tiles_kernel<{tin}, {tacc}, {op}, {tile_policy}, {rev}>",
            "reduce_final_ordered": f"distscan::reduce_final_ordered_kernel<{tacc}, {op}>",
        }

    return {
        "scan_incl": f"distscan::scan_tiles_kernel<{tin}, {tacc}, {tout}, {op}, false, {launch}>",
        "scan_excl": f"distscan::scan_tiles_kernel<{tin}, {tacc}, {tout}, {op}, true, {launch}>",
        "reduce_partials": f"distscan::reduce_partials_kernel<{tin}, {tacc}, {op}>",
        "reduce_final": f"distscan::reduce_final_kernel<{tacc}, {op}>",
        "add_offset": f"distscan::add_offset_kernel<{tout}, {tacc}, {op}>",
        "add_offset_columns": f"distscan::add_offset_columns_kernel<{tout}, {tacc}, {op}>",
        "tiles_reduce": f"distscan::reduce_column_tiles_kernel<{tin}, {tacc}, {op}>",
        "tiles_carry": f"distscan::carry_column_tiles_kernel<{tacc}, {op}>",
        "tiles_incl": f"distscan::scan_column_tiles_kernel<{tin}, {tacc}, {tout}, {op}, false>",
        "tiles_excl": f"distscan::scan_column_tiles_kernel<{tin}, {tacc}, {tout}, {op}, true>",
        "add_tile_prefix": f"distscan::add_tile_prefix_kernel<{tout}, {tacc}, {op}>",
    }


def options(key: ModuleKey) -> tuple:
    _, kdir = _source()
    opts = ["-std=c++17", "-DDISTSCAN_NVRTC", f"-I{kdir}"]
    if np.dtype(np.float16) in (key.in_dtype, key.out_dtype):
        opts.append("-DDISTSCAN_HALF")
    if key.coef_one != COEF_ROWS:  # one coefficient for every item (a tame one: |a| <= 1)
        opts.append("-DDISTSCAN_COEF_ONE=1")
    if key.coef_one == COEF_TAME:
        opts.append("-DDISTSCAN_COEF_TAME=1")
    return tuple(opts)


_MODULES: dict = {}


def get_functions(key: ModuleKey, device_id: int) -> dict:
    """The compiled kernels (``cupy.RawKernel`` by role) of ``key`` on a device, memoized."""

    cache_key = (device_id, key)
    funcs = _MODULES.get(cache_key)
    if funcs is None:
        import cupy

        src, _ = _source()
        by_role = names(key)
        with cupy.cuda.Device(device_id):
            kernel = raw_module(src + key.source, options(key), tuple(by_role.values()))
            funcs = {role: kernel(expr) for role, expr in by_role.items()}
        _MODULES[cache_key] = funcs
    return funcs


def _precompile_worker(keys):
    import cupy  # noqa: F401  (each worker compiles into the disk cache)

    for key in keys:
        get_functions(key, 0)
    return len(keys)


def precompile(keys, processes: int | None = None) -> None:
    """Compile many modules in parallel processes, filling the disk cache (``modules.cache_dir``).

    NVRTC is single-threaded per program; a test run that needs ~100 modules
    compiles them ``processes`` at a time, then every process loads them from the
    disk cache.  Workers compile for device 0 (the architecture of the GPUs of one
    machine is the same).
    """
    import multiprocessing as mp

    keys = list(dict.fromkeys(keys))
    if not keys:
        return
    processes = processes or min(len(keys), os.cpu_count() or 1, 16)
    chunks = [keys[i::processes] for i in range(processes)]
    ctx = mp.get_context("spawn")
    with ctx.Pool(processes) as pool:
        pool.map(_precompile_worker, [c for c in chunks if c])

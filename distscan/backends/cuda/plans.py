"""Which kernel module scans what: a :class:`Plan` per (device, dtypes, operator, tile shape,
algorithm), with its launch facts (look-ahead's shared memory and persistent grid, the
look-back's reduction lead), and the tile shape and launch shape of a scan of n items."""

from __future__ import annotations

import math

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from . import compile as cc
from .device import cp, device_info
from .settings import SETTINGS

PLANS: dict = {}


class Plan:
    __slots__ = ("funcs", "tuning", "kacc", "k_words", "in_size", "out_size", "tile", "window", "threads", "identity_k",
                 "device", "la_smem", "la_grid", "lead", "large_key", "large", "reduce_grid")


def status_words(itemsize: int) -> int:
    """64-bit status words per published value (StatusWord::K, kernels/tile/tile_state.cuh)."""
    return 1 if itemsize <= 4 else ((itemsize + 3) // 4 + 1) // 2 * 2


def persistent_grid(fn, threads: int, smem: int, sms: int, fallback: int) -> int:
    """Blocks of a persistent kernel: as many as fit on every SM at once (``fallback`` per SM
    without an occupancy query in this CuPy: the register budget's count); 0 if none fits."""
    try:
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, smem)
    except Exception:  # noqa: BLE001
        per_sm = fallback
    return max(0, int(per_sm)) * sms


def _setup_lookahead(plan: Plan, dev_id: int, in_dtype, out_dtype) -> None:
    """Dynamic shared memory and persistent grid of a "lookahead" plan (0 for the others).

    Raises
    ------
    RuntimeError
        If the kernel's shared-memory ring does not fit one block on this GPU's SMs.
    """
    plan.la_smem = plan.la_grid = 0
    if plan.device != "lookahead":
        return
    smem = plan.tuning.lookahead_smem(in_dtype, out_dtype)
    plan.la_grid = lookahead_grid(plan, ("scan_incl", "scan_excl"), smem, dev_id)
    plan.la_smem = smem


def lookahead_grid(plan: Plan, roles: tuple, smem: int, dev_id: int) -> int:
    """The persistent grid of a look-ahead plan's kernels ``roles`` (the first's occupancy), each
    given ``smem`` bytes of dynamic shared memory first.

    Raises
    ------
    RuntimeError
        If the ring does not fit one block on this GPU's SMs.  The driver refuses a size past the
        GPU's limit with CUDA_ERROR_INVALID_VALUE, which the complex128 recurrences' ring (330 KB
        on an H100's 227) raised as it was for ``algorithm="lookahead"`` (2026-11-28).
    """
    try:
        for role in roles:
            plan.funcs[role].max_dynamic_shared_size_bytes = smem
        grid = persistent_grid(plan.funcs[roles[0]], plan.threads, smem, device_info(dev_id)["sms"],
                               plan.tuning.min_blocks)
    except Exception:  # noqa: BLE001 - the driver refuses the size
        grid = 0
    if grid == 0:
        raise RuntimeError(f"the look-ahead scan kernel needs {smem} bytes of shared memory per block, "
                           f"more than GPU {dev_id} gives")
    return grid


# "auto" runs the look-ahead kernel (kernels/agent_lookahead.cuh) where a scan moves (reads plus
# writes) lookahead_min_bytes() or more and the kernel's shared-memory ring fits the GPU, and the
# look-back (with the reduction lead) under that: by the wider of the input and output items,
# from 2^25 bytes when it has 8 bytes or more (2^21 8-byte items), else from 2^26 (2^23 4-byte
# items).  Measured, sums, look-ahead / "auto" of before (the look-back, with its lead from 2^23
# items), H100 and H200 in one bench_gpu run each (benchmarks/RESULTS.md, "Issue 10, thirteenth
# pass"): 8-byte 2^20 0.89-0.90 and 0.87, 2^21 1.06-1.09 and 1.06, 2^22 1.03-1.05 and 1.03-1.08;
# 4-byte 2^22 0.93 and 0.90-0.92, 2^23 1.06 and 0.98-1.00.  The look-ahead reads each tile once
# into shared memory; the lead kernel reads it twice (the second time from L2).
LOOKAHEAD_MIN_BYTES = 1 << 26
LOOKAHEAD_MIN_BYTES_WIDE = 1 << 25  # items of 8 bytes or more


# Operators whose application costs far more than moving an item (logaddexp: an exp and a log1p
# each; gcd and lcm: Euclid's loop).  The look-ahead kernel applies the operator about three times
# per item (the reduction of the tiles ahead, the thread's scan, the prefix added at the store), and
# so does the look-back with a reduction lead; the plain look-back (no lead) twice.  For sums that
# is free (all run at copy speed); for these it is the time.  So "auto" scans them with the plain
# look-back at every size.  Measured, H200, 2^27, GPU time (benchmarks/RESULTS.md, "Costly
# operators: the look-back without a lead"): logaddexp float32 676 GB/s with the look-ahead against
# 1635 with the plain look-back (torch.logcumsumexp 1047), float64 206 against 599 (torch 335);
# gcd int64 (gcds of 6) 481 against 1286.  lcm is gcd's loop plus a division and a product: listed
# with it.  Not listed: the compensated sum (on the look-back since its runs are summed Neumaier's
# way, with a shape and a lead of its own: ext_device, tuning.choose_tuning), max and min
# (float32 2730 against 2960: the plain look-back 8 % faster at 2^27, but their lead was tuned at
# smaller sizes, not measured for this).
COSTLY_FUNCTORS = frozenset({"LogAddExp", "LogAddExp2", "Gcd", "Lcm"})


def costly(op: Op) -> bool:
    """Whether "auto" scans ``op`` with the plain look-back (no look-ahead, no lead):
    :data:`COSTLY_FUNCTORS`."""
    return op.functor in COSTLY_FUNCTORS


def lookahead_min_bytes(in_size: int, out_size: int) -> int:
    """Bytes moved from which "auto" scans items of these sizes with the look-ahead kernel."""
    return LOOKAHEAD_MIN_BYTES_WIDE if in_size >= 8 or out_size >= 8 else LOOKAHEAD_MIN_BYTES


def uses_lookahead(n: int, in_size: int, out_size: int) -> bool:
    """Whether "auto" scans n items of these sizes (bytes) with the look-ahead kernel."""
    return n * (in_size + out_size) >= lookahead_min_bytes(in_size, out_size)


def large_plan(plan: Plan) -> Plan:
    """The plan "auto" uses where :func:`uses_lookahead`: the look-ahead one where it fits, else
    ``plan`` itself.  Forcing the lead (``SETTINGS.lead``) keeps the lead kernel."""
    if plan.large_key is None or SETTINGS.lead is not None:
        return plan
    if plan.large is None:
        try:
            plan.large = plan_of(*plan.large_key, "lookahead")
        except RuntimeError:
            plan.large = plan
    return plan.large


# The look-back's reduction runs ahead of its scans by the tiles that stream through DRAM in
# LEAD_SECONDS (Little's law: the latency to cover times the bandwidth; tile bytes = read +
# written).  Measured, 4- and 8-byte sums at 2^29 as a ratio to copy (benchmarks/RESULTS.md,
# "Issue 10"): H100 (3.35 TB/s) 66 tiles 0.90-0.93, 132 0.92-0.95, 198 0.94-0.95, 264
# 0.92-0.93, 528 and more 0.66-0.72; H200 (4.9 TB/s) 132 0.73-0.83, 198 0.77-0.83, 264
# 0.82-0.84, 330 0.82-0.84.  The collapse past ~400 tiles is the L2: the tiles between a
# reduction and its scan, read, re-read and written, no longer fit, so the scan reads DRAM
# again; the cap keeps that traffic within LEAD_L2_SHARE of the L2.  Without a bandwidth
# figure: LEAD_PER_SM tiles per SM.  Below LEAD_MIN_LEADS leads of tiles the pipeline's fill
# and drain cost more than the waits it removes (2^20 items: 0.53-0.56 of copy with a lead
# against 0.57-0.63 without).
LEAD_SECONDS = 3.75e-6
LEAD_PER_SM = 1.5
LEAD_L2_SHARE = 0.5
LEAD_MIN_LEADS = 3
# Scans with flags or coefficients do more work per item (a state's combine, its auxiliary loads),
# and a shorter lead keeps their re-read tiles in L2: half the lead.  Measured at 2^27 with the
# state shapes of tuning.choose_tuning (benchmarks/sweep_state_tiles.py; RESULTS.md, "State
# scans' tiles"), as a ratio to copy with a quarter | a half | the whole lead: H100 segmented
# float32 0.85 | 0.84 | 0.87 (4096-item tiles) and reversed 0.87 | 0.89 | 0.89, int64 0.84 | 0.88 |
# 0.84, recurrence float32 0.79 | 0.86 | 0.82 (2048-item tiles); H200 segmented float32 - | 0.75 |
# 0.73, int64 - | 0.69 | 0.68, recurrence float32 0.67 | 0.63 | 0.63 (a quarter better there).
STATE_LEAD_SHARE = 0.5


def setup_lead(plan: Plan, dev_id: int, algorithm: str, share: float = 1.0) -> None:
    """plan.lead: the reduction lead of an "auto" look-back plan (0: one tile per block); ``share``
    of the time-based lead (STATE_LEAD_SHARE for state scans)."""
    plan.lead = 0
    if algorithm != "auto" or plan.device != "lookback" or share == 0:
        return
    info = device_info(dev_id)
    if info["dram_bw"]:
        lead = round(share * LEAD_SECONDS * info["dram_bw"] / (plan.tile * (plan.in_size + plan.out_size)))
    else:
        lead = round(share * LEAD_PER_SM * info["sms"])
    fit = int(LEAD_L2_SHARE * info["l2"]) // (plan.tile * (2 * plan.in_size + plan.out_size))
    plan.lead = max(1, min(lead, fit))


def lead_of(plan: Plan, num_tiles: int) -> int:
    if SETTINGS.lead is not None:
        return SETTINGS.lead if plan.lead else 0
    return plan.lead if num_tiles >= LEAD_MIN_LEADS * plan.lead else 0


def plan_of(dev_id: int, in_dtype, types: ScanTypes, op: Op, algorithm: str = "auto") -> Plan:
    key = (dev_id, in_dtype, types.acc, types.result, op.functor, SETTINGS.tuning, algorithm)
    plan = PLANS.get(key)
    if plan is None:
        mkey = module_key(in_dtype, types, op, algorithm)
        kacc, shape, device = mkey.acc_dtype, mkey.tuning, mkey.device
        plan = Plan()
        plan.funcs = cc.get_functions(mkey, dev_id)
        plan.tuning = shape
        plan.kacc = kacc
        plan.k_words = status_words(kacc.itemsize)
        plan.in_size = np.dtype(in_dtype).itemsize
        plan.out_size = np.dtype(types.result).itemsize
        plan.tile = shape.tile_items
        plan.window = shape.window
        plan.threads = shape.launch_threads(device)
        plan.identity_k = kacc.type(op.neutral(types.acc))
        plan.device = device
        _setup_lookahead(plan, dev_id, in_dtype, types.result)
        setup_lead(plan, dev_id, algorithm, 0.0 if costly(op) else 1.0)
        plan.large_key = (dev_id, in_dtype, types, op) if algorithm == "auto" and not costly(op) else None
        plan.large = None
        plan.reduce_grid = None
        PLANS[key] = plan
        ADD_PLANS.setdefault((dev_id, types.result, kacc, op.functor, SETTINGS.tuning), plan)
    return plan


# combine() needs only the add kernels, which depend on (output, accumulator, operator):
# reuse any module already compiled for them instead of compiling one more.
ADD_PLANS: dict = {}


def add_plan(dev_id: int, types: ScanTypes, op: Op) -> Plan:
    kacc = cc.kernel_acc_dtype(types.acc)
    plan = ADD_PLANS.get((dev_id, types.result, kacc, op.functor, SETTINGS.tuning))
    return plan if plan is not None else plan_of(dev_id, types.result, types, op)


def tuning(in_dtype, types: ScanTypes, algorithm: str = "auto", *, default: bool = False) -> cc.Tuning:
    """The tile shape of the scan kernel ``algorithm`` names; ``default``: the shape chosen
    without ``SETTINGS.tuning``."""
    block, device = cc.kernel_algorithm(algorithm)
    return cc.choose_tuning(in_dtype, cc.kernel_acc_dtype(types.acc), types.result,
                            None if default else SETTINGS.tuning, block, device)


def module_key(in_dtype, types: ScanTypes, op: Op, algorithm: str = "auto"):
    """The compile key of one scan (for :func:`distscan.backends.cuda.compile.precompile`)."""
    block, device = cc.kernel_algorithm(algorithm)
    return cc.ModuleKey(np.dtype(in_dtype), cc.kernel_acc_dtype(types.acc), np.dtype(types.result), op.functor,
                        tuning(in_dtype, types, algorithm), block, device, source=op.source)


def error_depth(n: int, in_dtype, types: ScanTypes) -> int:
    """``L`` of the accuracy bound in this module's docstring, for a scan of ``n`` items."""
    shapes = [tuning(in_dtype, types)]
    if uses_lookahead(n, np.dtype(in_dtype).itemsize, np.dtype(types.result).itemsize):  # its tile shape
        shapes.append(tuning(in_dtype, types, "lookahead"))
    # thread: ITEMS; warp: 5 (lanes) + block: log2(threads) (warps in order, <= threads/32);
    # look-back: 5 + 5 (two butterflies) + 3 (anchor, sub-windows, sub-window, own prefix);
    # one anchor hop per window.
    return max(t.items + int(math.log2(t.block_threads)) + 16 + -(-max(n, 1) // (t.tile_items * t.window))
               for t in shapes)


def is_compensated(op: Op) -> bool:
    """Whether ``op`` is the compensated sum (its state's kind)."""
    return op.state is not None and op.state.kind == "compensated"


def ext_device(op: Op, algorithm: str, n: int, in_size: int, out_size: int, result_kind: str,
               coef_mode: int = 0, *, reverse: bool = False, fast_dram: bool = False) -> str:
    """The device algorithm of an extended scan (``backends/cuda/extended``): a named one as asked
    for; for "auto", the look-back for operators with auxiliary inputs but those of
    :func:`aux_looks_ahead`, for costly ones (:func:`costly`) and for compensated sums of states up
    to 16 bytes (their look-back shape, tuning.choose_tuning, beats the look-ahead: float32 1.25
    against 1.58 times the plain sum's time, float64 1.45 against 2.30), else as the plain scan
    chooses (:func:`uses_lookahead`).  ``result_kind``: the result dtype's kind, required: the
    choice depends on it, and a caller that guessed would precompile or time another kernel than
    the API's.  ``coef_mode``: how a recurrence's coefficients come (``ModuleKey.coef_one``: 0 an
    array, 1 one coefficient, 2 a tame one; :func:`aux_looks_ahead`); ``reverse``: the scan's
    direction; ``fast_dram``: the device's (:func:`fast_dram`)."""
    if algorithm not in ("auto", "lookback", "lookahead"):
        raise ValueError(f"algorithm={algorithm!r} is for plain forward scans; reverse scans and segmented, "
                         "affine and compensated scans take 'auto', 'lookback' or 'lookahead'")
    if algorithm != "auto":
        return algorithm
    return auto_device(n, in_size, out_size, looks_back(op, in_size, out_size, result_kind, coef_mode,
                                                        reverse=reverse, fast_dram=fast_dram))


def auto_device(n: int, in_size: int, out_size: int, look_back: bool) -> str:
    """:func:`ext_device`'s choice for "auto", ``look_back`` being :func:`looks_back`'s answer (which
    a caller that scans many sizes of one operator finds once)."""
    return "lookahead" if not look_back and uses_lookahead(n, in_size, out_size) else "lookback"


def looks_back(op: Op, in_size: int, out_size: int, result_kind: str, coef_mode: int = 0, *,
               reverse: bool = False, fast_dram: bool = False) -> bool:
    """Whether "auto" scans ``op`` on the look-back at every size (:func:`ext_device`), its
    coefficients coming as ``coef_mode`` says, in the direction and on the device named."""
    aux = op.state is not None and len(op.state.aux) > 0
    return (costly(op) or (is_compensated(op) and in_size <= 8 and out_size <= 8)
            or (aux and not aux_looks_ahead(op, in_size, out_size, result_kind, coef_mode, reverse=reverse,
                                            fast_dram=fast_dram)))


# DRAM from which "auto" takes the look-ahead for the forward float32 recurrence with an array of
# coefficients (aux_looks_ahead): between an H100's 3.35 TB/s, where the look-back is faster, and an
# H200's 4.8, where the look-ahead is (device_info's dram_bw, the peak its clocks give).
FAST_DRAM_BW = 4.0e12


def fast_dram(dev_id: int) -> bool:
    """Whether device ``dev_id``'s DRAM moves at least ``FAST_DRAM_BW`` bytes a second (False
    where CUDA does not report its clock or bus width)."""
    bw = device_info(dev_id)["dram_bw"]
    return bool(bw) and bw >= FAST_DRAM_BW


def aux_looks_ahead(op: Op, in_size: int, out_size: int, result_kind: str, coef_mode: int = 0, *,
                    reverse: bool = False, fast_dram: bool = False) -> bool:
    """Whether "auto" takes the look-ahead kernel, from the sizes where the plain scan does, for an
    operator with flags or coefficients (its ring stages them beside the items, and each thread's
    run is scanned again from the stage: RESCAN, kernels/agent/agent_lookahead.cuh); the forward
    segmented scans of 2- and 4-byte items below.

    For the float64 recurrence without segments: on the H100 at 2^27 it reads 0.914 of copy
    there against the look-back's 0.791.  The look-back stays faster for the reversed segmented
    sums, the 8-byte segmented ones, the float32 recurrence (0.677 against 0.844) and the complex64
    one (0.342 against 0.736) (RESULTS.md, "Each thread's run scanned again from the stage").  On
    the H200 the float64 recurrence reads 0.715 on the look-ahead (2026-11-27) against the
    look-back's 0.698 (2026-11-25), and the other recurrences lose more there (RESULTS.md, "The
    float32 recurrence's RESCAN gate, ...").

    The float32 recurrence of one tame coefficient (``coef_mode`` 2: an EMA's one ``a`` with
    ``|a| <= 1``, the coefficient a word the kernels read for every item, its state the items
    alone) takes the look-ahead in both directions: H200, look-ahead time over look-back time,
    bit for bit the same results, forward 0.97 at 2^24, 0.92 at 2^27, 0.91 at 2^29, reversed 0.99,
    0.93, 0.92 (benchmarks/logs/2026-11-29-s53/exp1-probe.txt: 0.79 of copy against 0.73 at 2^27).
    Segmented, the look-back stays faster (0.92-0.95 of the look-ahead's time forward).  One
    untamed ``a`` stays on the look-back.

    The forward float32 recurrence with an array ``a`` takes the look-ahead on a device of fast DRAM
    (``fast_dram``: an H200): 1.04-1.05x faster there at 2^24-2^29 (RESULTS.md, "A single-read
    float32 recurrence: ...", its A/B of "auto" against the look-ahead), reversed 4-5 % slower; on an
    H100 the look-back was the faster (0.844 of copy against 0.677, above)."""
    if op.state is None or in_size != out_size:
        return False
    if op.state.kind == "affine":
        if result_kind != "f" or in_size not in (4, 8):
            return False
        return in_size == 8 or coef_mode == cc.COEF_TAME or (coef_mode == cc.COEF_ROWS and fast_dram and not reverse)
    # The forward segmented scans of 2- and 4-byte items whose runs fold by their flags' bits
    # (RUN_BITS: not gcd and lcm, whose identity is marked) since the forty-first session.  H200,
    # 2^24-2^29 (bench_segmented_device.py): the look-ahead takes 0.82-0.95 of the look-back's time
    # for float32 sum, max and nansum, int32 sum and max and the float16 sum (float32 sum at 2^27:
    # 0.851 of copy against 0.800); H100: the float32 sum 0.941-0.954 against 0.934-0.944.  The
    # 8-byte ones stay behind from 2^27 (int64 0.701 against 0.745, float64 0.709 against 0.726), as
    # int8 into int64 does (RESULTS.md, "The forward segmented scans on the look-ahead").
    return op.state.kind == "segmented" and in_size in (2, 4) and not op.state.base.raw_first

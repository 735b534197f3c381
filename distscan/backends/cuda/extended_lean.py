"""The one-rank call of a reverse or state scan (segmented, affine, compensated) without the
general route's frames: what :func:`distscan.backends.cuda.extended.scan` does for the call
kinds' common case, as one function made once per plan (``ScanPlan.one_rank_state``).

A 2^16 call of these scans cost 17-35 µs of host time on the H100's host against 6-8 for the plain
sum's hot path (benchmarks/RESULTS.md, "The one-rank state scans' lean call"): the layers
``ScanPlan.run`` → ``general.scan`` → ``general._scan`` → ``extended.scan`` and the checks each
repeats, which the call kind has already made.

Assumptions, each checked on every call by the caller (``distscan._kinds.Kind.run`` and
``Kind.aux``, through the backend's :func:`distscan.backends.cuda.general.lean_arrays`):
``x`` is a contiguous 1-D CuPy array of the plan's input dtype on the current device; ``out`` is
None or a contiguous CuPy array of ``x``'s shape, device and the result dtype that overlaps
neither ``x`` nor the auxiliary inputs; the segment flags are a bool CuPy array of ``x``'s shape
on its device (any layout), the coefficients a CuPy array of the accumulator dtype of ``x``'s
shape on its device, contiguous or one coefficient broadcast (``ext_states.coefficient_row``).
There is no ``initial`` and no total; a seed (a rank's offset, a host state of the plan) only
where the plan passes one (``ScanPlan._seeded_lean``: the same arrays, checked by the same call
kinds, on many ranks).  Anything this function does not take (an empty part, a stream capturing
a graph) goes the plan's own route (``ScanPlan.run``, or ``be.scan`` with the seed), which gives
the same result or raises the same error.  The entries it keeps (:data:`LEAN_EXT`) hold what
``extended.EXT_CALLS`` holds, under a key of the same fields (the scanner stands for the dtypes,
operator, direction and exclusiveness it was made for).
"""

from __future__ import annotations

from ..._dtypes import ScanTypes
from ...ops import Op
from .absorbing import absorbs
from .compile import COEF_MODES, COEF_ROWS
from .device import cp, is_capturing, remember
from .ext_states import aux_places, coefficient_row, has_gpu_form
from .extended import EXT_CALLS, ext_call
from .launch import write_first_row
from .plans import auto_device, fast_dram, looks_back
from .scratch import scratch_of
from .settings import SETTINGS

# (scanner, device id, device algorithm, SETTINGS.tuning, SETTINGS.lead, one coefficient) -> the
# ExtCall of extended.EXT_CALLS for that key's fields (cleared with it: clear_caches).
LEAN_EXT: dict = {}


def lean_state_scanner(op: Op, types: ScanTypes, exclusive: bool, reverse: bool, algorithm: str, general):
    """The scan of one rank's part (see the module docstring) as a function of ``(x, out, aux,
    seed=None)`` that returns ``out`` (or the new result), or None where no call of this kind
    takes the lean route: a segmented float product (its zeros are repaired on the host), gcd
    and lcm (whose first item ``general.scan`` writes back), a declared operator without a GPU
    form, a named block algorithm.  ``general(x, out, aux)``: the plan's own route, for the
    calls it does not take; None: such a call returns None (the caller's route then)."""
    raw_first = op.state is None and op.core.raw_first
    if (cp is None or not has_gpu_form(op) or raw_first or absorbs(op, types)
            or algorithm not in ("auto", "lookback", "lookahead")):
        return None
    in_dtype, result = types.input, types.result
    in_size, out_size = in_dtype.itemsize, result.itemsize
    # auto_device's answer for every size, by the coefficients' mode (coefficient_row) and the device's DRAM
    look_back = {(mode, fast): looks_back(op, in_size, out_size, result.kind, mode, reverse=reverse, fast_dram=fast)
                 for mode in COEF_MODES for fast in (False, True)}
    # Only some choices depend on the DRAM (plans.aux_looks_ahead): ask the device only for those.
    dram_matters = any(look_back[mode, False] != look_back[mode, True] for mode in COEF_MODES)
    flags_at, coef_at = aux_places(op)
    me = object()  # this scanner in LEAN_EXT's keys

    def call(x, out, aux, seed=None):
        n = x.shape[0]
        stream_ptr = cp.cuda.get_current_stream().ptr
        if not n or is_capturing(stream_ptr):  # the general route flags an empty part, refuses a capture
            return None if general is None else general(x, out, aux)
        dev_id = x.data.device_id
        coef = aux[coef_at] if coef_at >= 0 else None
        row, mode = (None, COEF_ROWS) if coef is None or coef._c_contiguous else coefficient_row(coef)
        if algorithm == "auto":
            device = auto_device(n, in_size, out_size, look_back[mode, dram_matters and fast_dram(dev_id)])
        else:
            device = algorithm
        key = (me, dev_id, device, SETTINGS.tuning, SETTINGS.lead, mode)
        ent = LEAN_EXT.get(key)
        if ent is None:  # extended.scan's entry of the same fields (made here if it has none)
            ext_key = (dev_id, in_dtype, types, op, exclusive, reverse, device, SETTINGS.tuning, SETTINGS.lead,
                       mode)
            ent = EXT_CALLS.get(ext_key) or ext_call(ext_key, dev_id, in_dtype, types, op, exclusive, reverse,
                                                      device, mode)
            remember(LEAN_EXT, key, ent, 4 * SETTINGS.max_stream_entries)
        if out is None:
            out = cp.empty((n,), result)
        flags_ptr = coef_ptr = 0
        if flags_at >= 0:
            flags = aux[flags_at]
            if not flags._c_contiguous:
                flags = cp.ascontiguousarray(flags)  # (held to the end of the call, its launch queued first)
            flags_ptr = flags.data.ptr
        if coef is not None:
            coef_ptr = (coef if row is None else row).data.ptr
        grid, smem, lead, num_tiles = ent.shape(n)
        out_ptr, plan = out.data.ptr, ent.plan
        scratch = scratch_of(dev_id, stream_ptr)
        seed_bytes = None if seed is None else ent.seed_rows(seed, 1).tobytes()  # by value (ExtCall)
        with scratch.lock:
            scratch.prepare(num_tiles, plan.window, plan.k_words)
            ent.run(scratch, grid, smem, stream_ptr, x.data.ptr, out_ptr, n, seed_bytes, 0, lead, flags_ptr, coef_ptr,
                    None)
        if ent.first_row is not None and seed is None:
            # extended.scan's: the identity where the kernels start from the neutral element
            write_first_row(out_ptr + (n - 1 if reverse else 0) * ent.first_row.itemsize, ent.first_row, 1,
                            stream_ptr)
        return out
    return call


def seeded_state_scanner(op: Op, types: ScanTypes, exclusive: bool, reverse: bool, algorithm: str):
    """:func:`lean_state_scanner`'s function for a part on many ranks (``ScanPlan._seeded_lean``):
    ``(x, out, aux, seed)``, None where a call takes ``be.scan`` instead (or no call of the kind)."""
    return lean_state_scanner(op, types, exclusive, reverse, algorithm, None)

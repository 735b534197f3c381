"""The CPU state loops as a plan's fused calls on many ranks run them (:mod:`distscan.dist.lean`):
one column, the loop calls made straight, each bound once per plan.

A fused call of 1000 elements costs a few microseconds in all, so the frames and checks of the
general route (:meth:`distscan.backends.cpu_states.Loops.scan`: the auxiliary inputs by name,
the kind's branches, numba's dispatch on the types of nine or ten arguments) show in every call.
Here each kind's two halves are closures over what the plan fixed, and each calls its compiled
loop through the overload's entry point: numba's dispatcher spent about a microsecond a call
finding it (2.6 against 1.6 µs for 1000 int64 rows and 1 % flags, the 2-core VM, 2026-11-26).

Assumption, on which the entry points rest: the entry point converts its arguments to the types of
its one signature without checking them (an array of another dtype would be read as this one's),
so every array reaching it has exactly the types the loops were compiled for.  They do: ``x`` comes
from :meth:`Loops.rows` (the accumulator dtype); ``out`` is the plan's own allocation or the
caller's, which ``lean_arrays`` checked to be of the result dtype, and the fused state call exists
only where that is the accumulator dtype (``LeanCalls._new_lean_call``); segment flags and
coefficients come from ``Kind.aux``, which takes flags only as bool arrays of ``x``'s shape and
casts coefficients to the accumulator dtype; seeds are rows of the plan's state dtype, their fields
numpy scalars of the accumulator dtype (``Loops`` compiled the scalars for exactly those); the
rest are the constants made here and Python bools.  tests/dist/test_lean_call.py passes every
other kind of argument beside warm fused calls.  Where numba has no entry point (another version),
the dispatcher is called instead.
"""

from __future__ import annotations

import numpy as np

from ..ops.jit import entry_point as _entry


def first_flagged(flags) -> int:
    """The first set row of ``flags`` (in scan order: a reversed view in a reverse scan), or their
    count where none is.  NumPy's argmax of bools stops at the first set row only where the rows lie
    forwards (2^20 rows: 0.8 us); over a reversed view it reads every row (0.45 ms on the 2-core
    VM), so a long reversed view is searched from its end backwards, in growing windows that lie
    forwards."""
    n = flags.shape[0]
    if n <= 4096 or flags.strides[0] >= 0:
        k = int(flags.argmax()) if n else 0
        return k if n and flags[k] else n
    rows, hi, size = flags[::-1], n, 4096  # rows forwards: the first in scan order is their last
    while hi:
        lo = max(0, hi - size)
        found = np.flatnonzero(rows[lo:hi])
        if found.size:
            return n - 1 - (lo + int(found[-1]))
        hi, size = lo, size * 4
    return n


def fused_halves(loops, reverse: bool, record, last: bool):
    """``(before, after)`` of :meth:`distscan.backends.cpu_states.Loops.fused` (its docstring says
    what each leaves where) for ``loops`` of one column."""
    if loops.kind == "segmented":
        return _segmented(loops, reverse, record, last)
    if loops.kind == "affine":
        return _affine(loops, reverse, record, last)
    return _compensated(loops, reverse, record, last)


def one_rank(loops, reverse: bool, result, general):
    """The scan of a part of one column on one rank from no seed, as a function of ``(x, out,
    aux)`` (``backends.cpu.lean_state_scanner``): the halves of the last rank in scan order
    (:func:`fused_halves`), which leave :meth:`Loops.scan`'s bits in ``out``, with arrays as the
    call kinds check them (this module's assumption).  An empty part goes to ``general``."""
    record = np.empty(1, loops.dtype)  # the carry the halves write, which no rank reads here
    before, after = fused_halves(loops, reverse, record, True)
    rows = loops.rows

    def call(x, out, aux):
        if not x.shape[0]:
            return general(x, out, aux)
        if out is None:
            out = np.empty(x.shape, result)
        x = rows(x)
        before(x, aux, out)
        after(x, aux, None, out)
        return out
    return call


def _in_scan_order(reverse: bool):
    """The views a loop reads of ``(x, out)`` or one more array: mirrored for a reverse scan."""
    if reverse:
        return lambda *arrays: tuple(a[::-1] for a in arrays)
    return lambda *arrays: arrays


def segment_fields(state, seed, flags, ends: bool) -> None:
    """The segment fields of a part's state from its flags (in scan order) and the seed before it:
    forwards ``flag`` (a segment starts inside); in reverse ``inner`` (a segment ends before the
    last row, or the seed's does) and ``end`` (the last row ends one)."""
    # np.count_nonzero, not .any(): a third of the time on a small part (.any() goes through Python)
    if ends:
        inner = np.count_nonzero(flags[:-1]) > 0
        state["inner"] = inner if seed is None else inner | seed["inner"] | seed["end"]
        state["end"] = flags[-1]
    else:
        any_flag = np.count_nonzero(flags) > 0
        state["flag"] = any_flag if seed is None else any_flag | seed["flag"]


def _segmented(loops, reverse: bool, record, last: bool):
    """A segmented scan: scanned from no seed before the exchange on every rank (the last too: its
    rows before the first start are rescanned after it), then from the seed up to the first row
    that starts afresh (forwards the first flagged row; in scan order of a reverse scan the row
    after the first flagged one, or row 0 where the seed ends a segment).  The last rank in scan
    order (and one rank alone) writes only the value of its record: no rank reads its carry, so
    it skips the count of its flags and a float product's pass over its tail."""
    scan, order, ends, absorbs = _entry(loops._scan), _in_scan_order(reverse), loops.state.ends, loops.absorbs
    zero, first, neutral = loops.zero, loops.first1, loops.neutral
    tail = loops._tail if absorbs else None
    seed_flag = "end" if ends else "flag"

    def before(x, aux, out):
        x, flags, out = order(x, aux[0], out.reshape(x.shape))
        record["value"] = scan(x, flags, out, zero, False, False, zero, False, first, zero)
        if last:
            return
        segment_fields(record, None, flags, ends)
        if absorbs:
            tail(x, flags, neutral, False, record, False)

    def after(x, aux, seed, out):
        if seed is None:
            return
        x, flags, out = order(x, aux[0], out.reshape(x.shape))
        fresh = first_flagged(flags)
        if ends and fresh < x.shape[0]:
            fresh += 1
        if ends and seed["end"][0]:  # the seed ends a segment: the first row starts one
            fresh = 0
        if fresh:
            scan(x[:fresh], flags[:fresh], out[:fresh], seed["value"][0], bool(seed[seed_flag][0]), True, zero,
                 False, first, zero)
    return before, after


def _affine(loops, reverse: bool, record, last: bool):
    """A linear recurrence: with segments as a segmented scan (above); without them every rank but
    the last in scan order scans from no seed before the exchange (the state after its last row is
    its carry: one template, bit for bit), and the ranks with a seed scan again after it."""
    scan, order, zero, falses = _entry(loops._scan), _in_scan_order(reverse), loops.zero, loops.falses
    segments = loops.state.segments
    ends = segments == "ends"

    def coefficients(a, n):
        return a if a.ndim == 2 else a.reshape(n, 1)

    if segments:
        def before(x, aux, out):
            # (aux: the coefficients and the flags, in the state's order: Loops._inputs)
            coef, flags = _coef_flags(loops, aux)
            x, coef, flags, out = order(x, coefficients(coef, x.shape[0]), flags, out.reshape(x.shape))
            record["a"], record["b"] = scan(x, coef, flags, out, zero, zero, False, False, zero, False)
            if last:  # (no rank reads its carry: as in _segmented)
                return
            segment_fields(record, None, flags, ends)

        def after(x, aux, seed, out):
            if seed is None:
                return
            coef, flags = _coef_flags(loops, aux)
            x, coef, flags, out = order(x, coefficients(coef, x.shape[0]), flags, out.reshape(x.shape))
            fresh = first_flagged(flags)
            if ends and fresh < x.shape[0]:
                fresh += 1
            if ends and seed["end"][0]:
                fresh = 0
            if fresh:
                scan(x[:fresh], coef[:fresh], flags[:fresh], out[:fresh], seed["a"][0], seed["b"][0],
                     bool(seed["end"][0]) if ends else False, True, zero, False)
        return before, after

    def before(x, aux, out):
        if not last:
            x, coef, out = order(x, coefficients(aux[0], x.shape[0]), out.reshape(x.shape))
            record["a"], record["b"] = scan(x, coef, falses, out, zero, zero, False, False, zero, False)

    def after(x, aux, seed, out):
        if seed is None and not last:
            return  # scanned from no seed before the exchange
        x, coef, out = order(x, coefficients(aux[0], x.shape[0]), out.reshape(x.shape))
        if seed is None:
            scan(x, coef, falses, out, zero, zero, False, False, zero, False)
        else:
            scan(x, coef, falses, out, seed["a"][0], seed["b"][0], False, True, zero, False)
    return before, after


def _coef_flags(loops, aux):
    """The coefficients and the flags of a segmented recurrence's ``aux`` (in the state's order)."""
    names = loops.state.aux
    return (aux[0], aux[1]) if names[0] != "segments" else (aux[1], aux[0])


def _compensated(loops, reverse: bool, record, last: bool):
    """A compensated sum: as a recurrence without segments (above)."""
    scan, order, first = _entry(loops._scan), _in_scan_order(reverse), loops.first1
    neutral_s, neutral_e = loops.neutral1

    def before(x, aux, out):
        if not last:
            x, out = order(x, out.reshape(x.shape))
            record["s"], record["e"] = scan(x, out, neutral_s, neutral_e, False, first)

    def after(x, aux, seed, out):
        if seed is None and not last:
            return
        x, out = order(x, out.reshape(x.shape))
        if seed is None:
            scan(x, out, neutral_s, neutral_e, False, first)
        else:
            scan(x, out, seed["s"][0], seed["e"][0], True, first)
    return before, after

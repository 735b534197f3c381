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
    count where none is, by NumPy.  NumPy's argmax of bools stops at the first set row only where
    the rows lie forwards (2^20 rows: 0.8 us); over a reversed view it reads every row (0.45 ms on
    the 2-core VM), so a long reversed view is searched from its end backwards, in growing windows
    that lie forwards."""
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


# Rows the compiled search reads before NumPy's takes the rest (_first_set).  The compiled loop
# costs 0.4 us a call and 0.6 ns a row; NumPy's, about 1 us a call and 0.01 ns a row forwards
# (argmax: 11 us for 2^20 rows without a flag, against the loop's 648; the 2-core VM).
COMPILED_ROWS = 1024


def _first_set(loops):
    """The first set flag's row of a part's flags in scan order, or their count where none is:
    the loops' compiled search (``Loops._first`` through its entry point, which takes exactly a
    bool array of one dimension, as the call kinds check them) over the first
    :data:`COMPILED_ROWS` rows, which stops at the flag (a small part's flags, and a part's whose
    segments are short), then :func:`first_flagged` over the rest (a part with no flag near its
    start: the loop would read every row)."""
    find = _entry(loops._first)

    def first(flags):
        n = flags.shape[0]
        if n <= COMPILED_ROWS:
            return find(flags)
        k = find(flags[:COMPILED_ROWS])
        return k if k < COMPILED_ROWS else COMPILED_ROWS + first_flagged(flags[COMPILED_ROWS:])
    return first


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


def _marks(loops, record, ends: bool):
    """``(find, mark)`` of a fused segmented call: ``find(flags)``, the first set flag's row of
    the flags in scan order (their count where none is: :func:`_first_set`), and
    ``mark(flags)``, which writes the part's segment fields into ``record`` as
    :func:`segment_fields` does from no seed (forwards ``flag``: a row is flagged; in reverse
    ``inner``: a row but the last is, and ``end``: the last is) and returns the row ``find`` gave,
    for the seeded half of the same call.  The fields are written through views made here once:
    ``record`` is the exchange's own record (or a row of one), which lives as long as the plan's
    fused call does, and naming a field in each call cost 0.4 us."""
    find = _first_set(loops)
    if ends:
        inner, end = record["inner"], record["end"]

        def mark(flags):
            k = find(flags)
            inner[0] = k < flags.shape[0] - 1
            end[0] = flags[-1]
            return k
    else:
        flag = record["flag"]

        def mark(flags):
            k = find(flags)
            flag[0] = k < flags.shape[0]
            return k
    return find, mark


def _fresh_rows(find, last: bool):
    """``(keep, fresh)`` of a fused segmented call: ``keep(k)``, called by the half before the
    exchange with the row ``mark`` found, and ``fresh(flags)``, the first flagged row for the half
    after it.  Every rank but the last in scan order searched its flags before the exchange (its
    record's segment fields), so the half after it takes that row instead of searching again (for
    2^20 rows without a flag NumPy's search costs about 11 us on the 2-core VM); the last searches
    after the exchange only.

    Assumption: the half after the exchange runs only in the call whose half before it ran to its
    end, on the same flags, and a plan's halves serve one call at a time.  It holds: the plan's
    lean call (:meth:`distscan.dist.lean.LeanCalls._fused_state_scan`) runs ``after`` only where
    ``before`` returned and every rank agreed, with the same ``aux``; a failure in ``before`` or an
    exchange that did not agree takes the general way, which searches again, and the next call's
    ``before`` writes the row anew.  One plan's calls are one communicator's collectives, which
    MPI orders (the exchange's record is shared the same way).  tests/dist/test_lean_call.py
    changes each rank's flags between warm calls (``test_the_fused_segmented_finish_stops_where_
    the_seed_does``: a row kept from an earlier call fails it) and fails calls on one rank beside
    the others' fused calls (``test_one_rank_differs_beside_fused_state_calls``)."""
    if last:
        return None, find
    row = [0]

    def keep(k):
        row[0] = k

    def fresh(flags):
        return row[0]
    return keep, fresh


def _segmented(loops, reverse: bool, record, last: bool):
    """A segmented scan: scanned from no seed before the exchange on every rank (the last too: its
    rows before the first start are rescanned after it), then from the seed up to the first row
    that starts afresh (forwards the first flagged row; in scan order of a reverse scan the row
    after the first flagged one, or row 0 where the seed ends a segment).  The last rank in scan
    order (and one rank alone) writes only the value of its record: no rank reads its carry, so
    it skips the search of its flags and a float product's pass over its tail."""
    scan, order, ends, absorbs = _entry(loops._scan), _in_scan_order(reverse), loops.state.ends, loops.absorbs
    zero, first, neutral = loops.zero, loops.first1, loops.neutral
    tail = loops._tail if absorbs else None
    seed_flag = "end" if ends else "flag"
    find, mark = _marks(loops, record, ends)
    keep, fresh_row = _fresh_rows(find, last)
    value = record["value"]  # (a view made once: _marks says why)

    def before(x, aux, out):
        x, flags, out = order(x, aux[0], out.reshape(x.shape))
        value[0] = scan(x, flags, out, zero, False, False, zero, False, first, zero)
        if last:
            return
        keep(mark(flags))
        if absorbs:
            tail(x, flags, neutral, False, record, False)

    def after(x, aux, seed, out):
        if seed is None:
            return
        x, flags, out = order(x, aux[0], out.reshape(x.shape))
        fresh = fresh_row(flags)
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
    field_a, field_b = record["a"], record["b"]  # (views made once: _marks says why)

    def coefficients(a, n):
        return a if a.ndim == 2 else a.reshape(n, 1)

    if segments:
        find, mark = _marks(loops, record, ends)
        keep, fresh_row = _fresh_rows(find, last)

        def before(x, aux, out):
            # (aux: the coefficients and the flags, in the state's order: Loops._inputs)
            coef, flags = _coef_flags(loops, aux)
            x, coef, flags, out = order(x, coefficients(coef, x.shape[0]), flags, out.reshape(x.shape))
            field_a[0], field_b[0] = scan(x, coef, flags, out, zero, zero, False, False, zero, False)
            if last:  # (no rank reads its carry: as in _segmented)
                return
            keep(mark(flags))

        def after(x, aux, seed, out):
            if seed is None:
                return
            coef, flags = _coef_flags(loops, aux)
            x, coef, flags, out = order(x, coefficients(coef, x.shape[0]), flags, out.reshape(x.shape))
            fresh = fresh_row(flags)
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
            field_a[0], field_b[0] = scan(x, coef, falses, out, zero, zero, False, False, zero, False)

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
    field_s, field_e = record["s"], record["e"]  # (views made once: _marks says why)

    def before(x, aux, out):
        if not last:
            x, out = order(x, out.reshape(x.shape))
            field_s[0], field_e[0] = scan(x, out, neutral_s, neutral_e, False, first)

    def after(x, aux, seed, out):
        if seed is None and not last:
            return
        x, out = order(x, out.reshape(x.shape))
        if seed is None:
            scan(x, out, neutral_s, neutral_e, False, first)
        else:
            scan(x, out, seed["s"][0], seed["e"][0], True, first)
    return before, after

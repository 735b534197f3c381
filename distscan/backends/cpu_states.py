"""Scans and reductions of state operators on the CPU: one sequential pass, compiled by numba.

NumPy has no vectorised form of a scan that restarts (segments), composes affine maps (linear
recurrences) or carries an error term (compensated sums), so each is a loop over the rows
(:mod:`distscan.ops.jit`), visiting the columns of a row together as they lie in memory.  The
loops compute what the formulas of :mod:`distscan.ops.state` define, sequentially, so integer
results are those of a sequential reference bit for bit.

Arguments, in scan order (a reverse scan passes reversed views: numba takes any strides):
``x`` ``(n, w)`` in the accumulator dtype; ``flags`` ``(n,)`` bool; ``coef`` ``(n, w)``;
``seed`` a state row ``(w,)`` or None (the ranks, chunks or tiles before); ``initial`` a value
row ``(w,)`` or None, which segmented and affine scans project (``initial op v``,
``b + a*initial``); ``out`` ``(n, w)`` of the result dtype.  Each returns the state after the
last row (the part's carry).
"""

from __future__ import annotations

import numpy as np

from .._caches import publish
from ..ops.folds import compensated_overflow_code
from ..ops.jit import array_type, base_combine, compile_loop, scalar_type
from ..ops.restarts import carry_rows
from .cpu_fused import fused_halves, segment_fields
from .cpu_state_loops import (AFFINE, AFFINE_ONE, COMPENSATED, COMPENSATED_ONE, DECLARED, FIRST_FLAG, SEGMENTED,
                              SEGMENTED_ONE, SEGMENTED_TAIL, affine_code, nan_lift, numpy_type, tail_code)

def _doubling(states, combine):
    """The inclusive scan of ``states`` ``(n, w)`` along axis 0 by log2(n) vectorised steps of
    ``combine`` (Hillis and Steele): a declared operator numba cannot compile."""
    y = states.copy()
    k = 1
    while k < len(y):
        y[k:] = combine(y[:-k], y[k:])
        k *= 2
    return y


def _declared(x, op, types, exclusive, seed, out, write):
    """A declared operator's scan: numba's loop over its scalar combine, or the log-depth NumPy
    scan of its array combine (declared states, or a combine numba does not compile)."""
    st = op.state
    n, w = x.shape
    has_seed = seed is not None
    first = np.full(w, op.identity(types.acc), types.state) if st.fields is None else None
    if st.fields is None and op.scalar is not None and not isinstance(op.scalar, np.ufunc):
        try:
            fn = compile_loop(DECLARED, "scan", op.scalar, EXCLUSIVE=exclusive, WRITE=write)
            seed_row = np.ascontiguousarray(seed if has_seed else first, types.state).reshape(w)
            return fn(np.ascontiguousarray(x, types.state), out if write else np.empty((0, w), types.state),
                      seed_row, has_seed, first)
        except Exception:  # noqa: BLE001 - numba could not compile the user's function: NumPy below
            pass
    states = st.lift(x, (), types.acc)
    if has_seed:
        states = np.concatenate([np.asarray(seed, states.dtype).reshape(1, w), states])
    if st.fields is None and isinstance(st.user_combine, np.ufunc):  # sequential, as NumPy's accumulate
        scanned = st.user_combine.accumulate(states, axis=0, dtype=states.dtype)
    else:
        scanned = _doubling(states, st.combine)
    if has_seed:
        scanned, before = scanned[1:], scanned[:-1]
    else:
        before = np.concatenate([np.full((1, w), st.neutral(types.acc), states.dtype), scanned[:-1]])
    if write:
        values = st.project(before if exclusive else scanned)
        if exclusive and not has_seed and st.fields is None:
            values[0] = first
        out[...] = values
    return np.array(scanned[-1])


def find_flag(flags, lo: int, last: bool, block: int = 1 << 16) -> int:
    """The index of the last (``last``) or first true flag of ``flags[lo:]`` (a host array, rows
    first), or -1: block by block from that end, so that a flag near it is found without reading
    the rest (:func:`distscan.ops.restarts.carry_rows`)."""
    n = flags.shape[0]
    spans = ((max(lo, hi - block), hi) for hi in range(n, lo, -block)) if last else \
        ((start, min(n, start + block)) for start in range(lo, n, block))
    for start, stop in spans:
        rows = np.asarray(flags[start:stop])
        hits = np.flatnonzero(rows if rows.ndim == 1 else rows.reshape(stop - start, -1).any(axis=1))
        if hits.size:
            return start + int(hits[-1] if last else hits[0])
    return -1


def _constant(value, w: int, dtype) -> np.ndarray:
    """A read-only row of ``w`` times ``value`` (a loop's seed, start or projection when a call
    gives none)."""
    row = np.full(w, value, dtype)
    row.flags.writeable = False
    return row


# The state kinds' loops (backends/cpu_state_loops.py; a declared operator's are its own: _declared).
_TEMPLATES = {"segmented": SEGMENTED, "affine": AFFINE, "compensated": COMPENSATED}
_ONE_COLUMN = {"segmented": SEGMENTED_ONE, "affine": AFFINE_ONE, "compensated": COMPENSATED_ONE}


class Loops:
    """A state operator's two loops for one kind of scan (operator, dtypes, exclusive, ``w``
    columns), made once: the carry pass (writes nothing) and the scan, each compiled for exactly
    the arguments it is called with (:func:`distscan.ops.jit.compile_loop`'s ``signature``:
    inputs of any layout, read-only or not), and their constant rows.

    Assumption, on which distscan.dist.plan drops the agreement after a CPU state scan's finish:
    once made, :meth:`scan` raises nothing and compiles nothing, whatever this rank's part is,
    for arguments as the plan gives them: ``x`` from :meth:`rows` (the accumulator dtype, any
    layout), segment flags ``(n,)`` bool and coefficients ``(n, w)`` (or ``(n,)`` for one column)
    of the accumulator dtype (``Part`` and the call-kind cache make them so, and check their
    length: the loops do not check bounds), ``out`` writable of ``x``'s shape in the accumulator
    dtype, the seed the exchange gave (a state row, or None), ``initial`` None or a row ``(w,)``
    of the accumulator dtype.  numba's loops set no floating-point flags and issue no warnings;
    around them there are only views, field reads and allocations of ``w`` items.  For one column
    the loops take scalars, compiled for exactly the accumulator dtype's (and bools): they are
    given only NumPy scalars read from state rows of the plan's dtype, the constants made here
    (``zero``, ``first1``, ``neutral1``) and Python bools, never a Python number that numba would
    type otherwise (a float for a float32 loop would raise "no matching definition").
    """

    def __init__(self, op, types, exclusive: bool, w: int):
        st, acc = op.state, np.dtype(types.acc)
        if acc.char in "gG":
            raise TypeError(f"segmented scans, linear recurrences and compensated sums take no {acc} (long "
                            f"double) on the CPU: numba, which compiles their loops, has no such type; pass "
                            f"dtype=numpy.{'complex128' if acc.kind == 'c' else 'float64'}")
        self.state, self.acc, self.dtype, self.w = st, acc, np.dtype(types.state), w
        self.kind = st.kind.split("_")[0]
        self.projects = st.initial_mode == "project"
        self.zeros, self.falses = _constant(0, w, acc), _constant(False, w, bool)
        self.empty = np.empty((0, w), acc)  # the carry pass's out (never written)
        self.neutral = np.full(w, st.neutral(acc), self.dtype)
        rows, row, flags = array_type(acc, 2), array_type(acc, 1), array_type(bool, 1)
        out = array_type(acc, 2, writes=True)
        # one column: the seed, initial and start values as scalars of the accumulator dtype
        # (cpu_state_loops: a loop that allocates and boxes no array); more: rows of w
        self.one = w == 1
        value = scalar_type(acc) if self.one else row
        seed_flag = "BOOL" if self.one else flags
        self.absorbs = self.kind == "segmented" and st.absorbs(acc)
        if self.kind == "segmented":
            arguments = [rows, flags, out, value, seed_flag, "BOOL", value, "BOOL", value, value]
            constants = {"ENDS": st.ends, "LIFT": nan_lift(st.base, acc), "ABSORBS": self.absorbs}
            base = base_combine(st.base)
            self.first = _constant(st.base.identity(acc), w, acc)
            if self.absorbs:  # a float product's zero-absorption fields (cpu_state_loops.SEGMENTED_TAIL)
                state_row, state_out = array_type(self.dtype, 1), array_type(self.dtype, 1, writes=True)
                tail = f"{rows}, {flags}, {state_row}, BOOL, {state_out}, BOOL"
                self._tail = compile_loop(SEGMENTED_TAIL, "tail", None, tail, ENDS=st.ends, **tail_code(st.base, acc))
        elif self.kind == "affine":
            arguments = [rows, rows, flags, out, value, value, seed_flag, "BOOL", value, "BOOL"]
            constants = {"STARTS": st.segments == "starts", "ENDS": st.segments == "ends", "FLAGS": st.segments != "",
                         **affine_code(acc)}
            base = None
        else:
            arguments = [rows, out, value, value, "BOOL", value]
            constants = {"LIFT": nan_lift(st.base, acc),
                         "OVERFLOW": compensated_overflow_code(acc, "total", "e")}
            base = None
            self.first = _constant(st.base.identity(acc), w, acc)
            self.neutral_s = _constant(self.neutral["s"], w, acc)
            self.neutral_e = _constant(self.neutral["e"], w, acc)
        if self.one:
            # the state a one-column loop returns, in the accumulator dtype: its locals widen narrow
            # integers (numba: int8 + int8 is int64), whose carries would not fit the state's fields
            constants["AS_ACC"] = numpy_type(acc)
        signature = ", ".join(arguments)
        carry, scan = dict(constants, WRITE=False), dict(constants, WRITE=True)
        if self.kind != "affine":  # affine scans are inclusive only
            carry["EXCLUSIVE"], scan["EXCLUSIVE"] = False, bool(exclusive)
        template = (_ONE_COLUMN if self.one else _TEMPLATES)[self.kind]
        self._carry = compile_loop(template, "scan", base, signature, **carry)
        self._scan = compile_loop(template, "scan", base, signature, **scan)
        # the first set flag's row, for the fused calls' segment fields (backends/cpu_fused.py)
        # (a signature of one argument is a tuple of one: the trailing comma)
        self._first = compile_loop(FIRST_FLAG, "first", None, f"{flags},") if st.segments else None
        if self.one:  # the rows above as the scalars the one-column loops take
            self.zero = acc.type(0)
            self.first1 = self.first[0] if self.kind != "affine" else None
            self.neutral1 = (self.neutral_s[0], self.neutral_e[0]) if self.kind == "compensated" else None

    def rows(self, x) -> np.ndarray:
        """``x`` (a part ``(n,)`` or ``(n, w)``) as the loops read it: ``(n, w)`` of the accumulator
        dtype.  The one conversion of a call, made before its exchange."""
        rows = x if x.ndim == 2 else x.reshape(x.shape[0], 1)
        return rows if rows.dtype == self.acc else rows.astype(self.acc)

    def carry(self, x, aux, reverse: bool = False) -> np.ndarray:
        """The state of the whole part (its carry), in scan order (``reverse``: last row first):
        with segments, that of its last segment's rows alone (:func:`distscan.ops.restarts.carry_rows`)."""
        rows = self.rows(x)
        n = rows.shape[0]
        flags = aux[self.state.aux.index("segments")] if self.state.segments and len(aux) == len(self.state.aux) else None
        lo, hi = carry_rows(self.state, n, flags, reverse, find_flag)
        if hi - lo < n:
            rows, aux = rows[lo:hi], tuple(a[lo:hi] for a in aux)
        return self._run(self._carry, rows, aux, None, self.empty, None, reverse, True)

    def scan(self, x, aux, *, seed=None, out, initial=None, reverse: bool = False, want_total: bool = False):
        """Scan ``x`` (from :meth:`rows`) into ``out`` (``x``'s shape, the accumulator dtype) from
        ``seed``; the state after the last row with ``want_total``, else None."""
        return self._run(self._scan, x, aux, seed, out.reshape(x.shape), initial, reverse, want_total)

    def _run(self, fn, x, aux, seed, out, initial, reverse, want_state):
        n, w = x.shape
        has_seed = seed is not None
        if has_seed:
            seed = np.asarray(seed, self.dtype).reshape(w)
        if n == 0 or w == 0:  # nothing to scan (the loops divide by w): the seed is the state
            if not want_state:
                return None
            return seed.copy() if has_seed else self.neutral.copy()
        x, flags, coef, out = self._inputs(x, aux, out, reverse)
        if want_state and self.absorbs and np.may_share_memory(x, out):
            # in place (the file pipeline's scans): the state from the rows before the scan
            # overwrites them (cpu_state_loops.SEGMENTED_TAIL, whole), then the scan alone
            early = np.empty(w, self.dtype)
            segment_fields(early, seed, flags, self.state.ends)
            self._tail(x, flags, seed if has_seed else self.neutral, has_seed, early, True)
            self._scan_rows(fn, x, flags, coef, seed, out, initial, False)
            return early
        return self._scan_rows(fn, x, flags, coef, seed, out, initial, want_state)

    def _scan_rows(self, fn, x, flags, coef, seed, out, initial, want_state):
        """:meth:`_run`'s loop call on its inputs in scan order (``seed`` a state row or None)."""
        n, w = x.shape
        has_seed = seed is not None
        has_init = initial is not None and self.projects
        init = self.zeros
        if has_init:  # a row of the accumulator dtype as the plan gives it; anything else converted
            init = initial if getattr(initial, "dtype", None) == self.acc and initial.shape == (w,) else \
                np.broadcast_to(np.asarray(initial, self.acc).reshape(-1), (w,))
        if self.one:  # the loop's rows as scalars (one column: Loops.__init__)
            state = np.empty(1, self.dtype) if want_state else None
            self._run_one(fn, x, flags, coef, seed, out, init[0], has_init, state)
            return state
        state = np.empty(w, self.dtype) if want_state else None
        if self.kind == "segmented":
            ends = self.state.ends
            field = "end" if ends else "flag"
            value = fn(x, flags, out, seed["value"] if has_seed else self.zeros,
                       seed[field] if has_seed else self.falses, has_seed, init, has_init,
                       init if has_init else self.first, self._initial_seed(seed, init, has_init))
            if want_state:
                state["value"] = value
                segment_fields(state, seed, flags, ends)
                if self.absorbs:
                    self._tail(x, flags, seed if has_seed else self.neutral, has_seed, state, False)
        elif self.kind == "affine":
            ends = self.state.segments == "ends"
            a, b = fn(x, coef, flags, out, seed["a"] if has_seed else self.zeros, seed["b"] if has_seed else self.zeros,
                      seed["end"] if has_seed and ends else self.falses, has_seed, init, has_init)
            if want_state:
                state["a"], state["b"] = a, b
                if self.state.segments:
                    segment_fields(state, seed, flags, ends)
        else:
            s, e = fn(x, out, seed["s"] if has_seed else self.neutral_s, seed["e"] if has_seed else self.neutral_e,
                      has_seed, self.first)
            if want_state:
                state["s"], state["e"] = s, e
        return state

    def _initial_seed(self, seed, init, has_init) -> np.ndarray:
        """Where a zero-absorbing product's loop starts its running product from ``initial`` (the
        loops' ``acci``) when the part's first segment continues ``seed``: the seed's projection,
        ``initial`` folded in before the seed's rows (``Segmented.project``).  Unread otherwise."""
        if not (self.absorbs and has_init and seed is not None):
            return self.zeros
        return np.ascontiguousarray(self.state.project(seed, init), self.acc).reshape(self.w)

    def _inputs(self, x, aux, out, reverse: bool):
        """What the loops read of a call: ``x``, the flags and the coefficients of ``aux`` (the
        constant falses and None where the state has none; coefficients ``(n, w)``) and ``out``,
        each mirrored for a reverse scan (the same loop over mirrored views)."""
        flags, coef = self.falses, None
        for name, a in zip(self.state.aux, aux):
            if name == "segments":
                flags = a
            else:
                coef = a if a.ndim == 2 else a.reshape(x.shape[0], 1)
        if reverse:
            x, out = x[::-1], out[::-1]
            flags = flags if flags is self.falses else flags[::-1]
            coef = None if coef is None else coef[::-1]
        return x, flags, coef, out

    def _run_one(self, fn, x, flags, coef, seed, out, ini, has_init, dest) -> None:
        """:meth:`_run`'s loop call for one column: the seed's fields (a state row of one, or None)
        and ``ini`` as scalars of their dtypes (numba takes exactly those); the state after the
        last row written into ``dest`` (a state row of one) where it is not None."""
        has_seed = seed is not None
        if self.kind == "segmented":
            ends = self.state.ends
            value = fn(x, flags, out, seed["value"][0] if has_seed else self.zero,
                       bool(seed["end" if ends else "flag"][0]) if has_seed else False, has_seed, ini, has_init,
                       ini if has_init else self.first1, self._initial_seed(seed, ini, has_init)[0])
            if dest is not None:
                dest["value"] = value
                segment_fields(dest, seed, flags, ends)
                if self.absorbs:
                    self._tail(x, flags, seed if has_seed else self.neutral, has_seed, dest, False)
        elif self.kind == "affine":
            ends = self.state.segments == "ends"
            a, b = fn(x, coef, flags, out, seed["a"][0] if has_seed else self.zero,
                      seed["b"][0] if has_seed else self.zero, bool(seed["end"][0]) if has_seed and ends else False,
                      has_seed, ini, has_init)
            if dest is not None:
                dest["a"], dest["b"] = a, b
                if self.state.segments:
                    segment_fields(dest, seed, flags, ends)
        else:
            s, e = fn(x, out, seed["s"][0] if has_seed else self.neutral1[0],
                      seed["e"][0] if has_seed else self.neutral1[1], has_seed, self.first1)
            if dest is not None:
                dest["s"], dest["e"] = s, e

    def fused(self, reverse: bool, record, last: bool):
        """For a plan's fused calls on many ranks (:mod:`distscan.dist.lean`), where ``w`` is 1:
        ``before(x, aux, out)``, made before the exchange, puts this part's carry (:meth:`carry`'s)
        into ``record`` (a state row of one: the exchange's own record), and ``after(x, aux, seed,
        out)`` leaves in ``out`` what :meth:`scan` from ``seed`` (a state row of one, or None)
        gives; ``x`` from :meth:`rows` with at least one row, ``aux`` as :meth:`carry` takes them,
        ``out`` apart from ``x``, no ``initial``; ``last``: no rank reads this rank's carry.  The
        same loop calls as those methods make, without their checks of what such calls never pass.

        Every rank but the last in scan order scans its part before the exchange from no seed (its
        state after the last row is the carry: the same loop).  A segmented scan (a recurrence with
        segments too) is scanned so on the last rank too, and after the exchange only up to where
        the seed stops mattering: the first row that starts afresh (forwards a flagged row; in scan order of a reverse scan the
        row after a flagged one, or the first row where the seed ends a segment).  Past it both
        scans restart alike, so ``out`` holds :meth:`scan`'s bits; a small part is one pass, not
        two (a carry pass, then the seeded scan)."""
        return fused_halves(self, reverse, record, last)


_LOOPS: dict = {}
MAX_LOOPS = 256  # kept at most; the oldest go first (_caches.publish: two threads may make one
# each, equal, their compiled functions shared by ops.jit)


def loops(op, types, exclusive: bool, w: int):
    """The :class:`Loops` of a state operator's scans of ``w`` columns (kept: a plan asks once, the
    other callers on every call), or None for the ones that have none (declared operators)."""
    if op.state is None or op.state.kind.split("_")[0] not in _TEMPLATES:
        return None
    key = (op, types, bool(exclusive), w)
    found = _LOOPS.get(key)
    if found is None:
        found = Loops(op, types, exclusive, w)
        publish(_LOOPS, key, found, MAX_LOOPS)
    return found


def scan(x, aux, op, types, *, exclusive: bool, seed, out, initial=None, reverse: bool = False,
         want_total: bool = False):
    """Scan ``x`` ``(n, w)`` into ``out`` (the accumulator dtype) in scan order; the state after the
    last row ``(w,)`` with ``want_total`` (what follows this part starts from it), else None."""
    found = loops(op, types, exclusive, x.shape[1])
    if found is not None:
        return found.scan(found.rows(x), aux, seed=seed, out=out, initial=initial, reverse=reverse,
                          want_total=want_total)
    n, w = x.shape
    if n == 0:
        if not want_total:
            return None
        return np.array(seed, types.state).reshape(w) if seed is not None else np.full(w, op.state.neutral(types.acc),
                                                                                        types.state)
    if reverse:
        x, out = x[::-1], out[::-1]
    seed = None if seed is None else np.asarray(seed, types.state).reshape(w)
    total = _declared(x.astype(types.acc, copy=False), op, types, exclusive, seed, out, True)
    return total if want_total else None


def reduce(x, aux, op, types, reverse: bool = False) -> np.ndarray:
    """The state of the whole part ``x`` ``(n, w)`` in scan order: its carry."""
    found = loops(op, types, False, x.shape[1] if x.ndim > 1 else 1)
    if found is not None:
        return found.carry(x, aux, reverse)
    rows = x if x.ndim == 2 else x.reshape(x.shape[0], 1)
    rows = rows[::-1] if reverse else rows
    if rows.shape[0] == 0:
        return np.full(rows.shape[1], op.state.neutral(types.acc), types.state)
    return _declared(rows.astype(types.acc, copy=False), op, types, False, None, None, False)

"""The sequential loops of the state scans on the CPU, as numba code (templates whose upper-case
names :class:`distscan.backends.cpu_states.Loops` replaces by constants and code: which kind of
segments, whether it writes, the NaN lift, the affine zero rule and subnormal flush: the code of
those constants is at the end of this module).  Arguments as :mod:`distscan.backends.cpu_states`
states them; each returns the state after the last row.

Each kind has two loops with one body: for ``w`` columns (``SEGMENTED``, ...: states in arrays of
``w``, a new array returned) and for one column (``SEGMENTED_ONE``, ...: the seed, ``initial``
and the start value as scalars, the state returned as scalars).  A 1-D part is one column; its
loop allocates nothing and boxes no array, which is most of a small call's loop time (1000
int64 rows on the 2-core VM: 1.5 against 3.7-4.1 us a call).  The bodies read ``x[i, j]`` and
``out[i, j]`` of ``(n, w)`` views in both (``j`` is 0 in the one-column loop)."""

import textwrap

import numpy as np

from ..ops.folds import absorbed_code, affine_coef_code, signbit_code


def _code(code: str, by: int) -> str:
    code = textwrap.dedent(code).strip("\n")
    return textwrap.indent(code + "\n", " " * by) if code else ""


def _blocked(args: str, prologue: str, states: tuple, loads: str, body: str, epilogue: str, result: str) -> str:
    """numba code of ``scan(args)``: after ``prologue``, blocks of rows, and in a block each column
    with its state in scalars: ``states`` ``(local, array)`` loaded from ``array[j]`` (with the
    read-only ``loads``), ``body`` run for each row ``i``, the locals stored back; then
    ``epilogue``, and ``result`` returned.  (numba keeps the scalars in registers: a 1-D recurrence
    runs at half the time of np.cumsum; states kept in arrays across the columns of each row took
    2.7 times as long; a block's columns share the cache lines they lie on.)"""
    load = "".join(f"{local} = {array}[j]\n" for local, array in states) + textwrap.dedent(loads).strip("\n")
    store = "".join(f"{array}[j] = {local}\n" for local, array in states)
    return (f"\ndef scan({args}):\n    n, w = x.shape\n{_code(prologue, 4)}"
            "    rows = max(1, 65536 // w)\n    for r0 in range(0, n, rows):\n        r1 = min(n, r0 + rows)\n"
            f"        for j in range(w):\n{_code(load, 12)}            for i in range(r0, r1):\n{_code(body, 16)}"
            f"{_code(store, 12)}{_code(epilogue, 4)}    return {result}\n")


def _one_column(args: str, prologue: str, body: str, epilogue: str, result: str) -> str:
    """numba code of ``scan(args)`` for one column (``x`` ``(n, 1)``): the state's locals are
    arguments (or made by ``prologue``), ``body`` runs for each row ``i``, then ``epilogue``, and
    ``result`` (the locals, each cast by ``AS_ACC`` to the accumulator dtype: numba widens narrow
    integers in the locals, and the cast wraps them as the state's fields hold them) is returned."""
    return (f"\ndef scan({args}):\n    n = x.shape[0]\n    j = 0\n{_code(prologue, 4)}"
            f"    for i in range(n):\n{_code(body, 8)}{_code(epilogue, 4)}    return {result}\n")


# Segmented scans: ``acc`` the value since the segment's start, ``fresh`` that the next row starts
# one (nothing before it, or in reverse a row that ends one); ``ini`` a projected initial,
# ``fst`` an exclusive scan's first value of a segment.  A zero-absorbing product (``ABSORBS``:
# float and complex products) with an initial also keeps ``acci``, NumPy's running product from
# ``ini`` (``ini * x[s] * ... * x[i]`` left to right, where ``ini * acc`` would multiply a zero by
# an overflowed ``acc``: NaN where NumPy's product stays 0); it starts from ``ini_seed``, the
# projection of the seed (``Segmented.project``) where the part's first segment continues it.
_SEGMENTED_FRESH = "(not has_seed) or (ENDS and SEED_FLAG)"
_SEGMENTED_BODY = """
    start = f[i]
    b = x[i, j]
    LIFT
    begin = (not ENDS and start) or fresh
    if EXCLUSIVE and WRITE:
        if begin:
            out[i, j] = fst
        elif has_init:
            out[i, j] = acci if ABSORBS else base(ini, acc)
        else:
            out[i, j] = acc
    if begin:
        acc = b
    else:
        acc = base(acc, b)
    if ABSORBS and has_init:
        acci = base(ini, b) if begin else base(acci, b)
    fresh = ENDS and start
    if not EXCLUSIVE and WRITE:
        if has_init:
            out[i, j] = acci if ABSORBS else base(ini, acc)
        else:
            out[i, j] = acc
"""

SEGMENTED = _blocked(
    "x, f, out, seed_v, seed_flag, has_seed, init, has_init, first, ini_seed", f"""
    accs = seed_v.copy()
    accis = ini_seed.copy()
    # forwards nothing before the first row is "fresh"; in reverse, also a seed that ends a segment
    freshes = np.empty(w, np.bool_)
    for j in range(w):
        freshes[j] = {_SEGMENTED_FRESH.replace("SEED_FLAG", "seed_flag[j]")}
""", (("acc", "accs"), ("fresh", "freshes"), ("acci", "accis")), "ini = init[j]\nfst = first[j]", _SEGMENTED_BODY,
    "", "accs")

SEGMENTED_ONE = _one_column(
    "x, f, out, acc, seed_flag, has_seed, ini, has_init, fst, acci",
    f"fresh = {_SEGMENTED_FRESH.replace('SEED_FLAG', 'seed_flag')}", _SEGMENTED_BODY, "", "AS_ACC(acc)")

# The first set flag's row of a part's flags (``f`` in scan order: a reverse scan passes a reversed
# view), or their count where none is: what a fused call's segment fields and the rows its seed
# reaches are made of (backends/cpu_fused.py).  It stops at that row; NumPy's count_nonzero and
# argmax with the test of the row they found took 1.9 us a call against 0.4 here (1000 rows, 1 %
# flags, the 2-core VM, through the loop's entry point).
FIRST_FLAG = """
def first(f):
    for i in range(f.shape[0]):
        if f[i]:
            return i
    return f.shape[0]
"""

# A zero-absorbing segmented product's state after the last row (distscan.ops.state.Segmented): the
# loops above give its value (the sequential product) and Loops its segment fields; this pass, the
# others, in place in ``state`` (a state row of w).  A column whose value is finite and not zero
# has no zero, inf or NaN in its tail (nor in the seed's tail that it continues: a zero leaves
# the running product 0 or NaN for good, an inf or NaN leaves it inf or NaN), which is the
# common case: the pass then only writes the fields (pre is the value).  Else it folds the tail's
# rows (since the last segment start in scan order; forwards a flagged row, in reverse the row
# after a flagged one but the last) into the seed's fields (where the seed continues into the
# tail) or the neutral ones, as Segmented.lift and its combine do row by row.  With ``whole`` it
# folds every column and writes its value too, without reading it (an in-place scan, whose rows
# are gone once scanned, runs it first: Loops._run).
SEGMENTED_TAIL = """
def tail(x, f, seed, has_seed, state, whole):
    n, w = x.shape
    lo = -1
    fresh = False
    for j in range(w):
        v = state[j].value
        if not whole and v != 0 and np.isfinite(v):
            state[j].pre = v
            state[j].zero = False
            state[j].after = False
            state[j].nonfinite = False
            state[j].sign = False
            continue
        if lo < 0:  # the tail's first row, once
            lo = 0
            last = n - 1 if ENDS else n
            for i in range(last - 1, -1, -1):
                if f[i]:
                    lo = i + 1 if ENDS else i
                    fresh = True
                    break
        if has_seed and not fresh and not (ENDS and seed[j].end):
            pre = seed[j].pre
            zero = seed[j].zero
            after = seed[j].after
            nonfinite = seed[j].nonfinite
            sign = seed[j].sign
        else:
            pre = ONE
            zero = False
            after = False
            nonfinite = False
            sign = False
        for i in range(lo, n):
            b = x[i, j]
            LIFT
            finite = np.isfinite(b)
            nonfinite = nonfinite or not finite
            if zero:
                after = after or not finite
                sign = sign != SIGNBIT
            elif b == 0:
                zero = True
                sign = SIGNBIT
            else:
                pre = pre * b
        state[j].zero = zero
        state[j].after = after
        state[j].nonfinite = nonfinite
        state[j].sign = sign
        if zero:
            state[j].pre = pre
            state[j].value = ABSORBED
        elif whole:
            state[j].pre = pre
            state[j].value = pre
        else:
            state[j].pre = v
"""

# Linear recurrences: the affine map (A, B) of the rows so far; ``flushed``: A is a flushed
# subnormal (FLUSH_SEED, UPDATE_A), not a zero that a zero coefficient made.
_AFFINE_BODY = """
    start = f[i] if FLAGS else False
    c = a[i, j]
    if (STARTS and start) or fresh:
        A = c
        B = x[i, j]
        flushed = False
    else:
        B = COEF_B * B + x[i, j]
        UPDATE_A
    fresh = ENDS and start
    if WRITE:
        out[i, j] = B + COEF_I * ini if has_init else B
"""

AFFINE = _blocked(
    "x, a, f, out, seed_a, seed_b, seed_flag, has_seed, init, has_init", """
    As = seed_a.copy()
    Bs = seed_b.copy()
    freshes = np.empty(w, np.bool_)
    flushes = np.zeros(w, np.bool_)
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
        A = As[j]
        flushed = False
        FLUSH_SEED
        As[j] = A
        flushes[j] = flushed
""", (("A", "As"), ("B", "Bs"), ("fresh", "freshes"), ("flushed", "flushes")), "ini = init[j]", _AFFINE_BODY, """
    for j in range(w):
        A = As[j]
        flushed = flushes[j]
        UNFLUSH
        As[j] = A
""", "As, Bs")

AFFINE_ONE = _one_column(
    "x, a, f, out, A, B, seed_flag, has_seed, ini, has_init", """
    fresh = (not has_seed) or (ENDS and seed_flag)
    flushed = False
    FLUSH_SEED
""", _AFFINE_BODY, "UNFLUSH", "AS_ACC(A), AS_ACC(B)")

# Compensated sums: the sum ``s`` and the error ``e`` (TwoSum's), the step written with the error
# negated (``nlo``) as distscan.ops.folds' fold: a sum of -0.0 items stays -0.0, at no cost.
_COMPENSATED_BODY = """
    if EXCLUSIVE and WRITE:
        out[i, j] = s if has_seed or i > 0 else fst
    b = x[i, j]
    LIFT
    hi = s + b
    bb = hi - s
    nlo = ((hi - bb) - s) + (bb - b)
    nlo = nlo - e
    total = hi - nlo
    e = (hi - total) - nlo
    OVERFLOW
    s = total
    if not EXCLUSIVE and WRITE:
        out[i, j] = s
"""

COMPENSATED = _blocked(
    "x, out, seed_s, seed_e, has_seed, first", """
    ss = seed_s.copy()
    es = seed_e.copy()
""", (("s", "ss"), ("e", "es")), "fst = first[j]", _COMPENSATED_BODY, "", "ss, es")

COMPENSATED_ONE = _one_column("x, out, s, e, has_seed, fst", "", _COMPENSATED_BODY, "", "AS_ACC(s), AS_ACC(e)")

# A declared operator's scalar combine (backends/cpu_states.py, _declared).
DECLARED = _blocked(
    "x, out, seed, has_seed, first", "accs = seed.copy()", (("acc", "accs"),), "fresh = (not has_seed) and r0 == 0", """
    b = x[i, j]
    if EXCLUSIVE and WRITE:
        out[i, j] = first[j] if fresh else acc
    if fresh:
        acc = b
    else:
        acc = base(acc, b)
    fresh = False
    if not EXCLUSIVE and WRITE:
        out[i, j] = acc
""", "", "accs")


# ---- the constants' code (Loops puts them into the templates above) ----

# A NaN-aware base reads NaN as its identity (nancumsum's zero, nancumprod's one), a scalar of the
# accumulator dtype: numba unifies a bare 0 with float32 as float64, and the whole segment was
# then summed in float64 (NumPy's float32 nancumsum differs, and so did the bits by the split).
_NAN_IDENTITY = {"nansum": 0, "nanprod": 1}


def tail_code(base, acc: np.dtype) -> dict:
    """The constants of :data:`SEGMENTED_TAIL` for the accumulator dtype."""
    return {"LIFT": nan_lift(base, acc), "ONE": f"{numpy_type(acc)}(1)", "SIGNBIT": signbit_code(acc, "b"),
            "ABSORBED": absorbed_code(acc)}


def nan_lift(base, acc: np.dtype) -> str:
    identity = _NAN_IDENTITY.get(base.name)
    return "pass" if identity is None else f"b = {numpy_type(acc)}({identity}) if b != b else b"


def numpy_type(dtype: np.dtype) -> str:
    """The code of ``dtype``'s scalar type in a loop (``np.bool_``, not ``np.bool``: NumPy 1.x has
    no ``np.bool``)."""
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def affine_code(acc: np.dtype) -> dict:
    """The affine loop's code for the accumulator dtype: the zero rule (:func:`.folds.affine_coef_code`:
    a zero contributes nothing, even times an infinite or NaN coefficient) and, for real floats,
    the flush of the product of coefficients ``A`` to zero once it is subnormal.

    ``A`` only scales what came before the part (``A * initial``, ``A * seed`` in a carry): once
    below the smallest normal number its part of a result is below the resolution of results
    unless ``initial`` or the seed is very large.  Left alone it is often stuck there (the smallest
    subnormal times any ``c`` in (0.5, 1) rounds back to itself: a discount factor, a filter's
    pole), and every multiplication by a subnormal costs about 100 cycles on many x86 CPUs
    (measured: 2^24 float64 with ``a`` in (0.5, 1): 583 ms against 63 ms with ``a`` near 1, on the
    2-core VM).  A flushed ``A`` is not a zero that a zero coefficient made: the loop remembers it
    (``flushed``), so an infinite or NaN coefficient, or ``initial``, still meets a nonzero ``A``
    (the smallest subnormal of its sign: ±inf or NaN, as the product of the subnormal itself),
    and a carry leaves with that subnormal, which the next chunk's loop flushes again."""
    if acc.kind not in "fc":
        return {"COEF_B": "c", "UPDATE_A": "A = c * A", "COEF_I": "A", "FLUSH_SEED": "pass", "UNFLUSH": "pass"}
    rule = {"COEF_B": affine_coef_code("c", "B")}
    if acc.kind == "c":
        return dict(rule, UPDATE_A=f"A = {affine_coef_code('c', 'A')} * A", COEF_I=affine_coef_code("A", "ini"),
                    FLUSH_SEED="pass", UNFLUSH="pass")
    finfo = np.finfo(acc)
    normal, sub = f"np.{acc.name}({float(finfo.tiny)!r})", f"np.{acc.name}({float(finfo.smallest_subnormal)!r})"
    update = "\n".join([
        "if flushed and not np.isfinite(c):",
        f"    A = c * np.copysign({sub}, A)",
        "    flushed = False",
        "else:",
        f"    A = {affine_coef_code('c', 'A')} * A",
        "    if c == 0:",
        "        flushed = False",
        f"    elif A != 0 and -{normal} < A < {normal}:",
        "        A = A * 0.0",
        "        flushed = True"])
    return dict(rule, UPDATE_A=update,
                COEF_I=(f"(np.copysign({sub}, A) if flushed and not np.isfinite(ini) "
                        f"else {affine_coef_code('A', 'ini')})"),
                FLUSH_SEED="\n".join([f"if A != 0 and -{normal} < A < {normal}:", "    A = A * 0.0",
                                       "    flushed = True"]),
                UNFLUSH="\n".join(["if flushed:", f"    A = np.copysign({sub}, A)"]))

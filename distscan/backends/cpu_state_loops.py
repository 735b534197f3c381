"""The sequential loops of the state scans on the CPU, as numba code (templates whose upper-case
names :class:`distscan.backends.cpu_states.Loops` replaces by constants and code: which kind of
segments, whether it writes, the NaN lift, the affine zero rule and subnormal flush).  Arguments as
:mod:`distscan.backends.cpu_states` states them; each returns the state after the last row.

Each kind has two loops with one body: for ``w`` columns (``SEGMENTED``, ...: states in arrays of
``w``, a new array returned) and for one column (``SEGMENTED_ONE``, ...: the seed, ``initial``
and the start value as scalars, the state returned as scalars).  A 1-D part is one column; its
loop allocates nothing and boxes no array, which is most of a small call's loop time (1000
int64 rows on the 2-core VM: 1.5 against 3.7-4.1 us a call).  The bodies read ``x[i, j]`` and
``out[i, j]`` of ``(n, w)`` views in both (``j`` is 0 in the one-column loop)."""

import textwrap


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
# ``fst`` an exclusive scan's first value of a segment.
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
            out[i, j] = base(ini, acc)
        else:
            out[i, j] = acc
    if begin:
        acc = b
    else:
        acc = base(acc, b)
    fresh = ENDS and start
    if not EXCLUSIVE and WRITE:
        out[i, j] = base(ini, acc) if has_init else acc
"""

SEGMENTED = _blocked(
    "x, f, out, seed_v, seed_flag, has_seed, init, has_init, first", f"""
    accs = seed_v.copy()
    # forwards nothing before the first row is "fresh"; in reverse, also a seed that ends a segment
    freshes = np.empty(w, np.bool_)
    for j in range(w):
        freshes[j] = {_SEGMENTED_FRESH.replace("SEED_FLAG", "seed_flag[j]")}
""", (("acc", "accs"), ("fresh", "freshes")), "ini = init[j]\nfst = first[j]", _SEGMENTED_BODY, "", "accs")

SEGMENTED_ONE = _one_column(
    "x, f, out, acc, seed_flag, has_seed, ini, has_init, fst",
    f"fresh = {_SEGMENTED_FRESH.replace('SEED_FLAG', 'seed_flag')}", _SEGMENTED_BODY, "", "AS_ACC(acc)")

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

# Compensated sums: the sum ``s`` and the error ``e`` (TwoSum's).
_COMPENSATED_BODY = """
    if EXCLUSIVE and WRITE:
        out[i, j] = s if has_seed or i > 0 else fst
    b = x[i, j]
    LIFT
    hi = s + b
    bb = hi - s
    lo = (s - (hi - bb)) + (b - bb)
    lo = lo + e
    total = hi + lo
    e = lo - (total - hi)
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

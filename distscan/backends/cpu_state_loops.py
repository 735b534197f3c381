"""The sequential loops of the state scans on the CPU, as numba code (templates whose upper-case
names :class:`distscan.backends.cpu_states.Loops` replaces by constants and code: which kind of
segments, whether it writes, the NaN lift, the affine zero rule and subnormal flush).  Arguments as
:mod:`distscan.backends.cpu_states` states them; each returns the state after the last row."""

import textwrap


def _blocked(args: str, prologue: str, states: tuple, loads: str, body: str, epilogue: str, result: str) -> str:
    """numba code of ``scan(args)``: after ``prologue``, blocks of rows, and in a block each column
    with its state in scalars: ``states`` ``(local, array)`` loaded from ``array[j]`` (with the
    read-only ``loads``), ``body`` run for each row ``i``, the locals stored back; then
    ``epilogue``, and ``result`` returned.  (numba keeps the scalars in registers: a 1-D recurrence
    runs at half the time of np.cumsum; states kept in arrays across the columns of each row took
    2.7 times as long; a block's columns share the cache lines they lie on.)"""
    def block(code, by):
        code = textwrap.dedent(code).strip("\n")
        return textwrap.indent(code + "\n", " " * by) if code else ""

    load = "".join(f"{local} = {array}[j]\n" for local, array in states) + textwrap.dedent(loads).strip("\n")
    store = "".join(f"{array}[j] = {local}\n" for local, array in states)
    return (f"\ndef scan({args}):\n    n, w = x.shape\n{block(prologue, 4)}"
            "    rows = max(1, 65536 // w)\n    for r0 in range(0, n, rows):\n        r1 = min(n, r0 + rows)\n"
            f"        for j in range(w):\n{block(load, 12)}            for i in range(r0, r1):\n{block(body, 16)}"
            f"{block(store, 12)}{block(epilogue, 4)}    return {result}\n")


SEGMENTED = _blocked(
    "x, f, out, seed_v, seed_flag, has_seed, init, has_init, first", """
    accs = seed_v.copy()
    # forwards nothing before the first row is "fresh"; in reverse, also a seed that ends a segment
    freshes = np.empty(w, np.bool_)
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
""", (("acc", "accs"), ("fresh", "freshes")), "ini = init[j]", """
    start = f[i]
    b = x[i, j]
    LIFT
    begin = (not ENDS and start) or fresh
    if EXCLUSIVE and WRITE:
        if begin:
            out[i, j] = first[j]
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
""", "", "accs")

AFFINE = _blocked(
    "x, a, f, out, seed_a, seed_b, seed_flag, has_seed, init, has_init", """
    As = seed_a.copy()
    Bs = seed_b.copy()
    freshes = np.empty(w, np.bool_)
    flushes = np.zeros(w, np.bool_)  # A is a flushed subnormal (FLUSH_A), not a zero that a zero coefficient made
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
        A = As[j]
        FLUSH_SEED
        As[j] = A
""", (("A", "As"), ("B", "Bs"), ("fresh", "freshes"), ("flushed", "flushes")), "ini = init[j]", """
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
""", """
    for j in range(w):
        A = As[j]
        flushed = flushes[j]
        UNFLUSH
        As[j] = A
""", "As, Bs")

COMPENSATED = _blocked(
    "x, out, seed_s, seed_e, has_seed, first", """
    ss = seed_s.copy()
    es = seed_e.copy()
""", (("s", "ss"), ("e", "es")), "", """
    if EXCLUSIVE and WRITE:
        out[i, j] = s if has_seed or i > 0 else first[j]
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
""", "", "ss, es")

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

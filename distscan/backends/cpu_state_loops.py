"""The sequential loops of the state scans on the CPU, as numba code (templates whose upper-case
names :class:`distscan.backends.cpu_states.Loops` replaces by constants and code: which kind of
segments, whether it writes, the NaN lift, the affine zero rule and subnormal flush).  Arguments as
:mod:`distscan.backends.cpu_states` states them; each returns the state after the last row."""

SEGMENTED = '''
def scan(x, f, out, seed_v, seed_flag, has_seed, init, has_init, first):
    n, w = x.shape
    accs = seed_v.copy()
    # forwards nothing before the first row is "fresh"; in reverse, also a seed that ends a segment
    freshes = np.empty(w, np.bool_)
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            acc = accs[j]
            fresh = freshes[j]
            ini = init[j]
            for i in range(r0, r1):
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
            accs[j] = acc
            freshes[j] = fresh
    return accs
'''

AFFINE = '''
def scan(x, a, f, out, seed_a, seed_b, seed_flag, has_seed, init, has_init):
    n, w = x.shape
    As = seed_a.copy()
    Bs = seed_b.copy()
    freshes = np.empty(w, np.bool_)
    flushes = np.zeros(w, np.bool_)  # A is a flushed subnormal (FLUSH_A), not a zero that a zero coefficient made
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
        A = As[j]
        FLUSH_SEED
        As[j] = A
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            A = As[j]
            B = Bs[j]
            fresh = freshes[j]
            flushed = flushes[j]
            ini = init[j]
            for i in range(r0, r1):
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
            As[j] = A
            Bs[j] = B
            freshes[j] = fresh
            flushes[j] = flushed
    for j in range(w):
        A = As[j]
        flushed = flushes[j]
        UNFLUSH
        As[j] = A
    return As, Bs
'''

COMPENSATED = '''
def scan(x, out, seed_s, seed_e, has_seed, first):
    n, w = x.shape
    ss = seed_s.copy()
    es = seed_e.copy()
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            s = ss[j]
            e = es[j]
            for i in range(r0, r1):
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
            ss[j] = s
            es[j] = e
    return ss, es
'''

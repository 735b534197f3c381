"""The folds of the state operators (:mod:`distscan.ops.state`), as numba code: each state's
combine on scalars, ``out = stack[0] . stack[1] . ...`` element by element in scan order (the
carries of ranks, nodes and chunks).  ``base(a, b)`` is a segmented scan's plain operator."""

from __future__ import annotations


def affine_coef_code(a: str, y: str) -> str:
    """numba code of what multiplies ``y`` (an earlier value, or product of coefficients) in
    ``a*y``: ``a``, or a zero where ``y == 0`` and ``a`` is infinite or NaN
    (:func:`distscan.ops.state.affine_coef`, the rule of every affine scan)."""
    return f"({a} if {y} != 0 or np.isfinite({a}) else {y} - {y})"


def _with_zero_rule(fold: str) -> str:
    """An affine fold whose ``t.a`` multiplies ``b`` (AFFINE_COEF) and ``a`` (AFFINE_COEF_A) by the rule."""
    return fold.replace("AFFINE_COEF_A", affine_coef_code("t.a", "a")).replace("AFFINE_COEF", affine_coef_code("t.a", "b"))


SEGMENTED_FOLD = '''
def fold(stack, out):
    k, w = stack.shape
    for j in range(w):
        v = stack[0, j].value
        f = stack[0, j].flag
        for i in range(1, k):
            t = stack[i, j]
            if t.flag:
                v = t.value
                f = True
            else:
                v = base(v, t.value)
        out[j].value = v
        out[j].flag = f
'''

SEGMENTED_ENDS_FOLD = '''
def fold(stack, out):
    k, w = stack.shape
    for j in range(w):
        v = stack[0, j].value
        inner = stack[0, j].inner
        end = stack[0, j].end
        for i in range(1, k):
            t = stack[i, j]
            if t.inner or end:
                v = t.value
            else:
                v = base(v, t.value)
            inner = inner or end or t.inner
            end = t.end
        out[j].value = v
        out[j].inner = inner
        out[j].end = end
'''

AFFINE_FOLD = _with_zero_rule('''
def fold(stack, out):
    k, w = stack.shape
    for j in range(w):
        a = stack[0, j].a
        b = stack[0, j].b
        for i in range(1, k):
            t = stack[i, j]
            b = AFFINE_COEF * b + t.b
            a = AFFINE_COEF_A * a
        out[j].a = a
        out[j].b = b
''')

AFFINE_STARTS_FOLD = _with_zero_rule('''
def fold(stack, out):
    k, w = stack.shape
    for j in range(w):
        a = stack[0, j].a
        b = stack[0, j].b
        f = stack[0, j].flag
        for i in range(1, k):
            t = stack[i, j]
            if t.flag:
                a = t.a
                b = t.b
                f = True
            else:
                b = AFFINE_COEF * b + t.b
                a = AFFINE_COEF_A * a
        out[j].a = a
        out[j].b = b
        out[j].flag = f
''')

AFFINE_ENDS_FOLD = _with_zero_rule('''
def fold(stack, out):
    k, w = stack.shape
    for j in range(w):
        a = stack[0, j].a
        b = stack[0, j].b
        inner = stack[0, j].inner
        end = stack[0, j].end
        for i in range(1, k):
            t = stack[i, j]
            if t.inner or end:
                a = t.a
                b = t.b
            else:
                b = AFFINE_COEF * b + t.b
                a = AFFINE_COEF_A * a
            inner = inner or end or t.inner
            end = t.end
        out[j].a = a
        out[j].b = b
        out[j].inner = inner
        out[j].end = end
''')

COMPENSATED_FOLD = '''
def fold(stack, out):
    k, w = stack.shape
    for j in range(w):
        s = stack[0, j].s
        e = stack[0, j].e
        for i in range(1, k):
            t = stack[i, j]
            hi = s + t.s
            bb = hi - s
            lo = (s - (hi - bb)) + (t.s - bb)
            lo = lo + (e + t.e)
            s = hi + lo
            e = lo - (s - hi)
        out[j].s = s
        out[j].e = e
'''

"""The folds of the state operators (:mod:`distscan.ops.state`), as numba code: each state's
combine on scalars, ``out = stack[0] . stack[1] . ...`` element by element in scan order (the
carries of ranks, nodes and chunks).  ``base(a, b)`` is a segmented scan's plain operator."""

from __future__ import annotations

import textwrap

import numpy as np


def affine_coef_code(a: str, y: str) -> str:
    """numba code of what multiplies ``y`` (an earlier value, or product of coefficients) in
    ``a*y``: ``a``, or a zero where ``y == 0`` and ``a`` is infinite or NaN
    (:func:`distscan.ops.state.affine_coef`, the rule of every affine scan)."""
    return f"({a} if {y} != 0 or np.isfinite({a}) else {y} - {y})"


def _fold(fields: tuple, combine: str, segments: str = "") -> str:
    """numba code of ``fold(stack, out)``: the state ``fields`` (locals of the same names) folded
    over the stack's rows with ``combine`` (lines that fold row ``t`` into the locals), and, for a
    segmented state, its flags: ``starts`` (a row with ``flag`` starts afresh) or ``ends`` (a row
    after an ``end``, or one with an ``inner`` start, starts afresh)."""
    flags = {"": (), "starts": ("flag",), "ends": ("inner", "end")}[segments]
    combine = textwrap.dedent(combine).strip() + "\n"
    fresh = "".join(f"{f} = t.{f}\n" for f in fields)
    if segments == "starts":
        step = f"if t.flag:\n{_in(fresh)}    flag = True\nelse:\n{_in(combine)}"
    elif segments == "ends":
        step = f"if t.inner or end:\n{_in(fresh)}else:\n{_in(combine)}inner = inner or end or t.inner\nend = t.end\n"
    else:
        step = combine
    names = fields + flags
    first = "".join(f"{f} = stack[0, j].{f}\n" for f in names)
    last = "".join(f"out[j].{f} = {f}\n" for f in names)
    loop = f"{first}for i in range(1, k):\n    t = stack[i, j]\n{_in(step)}{last}"
    return f"def fold(stack, out):\n    k, w = stack.shape\n    for j in range(w):\n{_in(loop, 8)}"


def _in(lines: str, by: int = 4) -> str:
    return textwrap.indent(lines, " " * by)


# The lines that fold row t into the locals: a segmented scan's value (``base`` is its plain
# operator), an affine map (t after the maps before: a <- t.a * a, b <- t.a * b + t.b, by the
# zero rule), a compensated sum (s, e) (TwoSum of the sums, errors added: below).
_SEGMENTED = "value = base(value, t.value)"
_AFFINE = f"b = {affine_coef_code('t.a', 'b')} * b + t.b\na = {affine_coef_code('t.a', 'a')} * a"

# A compensated step, (s, e) then (t.s, t.e): the sum ``hi`` of the sums, TwoSum's error of it
# plus both errors, renormalised; written with that error negated (``nlo``), here, in the CPU
# loops (backends/cpu_state_loops.py) and in distscan.ops.state's NumPy join.  Round to nearest is
# symmetric (fl(x - y) = -fl(y - x)), so every value is the plain form's (lo = (s - (hi - bb)) +
# (t.s - bb) + (e + t.e), s = hi + lo, e = lo - (s - hi)) bit for bit, but the sign of a zero: nlo
# is never -0.0 (its last term bb - t.s is -0.0 only for bb = -0.0 and t.s = +0.0, and bb = hi - s
# only for hi = -0.0 and s = +0.0, which hi = s + t.s cannot be), so where the error is zero the
# sum ``hi - nlo`` is ``hi``, sign and all: a sum of -0.0 items stays -0.0, as NumPy's does, where
# hi + lo was -0.0 + +0.0 = +0.0 (TwoSum's error of -0.0 + -0.0 is +0.0; found 2026-11-25).  The
# same as ``hi if lo == 0 else hi + lo`` (tests/ops/test_compensated.py), at no cost: that select
# made the CPU loops 2-8 % slower (2026-11-26).  Per component of complex values.
_COMPENSATED = """
hi = s + t.s
bb = hi - s
nlo = ((hi - bb) - s) + (bb - t.s)
nlo = nlo - (e + t.e)
s = hi - nlo
e = (hi - s) - nlo
"""


def compensated_overflow_code(value, total: str, err: str) -> str:
    """numba lines that follow a compensated step (``hi`` the rounded sum of the sums, ``total``
    and ``err`` the renormalised sum and error): where ``hi`` is infinite or NaN (an overflow, or
    an infinity or NaN among the parts) the sum is ``hi``, IEEE's, and the error 0: TwoSum's error
    of an infinite sum is NaN (``inf - inf``), which would turn the sum into NaN.  Per component
    of a complex ``value`` dtype; in that dtype (no widening)."""
    value = np.dtype(value)
    if value.kind != "c":
        return f"if not np.isfinite(hi):\n    {total} = hi\n    {err} = np.{value.name}(0)\n"
    kind, zero = value.name, f"np.{np.dtype(value.char.lower()).name}(0)"
    return ("if not (np.isfinite(hi.real) and np.isfinite(hi.imag)):\n"
            "    fr = np.isfinite(hi.real)\n    fi = np.isfinite(hi.imag)\n"
            f"    {err} = np.{kind}(complex({err}.real if fr else {zero}, {err}.imag if fi else {zero}))\n"
            f"    {total} = np.{kind}(complex({total}.real if fr else hi.real, {total}.imag if fi else hi.imag))\n")


def compensated_fold(value) -> str:
    """The compensated state's fold for states over ``value`` (its overflow code is typed)."""
    return _fold(("s", "e"), _COMPENSATED + compensated_overflow_code(value, "s", "e"))

def signbit_code(value, v: str) -> str:
    """numba code of ``v``'s sign bit for values of dtype ``value`` (False for complex: the
    zero-absorbing states keep no sign of complex zeros)."""
    return "False" if np.dtype(value).kind == "c" else f"np.signbit({v})"


def absorbed_code(value, pre: str = "pre", after: str = "after", sign: str = "sign") -> str:
    """numba expression of the value of a product whose tail holds a zero, in dtype ``value``
    (:func:`distscan.ops.absorbing.absorbed`: NaN where ``pre`` is not finite or ``after``, else a
    zero of sign ``signbit(pre) ^ sign``; complex ``0j``)."""
    value = np.dtype(value)
    t = f"np.{value.name}"
    if value.kind == "c":
        return f"({t}(complex(np.nan, 0.0)) if {after} or not np.isfinite({pre}) else {t}(0))"
    return (f"({t}(np.nan) if {after} or not np.isfinite({pre}) "
            f"else ({t}(-0.0) if np.signbit({pre}) != {sign} else {t}(0.0)))")


# The zero-absorbing segmented product's fields (distscan.ops.state.Segmented) and the lines that
# fold state t (no segment starting in it) into the locals: distscan.ops.absorbing.absorbing_join.
ABSORBING_FIELDS = ("value", "pre", "zero", "after", "nonfinite", "sign")
_ABSORBING = """
if zero:
    after = after or t.nonfinite
    sign = sign != (SIGNBIT != t.sign)
elif t.zero:
    pre = value * t.pre
    zero = True
    after = t.after
    sign = t.sign
else:
    value = value * t.value
    pre = value
nonfinite = nonfinite or t.nonfinite
if zero:
    value = ABSORBED
"""


def absorbing_fold(value, segments: str) -> str:
    """The fold of zero-absorbing segmented product states over ``value`` (``segments``: "starts"
    forwards, "ends" in reverse)."""
    code = _ABSORBING.replace("SIGNBIT", signbit_code(value, "t.pre")).replace("ABSORBED", absorbed_code(value))
    return _fold(ABSORBING_FIELDS, code, segments)


SEGMENTED_FOLD = _fold(("value",), _SEGMENTED, "starts")
SEGMENTED_ENDS_FOLD = _fold(("value",), _SEGMENTED, "ends")
AFFINE_FOLD = _fold(("a", "b"), _AFFINE)
AFFINE_STARTS_FOLD = _fold(("a", "b"), _AFFINE, "starts")
AFFINE_ENDS_FOLD = _fold(("a", "b"), _AFFINE, "ends")

"""Small loops compiled by numba: sequential scans and folds of states, where NumPy has no
vectorised form.  Only state operators and declared operators import numba (a few hundred
milliseconds once, then memory speed); plain operators never do.

A loop is written once as a template whose upper-case words are substituted by Python
constants (``EXCLUSIVE``, ``ENDS``, ...), and calls ``base(a, b)``: the combine of the plain
operator underneath (:func:`base_combine`).  Compiled loops are kept by (template, constants,
base operator): the first call of a kind compiles, later ones only dispatch (about 0.5 us).
"""

from __future__ import annotations

import numpy as np

_COMPILED: dict = {}

# The plain operators' combine of two scalars, as numba compiles it with NumPy's scalar
# semantics (NaN propagation of maximum, wrapping integers).
SCALAR_COMBINE = {
    "sum": "a + b", "nansum": "a + b", "prod": "a * b", "nanprod": "a * b",
    "max": "np.maximum(a, b)", "min": "np.minimum(a, b)", "nanmax": "np.fmax(a, b)", "nanmin": "np.fmin(a, b)",
    "logical_and": "a and b", "logical_or": "a or b", "logical_xor": "a != b",
    "bitwise_and": "a & b", "bitwise_or": "a | b", "bitwise_xor": "a ^ b",
    "logaddexp": "np.logaddexp(a, b)", "logaddexp2": "np.logaddexp2(a, b)", "gcd": "np.gcd(a, b)",
    "lcm": "np.lcm(a, b)",
}


def numba():
    """The numba module, or a clear error naming the package to install."""
    try:
        import numba as nb
    except ImportError:  # pragma: no cover - numba is a dependency
        raise RuntimeError("this operator's CPU loops need numba: pip install numba") from None
    return nb


def base_combine(op):
    """A compiled ``base(a, b)`` for the plain operator ``op`` (its row's scalar formula, or a
    declared operator's own combine compiled by numba)."""
    key = ("base", op)
    fn = _COMPILED.get(key)
    if fn is None:
        nb = numba()
        if op.name in SCALAR_COMBINE and op.source == "":
            scope = {"np": np}
            exec(f"def base(a, b):\n    return {SCALAR_COMBINE[op.name]}\n", scope)  # noqa: S102 - our table
            fn = nb.njit(scope["base"])
        else:
            fn = nb.njit(op.scalar)
        _COMPILED[key] = fn
    return fn


def compile_loop(template: str, name: str, base=None, **constants):
    """The function ``name`` of ``template`` with its constants substituted, compiled by numba;
    ``base`` (a compiled scalar combine) is what the template's ``base(a, b)`` calls."""
    key = (template, name, base, tuple(sorted(constants.items())))
    fn = _COMPILED.get(key)
    if fn is None:
        src = template
        for k, v in sorted(constants.items(), key=lambda kv: -len(kv[0])):  # longest first: no partial names
            src = src.replace(k, repr(v) if isinstance(v, str) else str(v))
        scope = {"np": np, "base": base}
        exec(compile(src, f"<distscan {name}>", "exec"), scope)  # noqa: S102 - our own templates
        fn = _COMPILED[key] = numba().njit(scope[name])
    return fn

"""Declared operators of structured states that the tests share: a count with the items as base-3
digits (order matters; integers, exact), and the running mean (floats) of docs/operators.md."""

from __future__ import annotations

import numpy as np

import distscan

COUNTED = np.dtype([("n", np.int64), ("s", np.int64)])
MEAN = np.dtype([("n", "f8"), ("m", "f8")])


def counted_lift(x):
    s = np.zeros(np.shape(x), COUNTED)
    s["n"], s["s"] = 1, x
    return s


def counted_combine(a, b):
    out = np.empty(np.broadcast(a, b).shape, COUNTED)
    out["n"] = a["n"] + b["n"]
    out["s"] = a["s"] * 3 ** b["n"] + b["s"]  # the items as base-3 digits: order matters, integers exact
    return out


def counted(name="counted", **kwargs):
    """The counted operator, projected to ``s * 100 + n`` unless ``project=`` says otherwise."""
    kwargs.setdefault("project", lambda s: s["s"] * 100 + s["n"])
    return distscan.Operator(name, counted_combine, identity=lambda dt: np.zeros((), COUNTED), state=COUNTED,
                             lift=counted_lift, **kwargs)


def mean_lift(x):
    s = np.zeros(np.shape(x), MEAN)
    s["n"], s["m"] = 1, x
    return s


def mean_combine(a, b):
    out = np.empty(np.broadcast(a, b).shape, MEAN)
    n = a["n"] + b["n"]
    out["n"] = n
    out["m"] = np.where(n > 0, (a["n"] * a["m"] + b["n"] * b["m"]) / np.where(n > 0, n, 1), 0)
    return out


def mean(name="running mean", **kwargs):
    return distscan.Operator(name, mean_combine, identity=lambda dt: np.zeros((), MEAN), state=MEAN, lift=mean_lift,
                             project=lambda s: s["m"], **kwargs)

"""An infinite coefficient after a finite y with initial=1 (docs/operators.md, "Infinite and NaN
coefficients"): the CPU gives NaN where the loop gives inf; what does the GPU give?  One rank."""
import numpy as np
import distscan


def loop(a, b, init, reverse=False):
    y, out = init, np.empty(len(a), np.result_type(a, b))
    for i in (range(len(a) - 1, -1, -1) if reverse else range(len(a))):
        y = a[i] * y + b[i]
        out[i] = y
    return out


try:
    import cupy as cp
except ImportError:
    cp = None
for n, at in ((2, 1), (10_001, 7_777)):
    for dt in (np.float32, np.float64):
        a = np.ones(n, dt); b = np.zeros(n, dt)
        a[at - 1], b[at - 1], a[at] = 2, -1, np.inf
        with np.errstate(all="ignore"):
            want = loop(a, b, dt(1))
        cpu = distscan.linear_recurrence(a, b, initial=1)
        row = f"n={n} {np.dtype(dt).name}: loop {want[at]} cpu {cpu[at]}"
        if cp is not None:
            gpu = distscan.linear_recurrence(cp.asarray(a), cp.asarray(b), initial=1).get()
            row += f" gpu {gpu[at]} (gpu==cpu everywhere: {np.array_equal(gpu, cpu, equal_nan=True)})"
        print(row)

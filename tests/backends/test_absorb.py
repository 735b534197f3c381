"""Zero absorption (distscan.backends.absorb) for float products computed tile by tile, as the GPU kernel
does, checked on the CPU with NumPy: random products with zeros, signed zeros, overflow, infinities
and NaN against NumPy's sequential product, for any tile size and seed."""

import numpy as np

from tests.support.reference import reference_scan
from tests.support.seeds import shared_rng


# --- the GPU's zero fix-up, on the CPU: the same array code with NumPy ----------------------

def _tiled_cumprod(x, seed, tile):
    """What a tile-parallel kernel computes: each tile in order from the product of the tile
    aggregates before it (so a tile's own overflow can meet an earlier zero)."""
    out, prefix = np.empty_like(x), seed
    with np.errstate(all="ignore"):
        for s in range(0, x.size, tile):
            c = np.multiply.accumulate(x[s:s + tile])
            out[s:s + tile] = prefix * c
            prefix = prefix * c[-1]
    return out


def test_gpu_zero_fix_up_logic_on_the_cpu(comm):
    from distscan.backends.absorb import absorb_zeros
    rng = shared_rng(comm)
    big = 1e300
    values = np.array([0.0, -0.0, big, -big, 2.0, -3.0, 0.5, np.inf, -np.inf, np.nan])
    p = np.array([0.05, 0.02, 0.3, 0.1, 0.2, 0.1, 0.19, 0.02, 0.01, 0.01])
    for _ in range(3000):
        n = int(rng.integers(1, 60))
        x = rng.choice(values, n, p=p / p.sum())
        seed = float(rng.choice([1.0, 0.0, -0.0, big, -2.0, np.inf]))
        ref = reference_scan(x, "prod", initial=seed)
        out = _tiled_cumprod(x, seed, tile=int(rng.integers(1, 9))).reshape(-1, 1)
        absorb_zeros(np, x.reshape(-1, 1), out, np.array([seed]), False)
        got = out[:, 0]
        assert ((np.isnan(got) & np.isnan(ref)) | ((got == ref) & (np.signbit(got) == np.signbit(ref)))
                | (np.isfinite(ref) & (ref != 0) & np.isclose(got, ref, rtol=1e-12))).all(), (seed, x, got, ref)

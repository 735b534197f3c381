"""The recurrence tests of tests/gpu/test_operators.py that the tame look-back touches, called in
one process without the file's module fixture (which compiles every module of the file first)."""
import sys
import time

import numpy as np

sys.path.insert(0, ".")
from tests.gpu import test_operators as t  # noqa: E402

cases = [("rare_non_finite", t.test_rare_non_finite_coefficients_among_bounded_tiles_keep_the_zero_rule, dt, None)
         for dt in ("float32", "float64")]
cases += [("overflow", t.test_finite_coefficients_whose_products_overflow_meet_zero_states_by_the_rule, dt, (big, share))
          for dt, big in (("float32", 2.0**70), ("float64", 2.0**600)) for share in (0.4, 2e-4)]
cases += [("zero_rule", t.test_an_infinite_or_nan_coefficient_times_a_zero_is_zero_in_every_lane_thread_and_tile, dt, n)
          for dt in ("float32", "float64") for n in t.SIZES[:5]]
cases += [("matches_cpu", t.test_linear_recurrence_matches_the_cpu, dt, n) for dt in ("float32", "float64") for n in t.SIZES]
failed = 0
for name, fn, dt, arg in cases:
    t0 = time.time()
    rng = np.random.default_rng(hash((name, dt, arg)) & 0xFFFFFFFF)
    try:
        if name == "rare_non_finite":
            fn(dt, rng)
        elif name == "overflow":
            fn(dt, *arg, rng)
        else:
            fn(dt, arg, rng)
        print(f"PASS {name} {dt} {arg} {time.time() - t0:.1f}s", flush=True)
    except Exception as e:  # noqa: BLE001
        failed += 1
        print(f"FAIL {name} {dt} {arg}: {type(e).__name__}: {str(e)[:600]}", flush=True)
print(f"{len(cases) - failed} passed, {failed} failed")

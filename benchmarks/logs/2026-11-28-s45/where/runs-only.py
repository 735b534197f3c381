"""Makes TREE's plain float32 and float64 recurrences compose every thread's run without the zero
rule's tests, unconditionally (the warp scans, the block's fold and the look-back keep them): a
timing-only variant, wrong where a run meets a non-finite coefficient at a zero state.

    python3 runs-only.py TREE
"""
import sys
from pathlib import Path

tree = Path(sys.argv[1])
p = tree / "kernels/util/states.cuh"
s = p.read_text()
rep = [
    ("static constexpr bool RULE = true, TAMES = false;\n    static __device__ __forceinline__ bool finite(R a)",
     "static constexpr bool RULE = true, TAMES = true;\n    static __device__ __forceinline__ bool finite(R a)"),
    ("struct Affine : AffineBase {\n",
     "struct Affine : AffineBase {\n"
     "    template <typename S> __host__ __device__ static constexpr bool tames() { return AffineMul<typename S::Value>::TAMES; }\n"
     "    template <typename S> static __device__ __forceinline__ bool tame(const S &t) { return true; }\n"
     "    template <typename S> static __device__ __forceinline__ S apply_tame(S s, S t) {\n"
     "        S r;\n        r.a = compose_a_tame(s.a, t.a);\n        r.b = compose_b_tame(s.b, t.a, t.b);\n        return r;\n    }\n"),
]
for a, b in rep:
    assert a in s, a
    s = s.replace(a, b, 1)
p.write_text(s)
p = tree / "kernels/util/operators.cuh"
s = p.read_text()
a = "        if (tame) {\n            f(TameTag<true>());\n            return;\n        }"
assert a in s
s = s.replace(a, "        f(TameTag<true>());\n        return;", 1)
p.write_text(s)

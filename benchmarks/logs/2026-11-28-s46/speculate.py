"""Timing-only variants of this tree for the question "what would a speculative tame kernel cost":
    A   every level's zero-rule tests left out unconditionally (variants.py's RU, WU and LU at once:
        the float32 maps' runs, data warps and look-back; wrong for non-finite coefficients)
    AD  A, and every warp tests its lifted items' |a| <= 1 as it lifts them (Tile::lift_aux) and
        sets a global word where one is not: the detection a speculative kernel needs to know that
        its tame result is the rule's (a second, rule-keeping kernel would run only then; not built)
    python3 speculate.py SRC DST A|AD"""
import subprocess
import sys
from pathlib import Path

src, dst, kind = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
here = Path(__file__).resolve().parent
tmp = [dst.with_name(dst.name + "-ru"), dst.with_name(dst.name + "-wu")]
subprocess.run([sys.executable, str(here / "variants.py"), src, str(tmp[0]), "RU"], check=True)
subprocess.run([sys.executable, str(here / "variants.py"), str(tmp[0]), str(tmp[1]), "WU"], check=True)
subprocess.run([sys.executable, str(here / "variants.py"), str(tmp[1]), str(dst), "LU"], check=True)
for t in tmp:
    subprocess.run(["rm", "-rf", str(t)], check=True)
if kind == "AD":
    p = dst / "kernels/tile/tile_agent.cuh"
    s = p.read_text()
    a = ("    template <bool BITS = false>\n"
         "    static __device__ __forceinline__ void lift_aux(const char *smem, int lane, int valid, const Extra<TAcc> &ex,\n"
         "                                                    const AuxRun &aux, TAcc (&items)[ITEMS], unsigned &starts) {\n")
    assert s.count(a) == 1
    b = ("    template <bool BITS = false>\n"
         "    static __device__ __forceinline__ void lift_aux(const char *smem, int lane, int valid, const Extra<TAcc> &ex,\n"
         "                                                    const AuxRun &aux, TAcc (&items)[ITEMS], unsigned &starts) {\n"
         "        lift_aux_body<BITS>(smem, lane, valid, ex, aux, items, starts);\n"
         "        if constexpr (Op::template bounds<TAcc>()) {\n"
         "            bool ok = true;\n"
         "#pragma unroll\n"
         "            for (int i = 0; i < ITEMS; ++i) ok = ok & Op::template bounded<TAcc>(items[i]);\n"
         "            if (!__all_sync(0xffffffffu, ok) && (threadIdx.x & 31) == 0) atomicOr(&g_untame, 1u);\n"
         "        }\n"
         "    }\n"
         "    template <bool BITS = false>\n"
         "    static __device__ __forceinline__ void lift_aux_body(const char *smem, int lane, int valid, const Extra<TAcc> &ex,\n"
         "                                                    const AuxRun &aux, TAcc (&items)[ITEMS], unsigned &starts) {\n")
    s = s.replace(a, b)
    a = "namespace distscan {\n"
    assert a in s
    s = s.replace(a, a + "__device__ unsigned g_untame;  // speculate.py's AD: a warp met a map with |a| > 1\n", 1)
    p.write_text(s)

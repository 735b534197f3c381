"""Timing-only variants of a tree (wrong where a non-finite coefficient meets a zero state), to find
where the tame look-back's float32 look-ahead still loses against WL's:
    RU  the runs tame without their finiteness test
    WU  the data warps tame without their votes
    LU  the look-back (tile_state.cuh) tame without its votes
    python3 variants.py SRC DST KIND"""
import shutil
import sys
from pathlib import Path

src, dst, kind = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src / "kernels", dst / "kernels")
shutil.copytree(src / "distscan", dst / "distscan")


def sub(rel, pairs):
    p = dst / rel
    s = p.read_text()
    for a, b in pairs:
        assert a in s, (rel, a)
        s = s.replace(a, b)
    p.write_text(s)


if kind == "RU":
    sub("kernels/util/operators.cuh", [("        if (tame) {\n            f(TameTag<true>());", "        if (true) {\n            f(TameTag<true>());")])
elif kind == "WU":
    sub("kernels/warp/warp_scan.cuh", [("&& warp_bounded<T, Op>(x) && warp_bounded<T, Op>(y))", ")"),
                                       ("&& warp_bounded<T, Op>(x))", ")")])
    sub("kernels/util/operators.cuh", [("        if (all_bounded<Op>(later)) {", "        if (true) {")])
    sub("kernels/block/block_scan_coarsened.cuh", [("&& all_bounded<Op>(lane_exclusive))", ")")])
elif kind == "LU":
    sub("kernels/tile/tile_state.cuh", [("warp_bounded<T, Op>(", "true || warp_bounded<T, Op>("),
                                        ("all_bounded<Op>(", "true || all_bounded<Op>(")])

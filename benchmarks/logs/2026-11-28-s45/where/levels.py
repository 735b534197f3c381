"""runs-only.py, and the zero rule's tests left out of more levels, unconditionally (timing-only
variants, wrong where a non-finite coefficient meets a zero state):

    python3 levels.py TREE W     the warp scans' (inclusive) and the block's fold of the warp totals
    python3 levels.py TREE WL    W, and the look-back's (its warp reductions and trees)
"""
import subprocess
import sys
from pathlib import Path

tree, level = Path(sys.argv[1]), sys.argv[2]
subprocess.run([sys.executable, str(Path(__file__).with_name("runs-only.py")), str(tree)], check=True)


def sub(rel, pairs):
    p = tree / rel
    s = p.read_text()
    for a, b in pairs:
        assert a in s, (rel, a)
        s = s.replace(a, b)
    p.write_text(s)


sub("kernels/warp/warp_scan.cuh", [("apply_run<Op, T>(", "apply_run<Op, T, true>(")])
sub("kernels/block/block_scan_coarsened.cuh", [
    ("running = apply_run<Op, T>(running, tmp.warp_totals[w]);", "running = apply_run<Op, T, true>(running, tmp.warp_totals[w]);"),
    ("return Op::template apply<T>(warp_exclusive, lane_exclusive);", "return apply_maybe_tame<Op, T, true>(warp_exclusive, lane_exclusive);")])
if level == "WL":
    sub("kernels/warp/warp_scan.cuh", [("Op::template apply<T>(", "apply_maybe_tame<Op, T, true>(")])
    sub("kernels/tile/tile_state.cuh", [("Op::template apply<T>(", "apply_maybe_tame<Op, T, true>(")])

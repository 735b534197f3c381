// distscan/kernels/block/block_scan.cuh -- the block-scan interface, and the algorithm behind
// each name.  One block scans one tile held in registers, ITEMS per thread:
//
//   struct TempStorage;                                        // shared memory it needs
//   template <int ITEMS>
//   static T scan(TempStorage &, T (&items)[ITEMS], T &block_aggregate);
//
// On return items[] holds the inclusive scan of the thread's own run, block_aggregate the
// tile's total, and the result is the thread's exclusive prefix within the tile (the
// tile's own prefix, from the device level, is folded in by the caller).  Every thread of
// the block calls it; it contains barriers.  The association of every result depends only
// on the position, so float results are reproducible.
//
// Block algorithms (the `algorithm=` names; distscan/algorithms.py has the same data flow
// in NumPy):
#pragma once
#include "block_scan_blelloch.cuh"
#include "block_scan_brent_kung.cuh"
#include "block_scan_coarsened.cuh"
#include "block_scan_kogge_stone.cuh"
#include "block_scan_kogge_stone_double_buffer.cuh"

namespace distscan {

enum BlockAlgorithm {
    BLOCK_COARSENED = 0,               // runs, warp shuffles, warp totals (the default)
    BLOCK_KOGGE_STONE = 1,
    BLOCK_KOGGE_STONE_DOUBLE_BUFFER = 2,
    BLOCK_BRENT_KUNG = 3,
    BLOCK_BLELLOCH = 4,
};

template <int ALGO, typename T, typename Op, int BLOCK_THREADS> struct BlockScanFor;
template <typename T, typename Op, int N> struct BlockScanFor<BLOCK_COARSENED, T, Op, N> {
    typedef BlockScanCoarsened<T, Op, N> type;
};
template <typename T, typename Op, int N> struct BlockScanFor<BLOCK_KOGGE_STONE, T, Op, N> {
    typedef BlockScanKoggeStone<T, Op, N> type;
};
template <typename T, typename Op, int N> struct BlockScanFor<BLOCK_KOGGE_STONE_DOUBLE_BUFFER, T, Op, N> {
    typedef BlockScanKoggeStoneDoubleBuffer<T, Op, N> type;
};
template <typename T, typename Op, int N> struct BlockScanFor<BLOCK_BRENT_KUNG, T, Op, N> {
    typedef BlockScanBrentKung<T, Op, N> type;
};
template <typename T, typename Op, int N> struct BlockScanFor<BLOCK_BLELLOCH, T, Op, N> {
    typedef BlockScanBlelloch<T, Op, N> type;
};

}  // namespace distscan

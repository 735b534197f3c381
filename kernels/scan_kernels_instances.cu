// distscan/kernels/scan_kernels_instances.cu -- a few instantiations of the entry points, for a
// standalone build (nvcc -arch=sm_90 -std=c++17 -Ikernels -c kernels/scan_kernels_instances.cu,
// as .ci/run does), so that the compiler checks the templates and `-Xptxas -v` reports registers
// and spills.  The host compiles scan_kernels.cu alone, with the instantiations it names.
#include "scan_kernels.cu"

namespace distscan {
template __global__ void scan_tiles_kernel<int, int, int, Sum, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_COARSENED>>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_tiles_kernel<float, float, float, Sum, true, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_COARSENED>>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, Max, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<signed char, long long, long long, Sum, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>>(
    const signed char *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void scan_tiles_kernel<Complex<float>, Complex<float>, Complex<float>, Prod, true, DEVICE_LOOKBACK,
                                           TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>>(
    const Complex<float> *, Complex<float> *, i64, u64 *, u64 *, u64 *, u64 *, Complex<float>, int,
    Complex<float> *, int, i64);
template __global__ void scan_tiles_kernel<int, bool, bool, LogicalXor, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_COARSENED>>(
    const int *, bool *, i64, u64 *, u64 *, u64 *, u64 *, bool, int, bool *, int, i64);
template __global__ void scan_tiles_kernel<int, int, int, Sum, false, DEVICE_DOMINO,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_KOGGE_STONE>>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, Sum, true, DEVICE_TILES,
                                           TilePolicy<256, 16, 1024, 3, BLOCK_BLELLOCH>>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<float, float, float, Max, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_BRENT_KUNG>>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64);
template __global__ void scan_tiles_kernel<long long, long long, long long, Sum, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 16, 1024, 3, BLOCK_KOGGE_STONE_DOUBLE_BUFFER>>(
    const long long *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void scan_tiles_kernel<int, int, int, Sum, false, DEVICE_LOOKAHEAD,
                                           LookaheadPolicy<TilePolicy<256, 32, 1024, 2, BLOCK_COARSENED>, 4, 2, 1>>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, Sum, true, DEVICE_LOOKAHEAD,
                                           LookaheadPolicy<TilePolicy<256, 16, 1024, 2, BLOCK_COARSENED>, 4, 2, 1>>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<signed char, long long, long long, Sum, false, DEVICE_LOOKAHEAD,
                                           LookaheadPolicy<TilePolicy<256, 16, 1024, 2, BLOCK_COARSENED>, 4, 2, 2>>(
    const signed char *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void add_tile_prefix_kernel<float, float, Sum>(float *, i64, i64, const float *);
template __global__ void reduce_partials_kernel<float, float, Sum>(const float *, i64, float *, int);
template __global__ void reduce_final_kernel<float, Sum>(const float *, int, float *);
template __global__ void add_offset_kernel<long long, long long, Sum>(long long *, i64, long long, int);
template __global__ void add_offset_columns_kernel<double, double, Min>(double *, i64, i64, const double *);
template __global__ void reduce_column_tiles_kernel<int, long long, BitXor>(const int *, i64, i64, int, long long *);
template __global__ void carry_column_tiles_kernel<long long, BitXor>(long long *, i64, i64, i64, SeedColumns<long long>,
                                                                      int, long long *);
template __global__ void scan_column_tiles_kernel<int, long long, long long, BitXor, true>(const int *, long long *, i64,
                                                                                          i64, int, const long long *);
template __global__ void scan_column_tiles_kernel<double, double, double, Sum, false>(const double *, double *, i64, i64,
                                                                                     int, const double *);
// issue 30: the new functors, reverse scans, state operators and the ordered reductions
template __global__ void scan_tiles_kernel<float, float, float, NanSum, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_COARSENED>>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, LogAddExp, false, DEVICE_LOOKAHEAD,
                                           LookaheadPolicy<TilePolicy<128, 16, 1024, 2, BLOCK_COARSENED>, 7, 5, 2>>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<float, float, float, FMax, true, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_COARSENED>>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64);
template __global__ void scan_tiles_kernel<long long, long long, long long, Gcd, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>>(
    const long long *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void scan_tiles_kernel<int, int, int, Lcm, false, DEVICE_LOOKBACK,
                                           TilePolicy<256, 32, 1024, 4, BLOCK_COARSENED>>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_ext_kernel<float, float, float, Sum, true, DEVICE_LOOKAHEAD,
                                         LookaheadPolicy<TilePolicy<64, 32, 1024, 3, BLOCK_COARSENED>, 9, 7, 2>, true>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64,
    const unsigned char *, const void *, int, float, int);
template __global__ void scan_ext_kernel<int, SegState<long long>, long long, Segmented<Sum>, true, DEVICE_LOOKBACK,
                                         TilePolicy<256, 8, 1024, 1, BLOCK_COARSENED>, false>(
    const int *, long long *, i64, u64 *, u64 *, u64 *, u64 *, SegState<long long>, int, SegState<long long> *,
    int, i64, const unsigned char *, const void *, int, SegState<long long>, int);
template __global__ void scan_ext_kernel<float, SegEndsState<float>, float, SegmentedEnds<Max>, false, DEVICE_LOOKBACK,
                                         TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>, true>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, SegEndsState<float>, int, SegEndsState<float> *,
    int, i64, const unsigned char *, const void *, int, SegEndsState<float>, int);
template __global__ void scan_ext_kernel<float, AffState<float>, float, Affine, false, DEVICE_LOOKBACK,
                                         TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>, false>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, AffState<float>, int, AffState<float> *,
    int, i64, const unsigned char *, const void *, int, AffState<float>, int);
template __global__ void scan_ext_kernel<Complex<double>, AffEndsState<Complex<double> >, Complex<double>, AffineEnds,
                                         false, DEVICE_LOOKBACK, TilePolicy<128, 8, 1024, 1, BLOCK_COARSENED>, true>(
    const Complex<double> *, Complex<double> *, i64, u64 *, u64 *, u64 *, u64 *,
    AffEndsState<Complex<double> >, int, AffEndsState<Complex<double> > *, int, i64, const unsigned char *,
    const void *, int, AffEndsState<Complex<double> >, int);
template __global__ void scan_ext_kernel<double, AffStartsState<double>, double, AffineStarts, false, DEVICE_LOOKBACK,
                                         TilePolicy<256, 8, 1024, 1, BLOCK_COARSENED>, false>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, AffStartsState<double>, int,
    AffStartsState<double> *, int, i64, const unsigned char *, const void *, int, AffStartsState<double>, int);
template __global__ void scan_ext_kernel<float, CompState<float>, float, Compensated<Sum>, false, DEVICE_LOOKAHEAD,
                                         LookaheadPolicy<TilePolicy<128, 16, 1024, 2, BLOCK_COARSENED>, 7, 5, 2>, false>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, CompState<float>, int, CompState<float> *,
    int, i64, const unsigned char *, const void *, int, CompState<float>, int);
template __global__ void reduce_tiles_kernel<float, AffState<float>, Affine, TilePolicy<256, 16, 1024, 3, BLOCK_COARSENED>,
                                             true>(const float *, i64, i64, AffState<float> *, int,
                                                   const unsigned char *, const void *, int);
template __global__ void reduce_final_ordered_kernel<SegState<double>, Segmented<NanSum>>(const SegState<double> *, int,
                                                                                          SegState<double> *);
// gcd and lcm: the states' EMPTY identity (util/states.cuh's MarkedIdentity), forwards and reversed
template __global__ void scan_ext_kernel<long long, SegState<long long>, long long, Segmented<Gcd>, true,
                                         DEVICE_LOOKBACK, TilePolicy<256, 8, 1024, 1, BLOCK_COARSENED>, false>(
    const long long *, long long *, i64, u64 *, u64 *, u64 *, u64 *, SegState<long long>, int,
    SegState<long long> *, int, i64, const unsigned char *, const void *, int, SegState<long long>, int);
template __global__ void reduce_final_ordered_kernel<SegEndsState<int>, SegmentedEnds<Lcm>>(const SegEndsState<int> *,
                                                                                           int, SegEndsState<int> *);
}  // namespace distscan

// distscan/kernels/util/types.cuh -- the item types the kernels are instantiated on, and the
// two things every layer needs from them: conversion (input -> accumulator -> output)
// and warp shuffles of any accumulator type.
//
// NumPy dtype -> C++ type (see distscan/backends/cuda/compile.py):
//   bool -> bool, int8 -> signed char, uint8 -> unsigned char, int16 -> short,
//   uint16 -> unsigned short, int32 -> int, uint32 -> unsigned int, int64 -> long long,
//   uint64 -> unsigned long long, float16 -> __half (storage only: the kernels
//   compute float16 data in float, which is exact for max/min and is the accumulator
//   dtype for sum/prod), float32 -> float, float64 -> double,
//   complex64 -> distscan::Complex<float>, complex128 -> distscan::Complex<double>.
#pragma once

#ifdef DISTSCAN_HALF
#include <cuda_fp16.h>
#endif

namespace distscan {

typedef long long i64;
typedef unsigned long long u64;

// Layout-compatible with numpy.complex64 / complex128 (and CuPy's complex<T>
// kernel arguments): two components, aligned to the whole value.
template <typename R>
struct alignas(2 * sizeof(R)) Complex {
    R re;
    R im;
};

// ---------------------------------------------------------------------------
// Limits: lowest / highest value of each arithmetic type (identities of Max/Min).
// ---------------------------------------------------------------------------
template <typename T> struct Limits;
#define DISTSCAN_LIMITS(T, LO, HI)                                              \
    template <> struct Limits<T> {                                              \
        static __device__ __forceinline__ T lowest() { return (T)(LO); }        \
        static __device__ __forceinline__ T highest() { return (T)(HI); }       \
    };
DISTSCAN_LIMITS(bool, false, true)
DISTSCAN_LIMITS(signed char, -128, 127)
DISTSCAN_LIMITS(unsigned char, 0, 255)
DISTSCAN_LIMITS(short, -32768, 32767)
DISTSCAN_LIMITS(unsigned short, 0, 65535)
DISTSCAN_LIMITS(int, (-2147483647 - 1), 2147483647)
DISTSCAN_LIMITS(unsigned int, 0u, 4294967295u)
DISTSCAN_LIMITS(long long, (-9223372036854775807LL - 1), 9223372036854775807LL)
DISTSCAN_LIMITS(unsigned long long, 0ull, 18446744073709551615ull)
DISTSCAN_LIMITS(float, -__int_as_float(0x7f800000), __int_as_float(0x7f800000))
DISTSCAN_LIMITS(double, -__longlong_as_double(0x7ff0000000000000LL),
                __longlong_as_double(0x7ff0000000000000LL))
#undef DISTSCAN_LIMITS

// ---------------------------------------------------------------------------
// Convert<To, From>::apply -- NumPy's astype for one value.  To bool means
// "x != 0" (NaN is true, a complex is true when either part is non-zero), which
// is also how the logical operators read their inputs.
// ---------------------------------------------------------------------------
template <typename To, typename From>
struct Convert {
    static __device__ __forceinline__ To apply(From x) { return static_cast<To>(x); }
};
template <typename From>
struct Convert<bool, From> {
    static __device__ __forceinline__ bool apply(From x) { return x != From(0); }
};
template <>
struct Convert<bool, bool> {
    static __device__ __forceinline__ bool apply(bool x) { return x; }
};
template <typename R, typename From>
struct Convert<Complex<R>, From> {
    static __device__ __forceinline__ Complex<R> apply(From x) {
        Complex<R> c;
        c.re = static_cast<R>(x);
        c.im = R(0);
        return c;
    }
};
template <typename R, typename S>
struct Convert<Complex<R>, Complex<S> > {
    static __device__ __forceinline__ Complex<R> apply(Complex<S> x) {
        Complex<R> c;
        c.re = static_cast<R>(x.re);
        c.im = static_cast<R>(x.im);
        return c;
    }
};
template <typename R>
struct Convert<bool, Complex<R> > {
    static __device__ __forceinline__ bool apply(Complex<R> x) { return x.re != R(0) || x.im != R(0); }
};
// A complex value into a real type keeps its real part, as NumPy's astype does (with a
// ComplexWarning): a complex scan written into a real out=.
template <typename To, typename R>
struct Convert<To, Complex<R> > {
    static __device__ __forceinline__ To apply(Complex<R> x) { return Convert<To, R>::apply(x.re); }
};

#ifdef DISTSCAN_HALF
template <typename To>
struct Convert<To, __half> {
    static __device__ __forceinline__ To apply(__half x) { return Convert<To, float>::apply(__half2float(x)); }
};
template <>
struct Convert<bool, __half> {
    static __device__ __forceinline__ bool apply(__half x) { return __half2float(x) != 0.0f; }
};
template <typename R>
struct Convert<Complex<R>, __half> {
    static __device__ __forceinline__ Complex<R> apply(__half x) {
        return Convert<Complex<R>, float>::apply(__half2float(x));
    }
};
template <typename From>
struct Convert<__half, From> {
    static __device__ __forceinline__ __half apply(From x) { return __float2half_rn(static_cast<float>(x)); }
};
template <typename R>
struct Convert<__half, Complex<R> > {
    static __device__ __forceinline__ __half apply(Complex<R> x) { return Convert<__half, R>::apply(x.re); }
};
template <>
struct Convert<__half, double> {
    // One rounding, as NumPy does (double -> float -> half would round twice).
    static __device__ __forceinline__ __half apply(double x) { return __double2half(x); }
};
template <>
struct Convert<__half, __half> {
    static __device__ __forceinline__ __half apply(__half x) { return x; }
};
#endif

// The unsigned type of a vector load of B bytes (16: uint4, 8: uint2, 4: one word, 1: a byte).
template <int B> struct VectorOf;
template <> struct VectorOf<16> { typedef uint4 type; };
template <> struct VectorOf<8> { typedef uint2 type; };
template <> struct VectorOf<4> { typedef unsigned int type; };
template <> struct VectorOf<1> { typedef unsigned char type; };

// ---------------------------------------------------------------------------
// Shuffles of any trivially copyable accumulator type, as 4-byte words: one implementation
// (shuffle), named by what it does (shfl_up, shfl_xor, shfl_idx).  All 32 lanes take part.
// ---------------------------------------------------------------------------
template <typename T>
union ShuffleWords {
    T value;
    int words[(sizeof(T) + 3) / 4];
};

enum ShuffleKind { SHUFFLE_UP, SHUFFLE_XOR, SHUFFLE_IDX };

// The padding of a value whose size is not a multiple of 4 bytes is shuffled as zeros.
template <ShuffleKind KIND, typename T>
__device__ __forceinline__ T shuffle(T v, int arg) {
    ShuffleWords<T> u;
#pragma unroll
    for (int k = 0; k < (int)((sizeof(T) + 3) / 4); ++k) u.words[k] = 0;
    u.value = v;
#pragma unroll
    for (int k = 0; k < (int)((sizeof(T) + 3) / 4); ++k) {
        if constexpr (KIND == SHUFFLE_UP)
            u.words[k] = __shfl_up_sync(0xffffffffu, u.words[k], (unsigned)arg);
        else if constexpr (KIND == SHUFFLE_XOR)
            u.words[k] = __shfl_xor_sync(0xffffffffu, u.words[k], arg);
        else
            u.words[k] = __shfl_sync(0xffffffffu, u.words[k], arg);
    }
    return u.value;
}

// Lane l gets lane l - delta's v (its own below delta).
template <typename T>
__device__ __forceinline__ T shfl_up(T v, unsigned delta) { return shuffle<SHUFFLE_UP>(v, (int)delta); }
// Lane l gets lane l ^ mask's v.
template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int mask) { return shuffle<SHUFFLE_XOR>(v, mask); }
// Every lane gets lane src's v.
template <typename T>
__device__ __forceinline__ T shfl_idx(T v, int src) { return shuffle<SHUFFLE_IDX>(v, src); }

}  // namespace distscan

// distscan/kernels/util/operators.cuh -- the scan operators, one functor per row of
// distscan/ops.py (column "functor").  Each has
//   template <typename T> static T identity();   // e with op(e, x) == x, bit for bit
//   template <typename T> static T apply(T a, T b);  // a earlier, b later
// All of them are associative and commutative; the kernels still always pass the
// earlier operand first.
//
// Bit-exactness notes:
// * Sum's float identity is -0.0, not +0.0: -0.0 + x == x for every x, including
//   x == -0.0 (+0.0 + -0.0 would give +0.0 and differ from numpy.cumsum).
// * Signed integer Sum/Prod wrap like NumPy: computed in the unsigned type
//   (signed overflow is undefined in C++).
// * Max/Min propagate NaN like numpy.maximum/minimum: if either operand is NaN the
//   result is NaN.
// * On bool, Sum is "or" and Prod is "and", as numpy.add/multiply on bool.
#pragma once
#include "types.cuh"

namespace distscan {

// ---- wrapping integer arithmetic ------------------------------------------------
template <typename T> struct Wrap {
    static __device__ __forceinline__ T add(T a, T b) { return (T)(a + b); }
    static __device__ __forceinline__ T mul(T a, T b) { return (T)(a * b); }
};
template <> struct Wrap<signed char> {
    static __device__ __forceinline__ signed char add(signed char a, signed char b) { return (signed char)(unsigned char)((unsigned)a + (unsigned)b); }
    static __device__ __forceinline__ signed char mul(signed char a, signed char b) { return (signed char)(unsigned char)((unsigned)a * (unsigned)b); }
};
template <> struct Wrap<short> {
    static __device__ __forceinline__ short add(short a, short b) { return (short)(unsigned short)((unsigned)a + (unsigned)b); }
    static __device__ __forceinline__ short mul(short a, short b) { return (short)(unsigned short)((unsigned)a * (unsigned)b); }
};
template <> struct Wrap<unsigned char> {
    static __device__ __forceinline__ unsigned char add(unsigned char a, unsigned char b) { return (unsigned char)((unsigned)a + (unsigned)b); }
    static __device__ __forceinline__ unsigned char mul(unsigned char a, unsigned char b) { return (unsigned char)((unsigned)a * (unsigned)b); }
};
template <> struct Wrap<unsigned short> {
    static __device__ __forceinline__ unsigned short add(unsigned short a, unsigned short b) { return (unsigned short)((unsigned)a + (unsigned)b); }
    static __device__ __forceinline__ unsigned short mul(unsigned short a, unsigned short b) { return (unsigned short)((unsigned)a * (unsigned)b); }
};
template <> struct Wrap<int> {
    static __device__ __forceinline__ int add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
    static __device__ __forceinline__ int mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
};
template <> struct Wrap<long long> {
    static __device__ __forceinline__ long long add(long long a, long long b) { return (long long)((u64)a + (u64)b); }
    static __device__ __forceinline__ long long mul(long long a, long long b) { return (long long)((u64)a * (u64)b); }
};
template <> struct Wrap<bool> {
    static __device__ __forceinline__ bool add(bool a, bool b) { return a || b; }
    static __device__ __forceinline__ bool mul(bool a, bool b) { return a && b; }
};
// Complex products round every real product and sum on its own (no FMA contraction), as
// NumPy does: a contracted a.re*b.re - a.im*b.im is rounded differently depending on which
// product the compiler fuses, so a*b and b*a (the two lanes of a butterfly step), or the
// same code inlined into two kernels, could differ in the last bit.
template <typename R> struct Rounded;
template <> struct Rounded<float> {
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
    static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
    static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
};
template <> struct Rounded<double> {
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
    static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
    static __device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
};
template <typename R> struct Wrap<Complex<R> > {
    static __device__ __forceinline__ Complex<R> add(Complex<R> a, Complex<R> b) {
        Complex<R> c; c.re = a.re + b.re; c.im = a.im + b.im; return c;
    }
    static __device__ __forceinline__ Complex<R> mul(Complex<R> a, Complex<R> b) {
        typedef Rounded<R> F;
        Complex<R> c;
        c.re = F::sub(F::mul(a.re, b.re), F::mul(a.im, b.im));
        c.im = F::add(F::mul(a.re, b.im), F::mul(a.im, b.re));
        return c;
    }
};

// ---- identities ---------------------------------------------------------------------
template <typename T> struct Zero {
    static __device__ __forceinline__ T get() { return T(0); }
};
template <> struct Zero<float> {  // -0.0f: the exact additive identity
    static __device__ __forceinline__ float get() { return __int_as_float(0x80000000); }
};
template <> struct Zero<double> {
    static __device__ __forceinline__ double get() { return __longlong_as_double((long long)0x8000000000000000ULL); }
};
template <typename R> struct Zero<Complex<R> > {
    static __device__ __forceinline__ Complex<R> get() { Complex<R> c; c.re = Zero<R>::get(); c.im = Zero<R>::get(); return c; }
};
template <typename T> struct One {
    static __device__ __forceinline__ T get() { return T(1); }
};
template <typename R> struct One<Complex<R> > {
    static __device__ __forceinline__ Complex<R> get() { Complex<R> c; c.re = R(1); c.im = R(0); return c; }
};

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return false; }
template <> __device__ __forceinline__ bool is_nan<float>(float x) { return x != x; }
template <> __device__ __forceinline__ bool is_nan<double>(double x) { return x != x; }

// ---- the functors ------------------------------------------------------------------------
struct Sum {
    template <typename T> static __device__ __forceinline__ T identity() { return Zero<T>::get(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return Wrap<T>::add(a, b); }
};

struct Prod {
    template <typename T> static __device__ __forceinline__ T identity() { return One<T>::get(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return Wrap<T>::mul(a, b); }
};

struct Max {
    template <typename T> static __device__ __forceinline__ T identity() { return Limits<T>::lowest(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        if (is_nan(a)) return a;
        if (is_nan(b)) return b;
        return (b > a) ? b : a;
    }
};

struct Min {
    template <typename T> static __device__ __forceinline__ T identity() { return Limits<T>::highest(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        if (is_nan(a)) return a;
        if (is_nan(b)) return b;
        return (b < a) ? b : a;
    }
};

// Logical operators work on bool accumulators (inputs are converted with x != 0).
struct LogicalAnd {
    template <typename T> static __device__ __forceinline__ T identity() { return T(true); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return T(bool(a) && bool(b)); }
};
struct LogicalOr {
    template <typename T> static __device__ __forceinline__ T identity() { return T(false); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return T(bool(a) || bool(b)); }
};
struct LogicalXor {
    template <typename T> static __device__ __forceinline__ T identity() { return T(false); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return T(bool(a) != bool(b)); }
};

struct BitAnd {
    template <typename T> static __device__ __forceinline__ T identity() { return (T)(~(u64)0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return (T)(a & b); }
};
struct BitOr {
    template <typename T> static __device__ __forceinline__ T identity() { return T(0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return (T)(a | b); }
};
struct BitXor {
    template <typename T> static __device__ __forceinline__ T identity() { return T(0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return (T)(a ^ b); }
};

}  // namespace distscan

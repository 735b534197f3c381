// distscan/kernels/util/operators.cuh -- the scan operators, one functor per row of
// distscan/ops/table.py (column "functor").  Each has
//   template <typename T> static T identity();   // e with op(e, x) == x, bit for bit
//   template <typename T> static T apply(T a, T b);  // a earlier, b later
// and from OpBase (unless it says otherwise):
//   COMMUTATIVE  a op b == b op a bit for bit: reductions may pair items in any order
//                (state operators, util/states.cuh, are not: every reduction is then ordered)
//   AUX          auxiliary inputs per item (segment flags, coefficients: states.cuh)
//   STATE        a state operator (lift and project take the flags, coefficients and the
//                call's parameter)
//   lift<TAcc, TIn>(x)  an input as the accumulator sees it: NumPy's conversion; the NaN-aware
//                sums and products read NaN as their identity here, in the load, with no
//                pass of their own
//   INTERLEAVE   an application is a long dependent chain (compares and selects, exp and log1p,
//                a state's several operations): the look-ahead kernel then runs its two tiles'
//                per-thread chains interleaved (agent_lookahead.cuh).  False for the sums and
//                the other one-instruction operators, whose kernels stay as measured.
//   RUN_STATE    a thread scans its run of items in a state of the operator's own (Run<T>),
//                cheaper per item than applications (logaddexp below; the compensated sum,
//                states.cuh).  Such an operator also has
//                  template <typename T> struct Run;        the run's state
//                  run_begin<T>(T p)                        the state of the value p
//                  run_add<T>(Run<T> &r, T x)               r becomes r op x, where x is a
//                                                           lifted item or the identity
//                  run_value<T>(const Run<T> &r)            r as a value
//                The block scans then total a thread's run and leave its items as lifted
//                (block_scan_runs.cuh); the store scans them again from the thread's prefix
//                (tile_agent.cuh).  The same results up to rounding, in a fixed association.
//   tames<T>()   a rule of the operator's applications that only a later operand b out of
//                range invokes (the affine maps' zero rule: b's coefficient not finite,
//                util/states.cuh) may be left out where no such b is: tame<T>(b) says whether
//                b is in range, and apply_tame<T>(a, b) is apply(a, b) for such a b, the same
//                bits, without the rule's tests (a run whose every later operand is tame folds
//                by it: all_tame and by_tameness below).  False for the others.
//   bounds<T>()  the same rule cannot apply to any fold of states that are all bounded<T>() (the
//                affine maps: |a| <= 1, so that no product of them overflows): the look-back
//                (tile/tile_state.cuh) folds its aggregates by apply_tame where a warp finds
//                every one of them bounded.  False for the others.
//   warps_bound<T>()  with bounds<T>(): the data warps (the warp scans of the run totals and the
//                block's fold of the warp totals) vote on the bounds too, not only the look-back
//                (operators with bounds but not this: their data warps keep the rule).
//   PREFIX_UNDER_LOAD  where the look-back with its reduction lead takes a tile's prefix
//                (agent_scan.cuh): under the tile's load (true) or after its block scan, with a
//                second barrier (false: the segmented scans, states.cuh).  Same bits either way.
//   warp_joins<T>()  the warp scans' and reductions' chains of joins (warp/warp_scan.cuh) may
//                take join_warp<T>(a, b), cheaper than apply, whose states close_warp<T>(x) turns
//                back into apply's form, the same value, at the chain's end (the compensated
//                float sum, util/states.cuh).  False for the others.
// The kernels always pass the earlier operand first.
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
    static __device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
};
template <> struct Rounded<double> {
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
    static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
    static __device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
    static __device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
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
template <> __device__ __forceinline__ bool is_nan<Complex<float> >(Complex<float> x) { return x.re != x.re || x.im != x.im; }
template <> __device__ __forceinline__ bool is_nan<Complex<double> >(Complex<double> x) { return x.re != x.re || x.im != x.im; }

// What every functor shares unless it says otherwise (see the top of this file).
struct OpBase {
    static constexpr bool COMMUTATIVE = true;
    static constexpr int AUX = 0;
    static constexpr bool STATE = false;
    static constexpr bool INTERLEAVE = false;
    static constexpr bool RUN_STATE = false;
    static constexpr bool PREFIX_UNDER_LOAD = true;
    static constexpr bool RUN_APPLY = false;  // apply_run below
    static constexpr bool RUN_BITS = false, BITS_AT_FIRST = false;  // StateOpBase (util/states.cuh)
    template <typename T> __host__ __device__ static constexpr bool tames() { return false; }
    template <typename T> __host__ __device__ static constexpr bool bounds() { return false; }
    template <typename T> __host__ __device__ static constexpr bool warps_bound() { return false; }
    template <typename T> __host__ __device__ static constexpr bool warp_joins() { return false; }  // above
    template <typename TAcc, typename TIn> static __device__ __forceinline__ TAcc lift(TIn x) {
        return Convert<TAcc, TIn>::apply(x);
    }
};

// a op b inside a thread's run (block_scan_runs.cuh: the per-item chains), in the warp scan of
// the run totals and in the block scan's fold of the warp totals (block_scan_coarsened.cuh),
// where b is a lifted item or a real state, or the identity with only identities before it (a
// reverse scan pads its first items in scan order; only operators with RUN_APPLY take this
// route, and they are reverse ones).  Op::apply must also take the identity on the right of
// real states (a warp's lane 0, a tile's prefix and the look-back's trees put it there); an
// operator whose apply pays for that on the per-item chain (RUN_APPLY: the reverse segmented
// states, util/states.cuh) gives the cheaper combine for runs as apply_run.
// TAME: b is tame (Op::tame, checked by the caller: all_tame): Op::apply_tame serves, the same bits.
template <typename Op, typename T, bool TAME> __host__ __device__ constexpr bool tame_serves() {
    return TAME && (Op::template tames<T>() || Op::template bounds<T>());  // (bounds below)
}
template <typename Op, typename T, bool TAME = false> __device__ __forceinline__ T apply_run(const T &a, const T &b) {
    if constexpr (tame_serves<Op, T, TAME>()) {
        return Op::template apply_tame<T>(a, b);
    } else if constexpr (Op::RUN_APPLY) {
        return Op::template apply_run<T>(a, b);
    } else {
        return Op::template apply<T>(a, b);
    }
}

// Op::apply(a, b), or Op::apply_tame where TAME (b tame, or bounded: bounds below): for runs that
// may hold the identity, and the look-back.
template <typename Op, typename T, bool TAME> __device__ __forceinline__ T apply_maybe_tame(const T &a, const T &b) {
    if constexpr (tame_serves<Op, T, TAME>()) {
        return Op::template apply_tame<T>(a, b);
    } else {
        return Op::template apply<T>(a, b);
    }
}

// Whether every state of `later` is tame (Op::tame): the items a thread's run folds on the right,
// known before the fold, so that one test an item (for the affine maps, that its coefficient is
// finite) replaces the rule's tests in every application, and the fold's chain carries none.
// False at compile time for operators without tameness (the caller's tame branch is then dead).
// Whether test(x) holds for every x of xs (every test made: no branch between them)
template <typename T, int N, typename Test> __device__ __forceinline__ bool every(const T (&xs)[N], Test test) {
    bool ok = true;
#pragma unroll
    for (int i = 0; i < N; ++i) ok = ok & test(xs[i]);
    return ok;
}
template <typename Op, typename T, int N> __device__ __forceinline__ bool all_tame(const T (&later)[N]) {
    if constexpr (Op::template tames<T>()) return every(later, [](const T &s) { return Op::template tame<T>(s); });
    else return false;
}

// Whether every state of `later` is bounded (Op::bounded; operators.cuh, bounds): false at compile
// time for operators without bounds.
template <typename Op, typename T, int N> __device__ __forceinline__ bool all_bounded(const T (&later)[N]) {
    if constexpr (Op::template bounds<T>()) return every(later, [](const T &s) { return Op::template bounded<T>(s); });
    else return false;
}
template <typename Op, typename T> __device__ __forceinline__ bool all_bounded(const T &later) {
    if constexpr (Op::template bounds<T>()) return Op::template bounded<T>(later);
    else return false;
}
// a op b, without the rule's tests where b is bounded (tested here, one state): the look-back's
// and the block's folds of a published or a warp's state into what precedes it.  Same bits.
template <typename Op, typename T> __device__ __forceinline__ T apply_if_bounded(const T &a, const T &b) {
    return all_bounded<Op>(b) ? apply_maybe_tame<Op, T, true>(a, b) : Op::template apply<T>(a, b);
}

// f(std::integral_constant-like tag) with the tag's value `tame` known at compile time: the one
// branch a run's fold takes by all_tame (both compiled for operators with tameness, one for the rest).
template <bool V> struct TameTag {
    static constexpr bool value = V;
};
// Whether the data warps vote on bounds (OpBase, warps_bound)
template <typename Op, typename T> __host__ __device__ constexpr bool data_warps_bound() {
    if constexpr (Op::template bounds<T>()) return Op::template warps_bound<T>();
    else return false;
}
// f(TameTag<yes>()) where COMPILED (both branches compiled), else f(TameTag<false>()) alone
template <bool COMPILED, typename F> __device__ __forceinline__ void by_tag(bool yes, F &&f) {
    if constexpr (COMPILED) {
        if (yes) {
            f(TameTag<true>());
            return;
        }
    }
    f(TameTag<false>());
}
// f(TameTag) by all_bounded(later) in the data warps: both branches for operators whose data warps
// vote on bounds (data_warps_bound), one for the rest
template <typename Op, typename T, int N, typename F> __device__ __forceinline__ void by_bounds(const T (&later)[N], F &&f) {
    by_tag<data_warps_bound<Op, T>()>(all_bounded<Op>(later), f);
}
template <typename Op, typename T, typename F> __device__ __forceinline__ void by_tameness(bool tame, F &&f) {
    by_tag<Op::template tames<T>()>(tame, f);
}

// What an empty prefix gives, as NumPy presents it: the identity, but +0.0 for float sums
// (whose identity above is -0.0, the exact neutral).
template <typename Op, typename T> struct Presented {
    static __device__ __forceinline__ T get() { return Op::template identity<T>(); }
};

// ---- the functors ------------------------------------------------------------------------
struct Sum : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return Zero<T>::get(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return Wrap<T>::add(a, b); }
};

struct Prod : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return One<T>::get(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return Wrap<T>::mul(a, b); }
};

// Max, Min, FMax, FMin and the logaddexps are written as selects, not early returns: the
// returns compiled to a branch and a convergence barrier per application (BSSY/BRA/BSYNC, 9
// instructions on the scan's dependent chain for float Max against 3: FSETP, FSETP, FSEL on
// sm_90), and the look-ahead kernel's few warps per SM wait on that chain.  The same value in
// every case, bit for bit: !(b <= a) is "b > a, or b is NaN" (unordered).
struct Max : OpBase {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() { return Limits<T>::lowest(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        return (!is_nan(a) && !(b <= a)) ? b : a;  // a if a is NaN, else b if b is NaN or larger
    }
};

struct Min : OpBase {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() { return Limits<T>::highest(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        return (!is_nan(a) && !(b >= a)) ? b : a;  // a if a is NaN, else b if b is NaN or smaller
    }
};

// Logical operators work on bool accumulators (inputs are converted with x != 0).
struct LogicalAnd : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return T(true); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return T(bool(a) && bool(b)); }
};
struct LogicalOr : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return T(false); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return T(bool(a) || bool(b)); }
};
struct LogicalXor : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return T(false); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return T(bool(a) != bool(b)); }
};

struct BitAnd : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return (T)(~(u64)0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return (T)(a & b); }
};
struct BitOr : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return T(0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return (T)(a | b); }
};
struct BitXor : OpBase {
    template <typename T> static __device__ __forceinline__ T identity() { return T(0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return (T)(a ^ b); }
};

template <typename T> struct Presented<Sum, T> {
    static __device__ __forceinline__ T get() { return Convert<T, int>::apply(0); }
};

// ---- NaN-aware: numpy.nancumsum / nancumprod (NaN read as 0 / 1), fmax / fmin -------------
struct NanSum : Sum {
    template <typename TAcc, typename TIn> static __device__ __forceinline__ TAcc lift(TIn x) {
        const TAcc v = Convert<TAcc, TIn>::apply(x);
        return is_nan(v) ? Convert<TAcc, int>::apply(0) : v;  // +0.0, as NumPy's replacement
    }
};
template <typename T> struct Presented<NanSum, T> {
    static __device__ __forceinline__ T get() { return Convert<T, int>::apply(0); }
};

struct NanProd : Prod {
    template <typename TAcc, typename TIn> static __device__ __forceinline__ TAcc lift(TIn x) {
        const TAcc v = Convert<TAcc, TIn>::apply(x);
        return is_nan(v) ? One<TAcc>::get() : v;
    }
};

// fmax/fmin skip NaN: NaN is their neutral element (integers: the lowest / highest value).
template <typename T> struct QuietNan {
    static __device__ __forceinline__ T get() { return T(0); }
};
template <> struct QuietNan<float> {
    static __device__ __forceinline__ float get() { return __int_as_float(0x7fc00000); }
};
template <> struct QuietNan<double> {
    static __device__ __forceinline__ double get() { return __longlong_as_double(0x7ff8000000000000LL); }
};
template <typename T> __device__ __forceinline__ constexpr bool has_nan() { return false; }
template <> __device__ __forceinline__ constexpr bool has_nan<float>() { return true; }
template <> __device__ __forceinline__ constexpr bool has_nan<double>() { return true; }

struct FMax : OpBase {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() {
        return has_nan<T>() ? QuietNan<T>::get() : Limits<T>::lowest();
    }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        return (is_nan(a) || b > a) ? b : a;  // b if a is NaN; a if b is NaN (b > NaN is false)
    }
};
struct FMin : OpBase {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() {
        return has_nan<T>() ? QuietNan<T>::get() : Limits<T>::highest();
    }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        return (is_nan(a) || b < a) ? b : a;
    }
};
// An empty prefix of nanmax / nanmin as the host presents it (distscan/ops/table.py: -inf, +inf;
// the lowest and highest integers), not the NaN they skip: a segmented exclusive scan's segment
// starts gave NaN until 2026-11-25.
template <typename T> struct Presented<FMax, T> {
    static __device__ __forceinline__ T get() { return Limits<T>::lowest(); }
};
template <typename T> struct Presented<FMin, T> {
    static __device__ __forceinline__ T get() { return Limits<T>::highest(); }
};

// ---- logcumsumexp: numpy.logaddexp / logaddexp2, as npy_logaddexp computes them ----------
template <typename T> struct LogMath;
template <> struct LogMath<float> {
    static __device__ __forceinline__ float log1p_(float x) { return log1pf(x); }
    static __device__ __forceinline__ float exp_(float x) { return expf(x); }
    static __device__ __forceinline__ float exp2_(float x) { return exp2f(x); }
    static __device__ __forceinline__ float log_(float x) { return logf(x); }
    static __device__ __forceinline__ float log2_(float x) { return log2f(x); }
};
template <> struct LogMath<double> {
    static __device__ __forceinline__ double log1p_(double x) { return log1p(x); }
    static __device__ __forceinline__ double exp_(double x) { return exp(x); }
    static __device__ __forceinline__ double exp2_(double x) { return exp2(x); }
    static __device__ __forceinline__ double log_(double x) { return log(x); }
    static __device__ __forceinline__ double log2_(double x) { return log2(x); }
};

// The exp and log of a thread's logaddexp run (below).  Their arguments are bounded: exp's is
// -|x - m| <= 0 and log's s in [1, items + 1].  So float takes the hardware's approximations
// (MUFU.EX2 and MUFU.LG2, a multiply each): __expf's error of 2 + 1.2|k| ulp on exp(k) weighs
// exp(k)|k| <= 1/e of an ulp of s, and __logf's on s >= 1 is within 2^-21.4 absolute -- against
// the result's own rounding, the same order as npy_logaddexp's on a log1p near 0.  (The accurate
// expf and logf cost ~10 and ~20 instructions on the run's chain.)  Double has no
// approximations: the accurate functions.
template <typename T, bool BASE2> struct RunExpLog {
    static __device__ __forceinline__ T exp_(T k) { return BASE2 ? LogMath<T>::exp2_(k) : LogMath<T>::exp_(k); }
    static __device__ __forceinline__ T log_(T s) { return BASE2 ? LogMath<T>::log2_(s) : LogMath<T>::log_(s); }
};
template <bool BASE2> struct RunExpLog<float, BASE2> {
    static __device__ __forceinline__ float exp_(float k) { return BASE2 ? exp2f(k) : __expf(k); }
    static __device__ __forceinline__ float log_(float s) { return BASE2 ? __log2f(s) : __logf(s); }
};

// A thread's run of logaddexp (BASE2: logaddexp2) as an online (max, sum of exp) pair: the value
// m + log(s), where s is the sum of exp(x - m) over the run's items and m the largest so far.
// An item costs one exp (of -|x - m|: the larger of the two scales by 1) to add, and one log to
// read out, where two applications cost two exps and two log1ps (H200, 2^27, float32: 1633 GB/s
// with applications, benchmarks/RESULTS.md "Costly operators").  s >= 1 (the largest item adds
// exp(0)), so the log never meets 0 nor underflow.  Infinities and NaN as npy_logaddexp: the same
// infinity twice adds 1 (its d = inf - inf is NaN), -inf adds nothing, NaN makes m NaN.
template <typename T, bool BASE2> struct LogSumExpRun {
    T m;
    T s;
    static __device__ __forceinline__ LogSumExpRun begin(T p) {
        LogSumExpRun r;
        r.m = p;
        r.s = T(1);
        return r;
    }
    __device__ __forceinline__ void add(T x) {
        const T d = x - m;
        const bool up = d > T(0);
        const T k = up ? -d : d;
        const T t = (x == m) ? T(1) : RunExpLog<T, BASE2>::exp_(k);
        s = up ? s * t + T(1) : s + t;
        m = (up || x != x) ? x : m;
    }
    __device__ __forceinline__ T value() const { return m + RunExpLog<T, BASE2>::log_(s); }
};

// OpBase with RUN_STATE's members, for an operator whose run state RunOf<T> has begin, add and
// value (above).
template <template <typename> class RunOf> struct RunByMembers : OpBase {
    static constexpr bool RUN_STATE = true;
    template <typename T> using Run = RunOf<T>;
    template <typename T> static __device__ __forceinline__ RunOf<T> run_begin(T p) { return RunOf<T>::begin(p); }
    template <typename T> static __device__ __forceinline__ void run_add(RunOf<T> &r, T x) { r.add(x); }
    template <typename T> static __device__ __forceinline__ T run_value(const RunOf<T> &r) { return r.value(); }
};
template <typename T> using LogAddExpRun = LogSumExpRun<T, false>;
template <typename T> using LogAddExp2Run = LogSumExpRun<T, true>;

// npy_logaddexp: a == b gives a + log(2) (also for -inf and +inf); otherwise the larger plus
// log1p(exp(-|a - b|)); NaN gives a - b.  One exp and one log1p of the same arguments as the
// branches of npy_logaddexp (so the same bits), selected rather than branched to: the branches
// diverged on random data and doubled the SASS per application (1108 branches in the float
// look-ahead kernel; an application ~100 instructions with its two paths, ~50 as selects).
struct LogAddExp : RunByMembers<LogAddExpRun> {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() { return Limits<T>::lowest(); }  // -inf
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        const T d = a - b;
        const bool a_larger = d > T(0);
        const T r = (a_larger ? a : b) + LogMath<T>::log1p_(LogMath<T>::exp_(a_larger ? -d : d));
        return (a == b) ? a + T(0.693147180559945309417232121458176568) : (d == d ? r : d);
    }
};
struct LogAddExp2 : RunByMembers<LogAddExp2Run> {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() { return Limits<T>::lowest(); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        const T log2e = T(1.442695040888963407359924681001892137);
        const T d = a - b;
        const bool a_larger = d > T(0);
        const T r = (a_larger ? a : b) + log2e * LogMath<T>::log1p_(LogMath<T>::exp2_(a_larger ? -d : d));
        return (a == b) ? a + T(1) : (d == d ? r : d);
    }
};

// ---- numpy.gcd / numpy.lcm of integers (non-negative results, as NumPy's) ---------------
template <typename T> __device__ __forceinline__ T abs_int(T x) { return x < T(0) ? T(T(0) - x) : x; }
template <> __device__ __forceinline__ bool abs_int<bool>(bool x) { return x; }
template <typename T> __device__ __forceinline__ T gcd_int(T a, T b) {
    a = abs_int(a);
    b = abs_int(b);
    while (b != T(0)) {
        const T t = T(a % b);
        a = b;
        b = t;
    }
    return a;
}
struct Gcd : OpBase {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() { return T(0); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) { return gcd_int(a, b); }
};
struct Lcm : OpBase {
    static constexpr bool INTERLEAVE = true;
    template <typename T> static __device__ __forceinline__ T identity() { return T(1); }
    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {
        const T g = gcd_int(a, b);
        return g == T(0) ? T(0) : abs_int(Wrap<T>::mul(T(a / g), b));
    }
};

}  // namespace distscan

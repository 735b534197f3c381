// distscan/kernels/util/states.cuh -- state operators: scans whose items combine as a small
// struct, not as bare values (distscan/ops/state.py has the same formulas in NumPy, and the
// structs' layout: the host passes seeds and reads totals as their bytes).
//
// Besides identity() and apply() (a earlier, b later: NOT commutative), a state functor has
//   lift<S, TIn>(x, flag, coef)     the item's state from its input and auxiliary inputs
//   project<TOut>(s, param, has)    the output of a state (param: the call's initial, which
//                                   segmented and affine scans apply to every segment)
//   fresh(prev, start)              whether an item of an exclusive scan starts a segment
//                                   (prev: the state before it; start: its own flag), and
//   first<TOut>(param, has)         what such an item gets.
//
//   Segmented<Base>      (value, flag): a flag starts a segment; the state before it is dropped
//   SegmentedEnds<Base>  (value, inner, end): the reverse scan of the same runs, in which a
//                        flag marks a segment's last item in scan order
//   Affine               (a, b): maps y -> a*y + b composed in order (a linear recurrence)
//   AffineStarts/Ends    with segments, as the two above
//   Compensated<Base>    (s, e): a float sum and its error, combined by TwoSum
#pragma once
#include "operators.cuh"

namespace distscan {

template <typename V> struct SegState {
    typedef V Value;
    V value;
    unsigned char flag;  // 0 or 1; EMPTY in the identity of gcd and lcm (MarkedIdentity below)
};
template <typename V> struct SegEndsState {
    typedef V Value;
    V value;
    bool inner;
    unsigned char end;  // 0 or 1; EMPTY in the identity
};
template <typename V> struct AffState {
    typedef V Value;
    V a;
    V b;
};
template <typename V> struct AffStartsState {
    typedef V Value;
    V a;
    V b;
    bool flag;
};
template <typename V> struct AffEndsState {
    typedef V Value;
    V a;
    V b;
    bool inner;
    unsigned char end;  // 0 or 1; EMPTY in the identity
};
template <typename V> struct CompState {
    typedef V Value;
    V s;
    V e;
};

// Where the kernels pad with the identity (kernels/tile/tile_agent.cuh's items past the end, lane
// 0, a thread's first item, tile 0 without a seed, the ordered reduction's idle threads), it must
// be neutral there, bit for bit: a scan's total and a part's reduction are the carries between
// ranks and between a file's pieces.  It stands on both sides of items: a forward scan pads on
// the right (its last tile's items past the end), a reverse one on the left (its partial tile
// comes first in scan order), and the block scan and the look-back's trees put it on the right
// of real states (scan_down's lane 0 and a tile's thread 0: prefix op identity; the lanes past a
// sub-window's tiles in wait_aggregates).  SegmentedEnds' and AffineEnds' identity therefore holds
// EMPTY in its `end` byte (no item's lift gives it), and their combines keep the other side's end
// where one side is EMPTY: with end 0, the identity on the right of a state whose last item ends a
// segment reset that end, and a reverse segmented exclusive scan gave the neutral value (NaN for
// nanmax, -0.0 for sums) at such a segment's first item (at warp, tile and sub-window
// boundaries; found 2026-11-25).  That marker is on the flags' chain alone.
// The base operator's identity is exact on both sides for every operator but gcd and lcm
// (gcd(-6, 0) is 6, and NumPy's accumulate copies a segment's first item as it is): there the
// states' marker byte holds EMPTY in the identity (Segmented's flag too), and the combines return
// the other side's value as it is, by selects.  Only there: the selects put the marker on the
// per-item value chains, and cost the reverse segmented sum f32 31 % (H100, 2^27, 2637 -> 1828
// GB/s) and the reverse segmented recurrence 22 % where every operator had them.
constexpr unsigned char EMPTY = 2;
template <typename Base> struct MarkedIdentity {
    static constexpr bool value = false;
};
template <> struct MarkedIdentity<Gcd> {
    static constexpr bool value = true;
};
template <> struct MarkedIdentity<Lcm> {
    static constexpr bool value = true;
};

// Base's a op b where a or b may be the EMPTY identity (a_empty, b_empty): the other as it is.
template <typename Base, typename V>
__device__ __forceinline__ V apply_marked(V a, V b, bool a_empty, bool b_empty) {
    const V r = Base::template apply<V>(a, b);
    return b_empty ? a : (a_empty ? b : r);
}

// RESTARTS and restarts(s): whether a state s holds a segment start in scan order that drops all
// before it exactly, so that r . s is s, every field, for any r (the combines below: a Segmented
// or AffineStarts b whose flag is 1 is returned as it is; a SegmentedEnds or AffineEnds b whose
// inner is set keeps its value, inner stays set and end is b's).  The ordered reduction reads a
// run of tiles from its last one back and stops there (agent_reduce.cuh: reduce_tiles), so that a
// segmented part's carry reads its last segment, not the part (distscan.ops.restarts.carry_rows says
// the same of the CPU's loops).
struct StateOpBase {
    static constexpr bool RESTARTS = false;
    template <typename S> static __device__ __forceinline__ bool restarts(const S &) { return false; }
    static constexpr bool COMMUTATIVE = false;
    static constexpr bool STATE = true;
    static constexpr bool INTERLEAVE = true;
    static constexpr bool RUN_STATE = false;
    static constexpr bool PREFIX_UNDER_LOAD = true;
    static constexpr bool RUN_APPLY = false;
    // RUN_BITS: a thread's run of lifted items may be folded by their flags' bits (Tile::lift_aux's
    // `starts`, bit i item i's flag in scan order): apply_bits(a, b, starts, i) is apply(a, b) for
    // b the run's item i >= 1 and a the fold of the items before it, the flag bytes unread, and
    // close_run(run, starts, last) sets the run total's flags from the bits (tile_agent.cuh,
    // run_total_bits and store_rescanned).
    static constexpr bool RUN_BITS = false;
    // Whether apply_bits also serves item 0 of a run, whose left is the thread's prefix (a state,
    // not a bit): where it reads only b's own bit
    static constexpr bool BITS_AT_FIRST = false;
    template <typename S> static __device__ __forceinline__ bool fresh(const S &, bool) { return false; }
    // Whether project() reads more of a state with the call's parameter than without it (AffineBase:
    // a, for a*param + b): the tile's store is then compiled twice (tile_agent.cuh, store and
    // store_rescanned), once for each value of Extra::has_param, so that without one no output
    // computes what it drops.
    static constexpr bool PARAM_READS_MORE = false;
    // Whether the look-ahead scans a thread's run again from the stage for states S (RESCAN,
    // agent/agent_lookahead.cuh): for operators with auxiliary inputs, but AffineBase's below.
    template <typename S> __host__ __device__ static constexpr bool rescans() { return true; }
    template <typename S> __host__ __device__ static constexpr bool tames() { return false; }  // operators.cuh
    template <typename S> __host__ __device__ static constexpr bool bounds() { return false; }  // operators.cuh
    template <typename S> __host__ __device__ static constexpr bool warp_joins() { return false; }  // operators.cuh
};

// The segmented scans take a lead tile's prefix after the block scan (operators.cuh,
// PREFIX_UNDER_LOAD): under the load, where the recurrences and the compensated sum gained
// 7-14 % and 4.6 % on the H200, they lost 6-7 % on the H100 (float32 2720 -> 2566 GB/s, int64
// 2600 -> 2408, reverse 3 %) and float32 2 % on the H200 (benchmarks/RESULTS.md, "The segmented
// scans' prefix after the scan again").
struct SegmentedBase : StateOpBase {
    static constexpr int AUX = 1;  // the flags
    static constexpr bool PREFIX_UNDER_LOAD = false;
};

// ---- segmented scans over a plain operator -----------------------------------------------
template <typename Base>
struct Segmented : SegmentedBase {
    static constexpr bool MARKED = MarkedIdentity<Base>::value;
    static constexpr bool RESTARTS = true;
    template <typename S> static __device__ __forceinline__ bool restarts(const S &s) { return s.flag == 1; }
    template <typename S> static __device__ __forceinline__ S identity() {
        S s;
        s.value = Base::template identity<typename S::Value>();
        s.flag = MARKED ? EMPTY : 0;
        return s;
    }
    template <typename S> static __device__ __forceinline__ S apply(S a, S b) {
        S r;
        if constexpr (MARKED) {
            const bool a_empty = a.flag == EMPTY, b_empty = b.flag == EMPTY;
            r.value = (b.flag == 1) ? b.value : apply_marked<Base>(a.value, b.value, a_empty, b_empty);
            r.flag = b_empty ? a.flag : (a_empty ? b.flag : (unsigned char)(a.flag | b.flag));
        } else {
            r.value = b.flag ? b.value : Base::template apply<typename S::Value>(a.value, b.value);
            r.flag = a.flag | b.flag;
        }
        return r;
    }
    template <typename S, typename TIn, typename TC>
    static __device__ __forceinline__ S lift(TIn x, bool flag, TC) {
        S s;
        s.value = Base::template lift<typename S::Value, TIn>(x);
        s.flag = flag;
        return s;
    }
    // apply(a, b) by the bits, but the flag: a's (close_run sets it; StateOpBase::RUN_BITS).  The
    // flag byte's round trip through a register (its extraction, packing and test an item: SASS
    // PRMT, SHF, ISETP) left the look-ahead's runs of segmented float32 at about six instructions
    // an item, against two here (a test of the bit and the select's FADD).  Not with the EMPTY
    // marker (MARKED).
    static constexpr bool RUN_BITS = !MARKED, BITS_AT_FIRST = true;
    template <typename S> static __device__ __forceinline__ S apply_bits(S a, const S &b, unsigned starts, int i) {
        a.value = (starts & (1u << i)) != 0u ? b.value : Base::template apply<typename S::Value>(a.value, b.value);
        return a;
    }
    template <typename S> static __device__ __forceinline__ void close_run(S &run, unsigned starts, int) {
        run.flag = starts != 0u;
    }
    // MARKED: before a scan's first item (the EMPTY identity: an exclusive scan whose first row
    // starts no flagged segment) the initial as it is, as NumPy's accumulate copies it (gcd(-6, 0)
    // would be 6; the CPU's loops give -6: found 2026-11-28, tests/gpu/test_state_columns.py)
    template <typename TOut, typename S> static __device__ __forceinline__ TOut project(const S &s, const S &p, bool has) {
        typedef typename S::Value V;
        if constexpr (MARKED) {
            return Convert<TOut, V>::apply(has ? apply_marked<Base>(p.value, s.value, false, s.flag == EMPTY) : s.value);
        } else {
            return Convert<TOut, V>::apply(has ? Base::template apply<V>(p.value, s.value) : s.value);
        }
    }
    template <typename S> static __device__ __forceinline__ bool fresh(const S &, bool start) { return start; }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut first(const S &p, bool has) {
        typedef typename S::Value V;
        return Convert<TOut, V>::apply(has ? p.value : Presented<Base, V>::get());
    }
};

template <typename Base>
struct SegmentedEnds : SegmentedBase {
    // The identity's end is EMPTY for every base (no item's lift gives it): on the right of a state
    // whose last item ends a segment, it keeps that end (the block scan's and the look-back's
    // trees put it there: lanes past a sub-window's tiles, a warp's lane 0, a tile's thread 0).
    // With end 0 it reset it, and a reverse segmented exclusive scan gave the neutral value (NaN
    // for nanmax, -0.0 for sums) at such a segment's first item (found 2026-11-25).  The marker
    // is on the flags' chain alone; the value takes apply_marked's selects only where the base's
    // identity is not neutral on both sides (MARKED: gcd, lcm).
    static constexpr bool MARKED = MarkedIdentity<Base>::value;
    static constexpr bool RESTARTS = true;
    template <typename S> static __device__ __forceinline__ bool restarts(const S &s) { return s.inner; }
    template <typename S> static __device__ __forceinline__ S identity() {
        S s;
        s.value = Base::template identity<typename S::Value>();
        s.inner = false;
        s.end = EMPTY;
        return s;
    }
    template <typename S> static __device__ __forceinline__ S apply(S a, S b) {
        const bool b_empty = b.end == EMPTY;
        // a segment ends in a, and items follow in b
        return join(a, b, (a.end == 1) & !b_empty, b_empty ? a.end : b.end);
    }
    // apply inside a thread's run, the warp scan of the run totals and scan_down's fold
    // (operators.cuh, apply_run): b is an item or a real state, or the identity after identities
    // alone (a reverse scan pads first), so b's end is the result's.  apply's select on b's marker
    // made each item's end wait for the one before it: a serial chain that cost the reverse
    // segmented sum f32 a third (H200, 2^27, 2951 -> 1967 GB/s, 2026-11-25).
    static constexpr bool RUN_APPLY = true;
    template <typename S> static __device__ __forceinline__ S apply_run(S a, S b) {
        return join(a, b, a.end == 1, b.end);
    }
    // apply_run by the bits (StateOpBase::RUN_BITS): a cut where item i - 1 ends a segment, b's end
    // its bit (an exclusive scan's fresh() reads it), inner left to close_run.  Whole runs only:
    // a reverse scan pads a partial run first, with the EMPTY identity, whose end no bit says
    // (tile_agent.cuh takes the byte path there).  The look-ahead's reverse segmented float32
    // sum went from 0.594 to 0.511 ms at 2^27 (H100, 2026-11-27; benchmarks/logs/2026-11-27-s42/exp1/).
    static constexpr bool RUN_BITS = !MARKED;
    template <typename S> static __device__ __forceinline__ S apply_bits(S a, const S &b, unsigned starts, int i) {
        const bool cut = (starts & (1u << (i - 1))) != 0u;
        a.value = cut ? b.value : Base::template apply<typename S::Value>(a.value, b.value);
        a.end = (starts & (1u << i)) != 0u;
        return a;
    }
    template <typename S> static __device__ __forceinline__ void close_run(S &run, unsigned starts, int last) {
        run.inner = run.inner | ((starts & ((1u << last) - 1u)) != 0u);  // a cut after any item but the last
        run.end = (starts & (1u << last)) != 0u;
    }
    template <typename S, typename TIn, typename TC>
    static __device__ __forceinline__ S lift(TIn x, bool flag, TC) {
        S s;
        s.value = Base::template lift<typename S::Value, TIn>(x);
        s.inner = false;
        s.end = flag;
        return s;
    }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut project(const S &s, const S &p, bool has) {
        typedef typename S::Value V;
        if constexpr (MARKED) {  // as Segmented::project
            return Convert<TOut, V>::apply(has ? apply_marked<Base>(p.value, s.value, false, s.end == EMPTY) : s.value);
        } else {
            return Convert<TOut, V>::apply(has ? Base::template apply<V>(p.value, s.value) : s.value);
        }
    }
    template <typename S> static __device__ __forceinline__ bool fresh(const S &prev, bool) { return prev.end == 1; }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut first(const S &p, bool has) {
        typedef typename S::Value V;
        return Convert<TOut, V>::apply(has ? p.value : Presented<Base, V>::get());
    }

  private:
    // b after a: `cut` where a segment ends in a and b holds items (b's value alone then), `end`
    // the result's end marker
    template <typename S> static __device__ __forceinline__ S join(const S &a, const S &b, bool cut, unsigned char end) {
        S r;
        if constexpr (MARKED) {
            r.value = (b.inner | cut) ? b.value : apply_marked<Base>(a.value, b.value, a.end == EMPTY, b.end == EMPTY);
        } else {
            r.value = (b.inner | cut) ? b.value : Base::template apply<typename S::Value>(a.value, b.value);
        }
        r.inner = a.inner | cut | b.inner;
        r.end = end;
        return r;
    }
};

// ---- linear recurrences: affine maps y -> a*y + b ---------------------------------------
// t o s, s earlier: (t.a * s.a, t.a * s.b + t.b), in the value type's own arithmetic (integers
// wrap; complex products round each part as NumPy does).
//
// A zero contributes nothing, whatever multiplies it: a later coefficient that is infinite or
// NaN times an earlier zero (y = 0, or a product of coefficients that a zero coefficient ended)
// is 0, not IEEE's NaN (the rule of distscan/ops/state.py's affine_coef, of the CPU loops and of
// linear_recurrence's docs).  It makes the identity (1, -0.0) exact on the left of every map, as
// the kernels pad with it (lane 0, a thread's first item, tile 0 without a seed), and keeps a
// result from depending on where it is split.  For a finite coefficient the product is IEEE's,
// signed zeros included; integers have no infinities.
//
// a*y and a*y + b by the rule.  The rule's test sits beside the product, not before it: the
// product starts as soon as y is known, the test (y == 0 and a not finite; a is known early)
// alongside, and a select picks the rule's value after.  Choosing the coefficient first put the
// test, and a branch (C++'s && short-circuits), before every multiply of a run's dependent chain
// (the PTX shows it; ncu puts the recurrences' stalls on the block barrier and the tile's loads
// first and on such fixed-latency waits third: RESULTS.md).  The bits are the coefficient-first form's:
// for y = +-0, 0*y is y itself and 0*y + b is y + b, and the FMA is the contraction nvcc made of it.
//
// Tame maps (operators.cuh, tames): the rule changes a product only where the coefficient is not
// finite, so a run whose later maps all have finite a's (`finite`, one test an item, made before
// the run's chain) composes by IEEE's products alone (`ieee_mul`, `ieee_mul_add`: the rule's `p`,
// the same bits), with no test on the chain.  TAMES: the value types whose runs may do so (float32,
// AffineBase::tames; not the reversed segmented maps, AffineEnds).  H200, 2^27, GPU time
// (benchmarks/RESULTS.md, "Tame runs"), tame runs alone: the segmented float32 recurrence 2075 ->
// 2347 GB/s ("auto", the look-back); the plain float32 one gained nothing forwards (2952 -> 2956)
// and lost 3.5 % reversed (2906 -> 2806); float64 lost 4 % (2893 -> 2778, the look-ahead) and
// complex64 30 % (2569 -> 1802, the look-back's registers 127 -> 181): their runs keep the rule.  The rule left out altogether (a timing
// variant, wrong for non-finite coefficients) took the float32 recurrence to 0.81 of copy on the
// look-back and 0.87 on the look-ahead, float64 to 0.86: the rest of its cost lies outside the
// runs: in the look-back with the warp scans and the block's fold (RESULTS.md, "Where the rest of
// the rule's cost lies"), which fold bounded states without it (BOUNDS, operators.cuh's bounds).
template <typename V> struct AffineMul {  // integers: no infinities, no rule
    static constexpr bool TAMES = false, BOUNDS = false, WARPS_BOUND = false;
    static __device__ __forceinline__ V mul(V a, V y) { return Wrap<V>::mul(a, y); }
    static __device__ __forceinline__ V mul_add(V a, V y, V b) { return Wrap<V>::add(Wrap<V>::mul(a, y), b); }
};
template <typename R> struct AffineMulReal {
    // WARPS_BOUND false: float64's look-ahead lost 4 % by the data warps' votes (H200, 2^27: 3035
    // -> 2911 GB/s, benchmarks/RESULTS.md, "A tame look-back")
    static constexpr bool TAMES = false, BOUNDS = true, WARPS_BOUND = false;
    static __device__ __forceinline__ bool bounded(R a) { return fabs(a) <= R(1); }
    static __device__ __forceinline__ bool zero_rule(R a, R y) { return (y == R(0)) & !isfinite(a); }
    static __device__ __forceinline__ R ieee_mul(R a, R y) { return Rounded<R>::mul(a, y); }
    static __device__ __forceinline__ R ieee_mul_add(R a, R y, R b) { return Rounded<R>::fma(a, y, b); }
    static __device__ __forceinline__ R mul(R a, R y) {
        const R p = ieee_mul(a, y);
        return zero_rule(a, y) ? y : p;
    }
    static __device__ __forceinline__ R mul_add(R a, R y, R b) {
        const R p = ieee_mul_add(a, y, b);
        const R z = Rounded<R>::add(y, b);
        return zero_rule(a, y) ? z : p;
    }
};
// float32 keeps the coefficient chosen first: the H100 ran its recurrence 4 % slower with the test
// beside the product (2372 against 2475 GB/s at 2^27; the H200 1 % faster: 2750 against 2715),
// where double and complex gained on both (f64 +6 % and +8 %, c64 +9 % and +11 %: RESULTS.md).
template <typename R> struct AffineMulCoefFirst {
    static constexpr bool TAMES = true, BOUNDS = true, WARPS_BOUND = true;
    static __device__ __forceinline__ bool bounded(R a) { return fabs(a) <= R(1); }
    static __device__ __forceinline__ bool finite(R a) { return isfinite(a); }
    static __device__ __forceinline__ R coef(R a, R y) { return (y == R(0) && !isfinite(a)) ? R(0) : a; }
    // mul and mul_add with coef(a, y) == a (a finite).  a*y + b is one explicit FMA: left to nvcc,
    // the contraction differed between the rule's kernels and the tame ones (DISTSCAN_COEF_TAME),
    // whose results then differed by an ulp at some 10 % of items (a scalar a against the same
    // values as an array, 2026-11-29); an FMA in every path gives every path the same bits.
    static __device__ __forceinline__ R ieee_mul(R a, R y) { return Wrap<R>::mul(a, y); }
    static __device__ __forceinline__ R ieee_mul_add(R a, R y, R b) { return Rounded<R>::fma(a, y, b); }
    static __device__ __forceinline__ R mul(R a, R y) { return ieee_mul(coef(a, y), y); }
    static __device__ __forceinline__ R mul_add(R a, R y, R b) { return ieee_mul_add(coef(a, y), y, b); }
};
template <> struct AffineMul<float> : AffineMulCoefFirst<float> {};
template <> struct AffineMul<double> : AffineMulReal<double> {};
template <typename R> struct AffineMul<Complex<R> > {
    typedef Complex<R> C;
    // BOUNDS: |a|^2 <= 1 (rounded: a product of such maps may grow by a few ulps, never to infinity)
    static constexpr bool TAMES = false, BOUNDS = true, WARPS_BOUND = true;
    static __device__ __forceinline__ bool bounded(C a) { return a.re * a.re + a.im * a.im <= R(1); }
    static __device__ __forceinline__ C ieee_mul(C a, C y) { return Wrap<C>::mul(a, y); }
    static __device__ __forceinline__ C ieee_mul_add(C a, C y, C b) { return Wrap<C>::add(Wrap<C>::mul(a, y), b); }
    static __device__ __forceinline__ bool zero_rule(C a, C y) {
        return (y.re == R(0)) & (y.im == R(0)) & !(isfinite(a.re) & isfinite(a.im));
    }
    // 0*y of Wrap's complex product, for y = (+-0, +-0): (y.re - y.im, y.im + y.re)
    static __device__ __forceinline__ C zero_times(C y) {
        C z;
        z.re = Rounded<R>::sub(y.re, y.im);
        z.im = Rounded<R>::add(y.im, y.re);
        return z;
    }
    static __device__ __forceinline__ C mul(C a, C y) {
        const C p = ieee_mul(a, y);
        return zero_rule(a, y) ? zero_times(y) : p;
    }
    static __device__ __forceinline__ C mul_add(C a, C y, C b) {
        const C p = ieee_mul_add(a, y, b);
        const C z = Wrap<C>::add(zero_times(y), b);
        return zero_rule(a, y) ? z : p;
    }
};
// DISTSCAN_COEF_TAME (the host's ModuleKey.coef_one == 2, with DISTSCAN_COEF_ONE): the one
// coefficient of every item is finite with |a| <= 1 (|a|^2 <= 1 for complex), which the host read:
// every composed coefficient is a product of such, finite, so the rule never applies, and the
// float and complex maps compose by IEEE's products alone, with no test and no vote (tames() and
// bounds() false: one path).  Integers have no rule.
#ifndef DISTSCAN_COEF_TAME
#define DISTSCAN_COEF_TAME 0
#endif
constexpr bool COEF_TAME = DISTSCAN_COEF_TAME != 0;

template <typename V> __device__ __forceinline__ V compose_a(V sa, V ta) {
    if constexpr (COEF_TAME && AffineMul<V>::BOUNDS) return AffineMul<V>::ieee_mul(ta, sa);
    else return AffineMul<V>::mul(ta, sa);
}
template <typename V> __device__ __forceinline__ V compose_b(V sb, V ta, V tb) {
    if constexpr (COEF_TAME && AffineMul<V>::BOUNDS) return AffineMul<V>::ieee_mul_add(ta, sb, tb);
    else return AffineMul<V>::mul_add(ta, sb, tb);
}
// the same for ta finite (tame), where the rule never applies
template <typename V> __device__ __forceinline__ V compose_a_tame(V sa, V ta) { return AffineMul<V>::ieee_mul(ta, sa); }
template <typename V> __device__ __forceinline__ V compose_b_tame(V sb, V ta, V tb) {
    return AffineMul<V>::ieee_mul_add(ta, sb, tb);
}

struct AffineBase : StateOpBase {
    static constexpr int AUX = 2;  // the coefficients (and the flags, with segments)
    // Without an initial an output is b alone: the products of the a's that a store's compositions
    // make (prefix.a times the run's, each item's) feed nothing, and the store's copy for
    // has_param false computes none.  H100, 2^27, GPU time (benchmarks/RESULTS.md, "The affine
    // store without the a's"): complex64 1.487-1.492 -> 1.457-1.458 ms (look-back, "auto"), 3.21-3.29
    // -> 1.99-2.00 (look-ahead); the float32 and float64 ones within 1 %.
    static constexpr bool PARAM_READS_MORE = true;
    // Not for the 8-byte maps (float32 a, b): their rescan is one chain of compositions after the
    // barrier, where the path without it overlaps two tiles' chains (INTERLEAVE): 0.51 against
    // 0.81 of copy on the H100 at 2^27 (benchmarks/RESULTS.md, "Each thread's run scanned again
    // from the stage").  The 16-byte maps gained by it (float64 0.61 -> 0.74, complex64 0.30 -> 0.34).
    template <typename S> __host__ __device__ static constexpr bool rescans() { return sizeof(S) > 8; }
    // operators.cuh, tames: the float32 maps (AffineMul::TAMES)
    template <typename S> __host__ __device__ static constexpr bool tames() {
        return !COEF_TAME && AffineMul<typename S::Value>::TAMES;
    }
    template <typename S> static __device__ __forceinline__ bool tame(const S &t) {
        if constexpr (AffineMul<typename S::Value>::TAMES) return AffineMul<typename S::Value>::finite(t.a);
        else return false;
    }
    // operators.cuh, bounds: the real maps (AffineMul::BOUNDS); the look-back folds aggregates
    // whose |a| <= 1 without the rule (no product of them can overflow, so none is infinite)
    template <typename S> __host__ __device__ static constexpr bool bounds() {
        return !COEF_TAME && AffineMul<typename S::Value>::BOUNDS;
    }
    template <typename S> __host__ __device__ static constexpr bool warps_bound() { return AffineMul<typename S::Value>::WARPS_BOUND; }
    template <typename S> static __device__ __forceinline__ bool bounded(const S &t) {
        if constexpr (AffineMul<typename S::Value>::BOUNDS) return AffineMul<typename S::Value>::bounded(t.a);
        else return false;
    }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut project(const S &s, const S &p, bool has) {
        typedef typename S::Value V;
        return Convert<TOut, V>::apply(has ? compose_b(p.b, s.a, s.b) : s.b);
    }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut first(const S &p, bool has) {
        typedef typename S::Value V;
        return Convert<TOut, V>::apply(has ? p.b : Zero<V>::get());
    }
    template <typename S> static __device__ __forceinline__ S neutral() {
        typedef typename S::Value V;
        S s;
        s.a = One<V>::get();
        s.b = Zero<V>::get();  // -0.0 for floats: a*y + -0.0 == a*y
        return s;
    }
};

struct Affine : AffineBase {
    template <typename S> static __device__ __forceinline__ S identity() { return neutral<S>(); }
    template <typename S> static __device__ __forceinline__ S apply(S s, S t) {
        S r;
        r.a = compose_a(s.a, t.a);
        r.b = compose_b(s.b, t.a, t.b);
        return r;
    }
    template <typename S> static __device__ __forceinline__ S apply_tame(S s, S t) {
        S r;
        r.a = compose_a_tame(s.a, t.a);
        r.b = compose_b_tame(s.b, t.a, t.b);
        return r;
    }
    template <typename S, typename TIn, typename TC>
    static __device__ __forceinline__ S lift(TIn x, bool, TC coef) {
        S s;
        s.a = coef;
        s.b = Convert<typename S::Value, TIn>::apply(x);
        return s;
    }
};

struct AffineStarts : AffineBase {
    static constexpr bool RESTARTS = true;
    template <typename S> static __device__ __forceinline__ bool restarts(const S &s) { return s.flag; }
    template <typename S> static __device__ __forceinline__ S identity() {
        S s = neutral<S>();
        s.flag = false;
        return s;
    }
    template <typename S> static __device__ __forceinline__ S apply(S s, S t) {
        if (t.flag) return t;  // a segment starts in t: the maps before it are dropped exactly
        S r;
        r.a = compose_a(s.a, t.a);
        r.b = compose_b(s.b, t.a, t.b);
        r.flag = s.flag;
        return r;
    }
    template <typename S> static __device__ __forceinline__ S apply_tame(S s, S t) {
        if (t.flag) return t;
        S r;
        r.a = compose_a_tame(s.a, t.a);
        r.b = compose_b_tame(s.b, t.a, t.b);
        r.flag = s.flag;
        return r;
    }
    // apply(s, t) by the bits, but the flag: s's (as Segmented::apply_bits); TAME: t tame
    static constexpr bool RUN_BITS = true, BITS_AT_FIRST = true;
    template <typename S, bool TAME = false>
    static __device__ __forceinline__ S apply_bits(S s, const S &t, unsigned starts, int i) {
        const bool start = (starts & (1u << i)) != 0u;
        decltype(s.a) a, b;
        if constexpr (TAME) {
            a = compose_a_tame(s.a, t.a);
            b = compose_b_tame(s.b, t.a, t.b);
        } else {
            a = compose_a(s.a, t.a);
            b = compose_b(s.b, t.a, t.b);
        }
        s.a = start ? t.a : a;
        s.b = start ? t.b : b;
        return s;
    }
    template <typename S> static __device__ __forceinline__ void close_run(S &run, unsigned starts, int) {
        run.flag = starts != 0u;
    }
    template <typename S, typename TIn, typename TC>
    static __device__ __forceinline__ S lift(TIn x, bool flag, TC coef) {
        S s;
        s.a = coef;
        s.b = Convert<typename S::Value, TIn>::apply(x);
        s.flag = flag;
        return s;
    }
};

struct AffineEnds : AffineBase {
    static constexpr bool RESTARTS = true;
    template <typename S> __host__ __device__ static constexpr bool bounds() { return false; }  // no apply_tame
    template <typename S> __host__ __device__ static constexpr bool tames() { return false; }
    template <typename S> static __device__ __forceinline__ bool restarts(const S &s) { return s.inner; }
    // end EMPTY in the identity, as SegmentedEnds' (there), so that it keeps a segment's end on
    // the right as well
    template <typename S> static __device__ __forceinline__ S identity() {
        S s = neutral<S>();
        s.inner = false;
        s.end = EMPTY;
        return s;
    }
    template <typename S> static __device__ __forceinline__ S apply(S s, S t) {
        const bool t_empty = t.end == EMPTY;
        // a segment ends in s, and items follow in t
        return join(s, t, (s.end == 1) & !t_empty, t_empty ? s.end : t.end);
    }
    // where SegmentedEnds::apply_run serves (there)
    static constexpr bool RUN_APPLY = true;
    template <typename S> static __device__ __forceinline__ S apply_run(S s, S t) {
        return join(s, t, s.end == 1, t.end);
    }
    // Not by the bits (RUN_BITS, as SegmentedEnds): built and measured, the look-ahead's reverse
    // segmented float32 recurrence went from 1.52 to 2.52 ms at 2^27 (H100, 2026-11-27; registers
    // 157/166 -> 170/174; benchmarks/logs/2026-11-27-s42/exp2/).
    template <typename S, typename TIn, typename TC>
    static __device__ __forceinline__ S lift(TIn x, bool flag, TC coef) {
        S s;
        s.a = coef;
        s.b = Convert<typename S::Value, TIn>::apply(x);
        s.inner = false;
        s.end = flag;
        return s;
    }

  private:
    // t after s, as SegmentedEnds::join
    template <typename S> static __device__ __forceinline__ S join(const S &s, const S &t, bool cut, unsigned char end) {
        S r;
        if (t.inner || cut) {
            r.a = t.a;
            r.b = t.b;
        } else {
            r.a = compose_a(s.a, t.a);
            r.b = compose_b(s.b, t.a, t.b);
        }
        r.inner = s.inner || cut || t.inner;
        r.end = end;
        return r;
    }
};

// ---- compensated sums: (sum, error) by TwoSum, renormalised ------------------------------
// No product appears, so nothing can be contracted into an FMA; the compiler keeps IEEE
// addition order (no fast-math), as the NumPy formulas do.
// Where the sum of the sums is infinite or NaN (an overflow, or an infinity or NaN among the
// parts) it is the result, with error 0: TwoSum's error of an infinite sum is NaN (inf - inf),
// which would turn the sum into NaN (as distscan.ops.state and the CPU loops do).
// The check costs time on the chain of dependent additions (H200, 2^27, GPU time against the
// plain sum, benchmarks/ab_compensated.py, 2026-11-23): float32 1.84x without it, 2.08x as a
// branch, 1.99x as selects; float64 2.09x, 2.25x, 2.30x.  So float takes the selects (bit for bit
// the same results) and the other types the branch.
template <typename R> struct FiniteBySelects {  // how two_sum_renorm tests for an infinite sum
    static constexpr bool value = false;
};
template <> struct FiniteBySelects<float> {
    static constexpr bool value = true;
};
// TwoSum's exact error of hi = s + t, negated (nlo = hi - (s + t) exactly): bit for bit the plain
// form's error, -lo, as the CPU's fold (distscan/ops/folds.py, _COMPENSATED), but the sign of a
// zero: nlo is never -0.0.
template <typename R> __device__ __forceinline__ R two_sum_nlo(R s, R t, R hi) {
    const R bb = hi - s;
    return ((hi - bb) - s) + (bb - t);
}
// The pair (hi, error -nlo) renormalised into (s, e); where hi is not finite (the caller's
// isfinite(hi)) it is the value, error 0 (by selects for float; the other types branch before,
// two_sum_renorm).  As nlo is never -0.0, where it is zero the sum is hi, sign and all (a sum of
// -0.0 items stays -0.0, as NumPy's; hi + lo gave -0.0 + +0.0 = +0.0).  two_sum_renorm and the
// warps' close_warp both end here; the PTX of two_sum_renorm's callers is as before this split.
template <typename R> __device__ __forceinline__ void renormalise_nlo(R hi, R nlo, bool finite, R &s, R &e) {
    const R total = hi - nlo;
    const R err = (hi - total) - nlo;
    if constexpr (FiniteBySelects<R>::value) {
        s = finite ? total : hi;
        e = finite ? err : R(0);
    } else {
        s = total;
        e = err;
    }
}
template <typename R> __device__ __forceinline__ void two_sum_renorm(R &s, R &e, R ts, R te) {
    const R hi = s + ts;
    const bool finite = isfinite(hi);
    if constexpr (!FiniteBySelects<R>::value) {
        if (!finite) {
            s = hi;
            e = R(0);
            return;
        }
    }
    renormalise_nlo(hi, two_sum_nlo(s, ts, hi) - (e + te), finite, s, e);
}
template <typename V> struct CompensatedMath {
    static __device__ __forceinline__ void join(V &s, V &e, V ts, V te) { two_sum_renorm(s, e, ts, te); }
};
template <typename R> struct CompensatedMath<Complex<R> > {
    static __device__ __forceinline__ void join(Complex<R> &s, Complex<R> &e, Complex<R> ts, Complex<R> te) {
        two_sum_renorm(s.re, e.re, ts.re, te.re);
        two_sum_renorm(s.im, e.im, ts.im, te.im);
    }
};

// A thread's run of a compensated sum (RUN_STATE, operators.cuh), Neumaier's way: the plain
// running sum s, and ne, the sum of TwoSum's exact errors of its additions, negated (a run's
// items are lifted inputs, whose own error is 0: not added).  Its dependent chain is one addition
// per item, where two_sum_renorm's is seven; the value renormalises (s - ne, its TwoSum error)
// once per read, and the store reads only its sum.  Where s is infinite or NaN it is the value,
// error 0, as two_sum_renorm's rule.
// The error is negated for the sign of a zero sum, as two_sum_renorm's nlo: ne starts as 0 - e
// (never -0.0), each term ((t - bb) - s) + (bb - x) is never -0.0 (round to nearest gives
// x - y = -0.0 only for x = -0.0, y = +0.0, which t = s + x rules out), so neither is their sum,
// and s - ne is s, sign and all, where ne is zero: a run of -0.0 items stays -0.0.  Nonzero
// values are bit for bit the plain form's (s + e, e + ((s - (t - bb)) + (x - bb))).
template <typename R> __device__ __forceinline__ R neumaier_negated(R e) { return R(0) - e; }
template <typename R> __device__ __forceinline__ void neumaier_add(R &s, R &ne, R x) {
    const R t = s + x;
    const R bb = t - s;
    ne = ne + (((t - bb) - s) + (bb - x));
    s = t;
}
template <typename R> __device__ __forceinline__ void neumaier_value(R s, R ne, R &vs, R &ve) {
    const R total = s - ne;
    const R bb = total - s;
    const R err = (s - (total - bb)) - (ne + bb);
    vs = isfinite(s) ? total : s;
    ve = isfinite(total) ? err : R(0);
}
template <typename V> struct NeumaierMath {
    static __device__ __forceinline__ V negated(V e) { return neumaier_negated(e); }
    static __device__ __forceinline__ void add(V &s, V &ne, V x) { neumaier_add(s, ne, x); }
    static __device__ __forceinline__ void value(V s, V ne, V &vs, V &ve) { neumaier_value(s, ne, vs, ve); }
};
template <typename R> struct NeumaierMath<Complex<R> > {
    static __device__ __forceinline__ Complex<R> negated(Complex<R> e) {
        Complex<R> ne = e;
        ne.re = neumaier_negated(e.re);
        ne.im = neumaier_negated(e.im);
        return ne;
    }
    static __device__ __forceinline__ void add(Complex<R> &s, Complex<R> &ne, Complex<R> x) {
        neumaier_add(s.re, ne.re, x.re);
        neumaier_add(s.im, ne.im, x.im);
    }
    static __device__ __forceinline__ void value(Complex<R> s, Complex<R> ne, Complex<R> &vs, Complex<R> &ve) {
        neumaier_value(s.re, ne.re, vs.re, ve.re);
        neumaier_value(s.im, ne.im, vs.im, ve.im);
    }
};

template <typename Base>
struct Compensated : StateOpBase {
    static constexpr int AUX = 0;
    static constexpr bool RUN_STATE = true;
    template <typename S> struct Run {
        typename S::Value s;
        typename S::Value ne;  // the error, negated (neumaier_add)
    };
    template <typename S> static __device__ __forceinline__ Run<S> run_begin(S p) {
        Run<S> r;
        r.s = p.s;
        r.ne = NeumaierMath<typename S::Value>::negated(p.e);
        return r;
    }
    template <typename S> static __device__ __forceinline__ void run_add(Run<S> &r, S x) {
        NeumaierMath<typename S::Value>::add(r.s, r.ne, x.s);  // x lifted: x.e == 0
    }
    template <typename S> static __device__ __forceinline__ S run_value(const Run<S> &r) {
        S v;
        NeumaierMath<typename S::Value>::value(r.s, r.ne, v.s, v.e);
        return v;
    }
    template <typename S> static __device__ __forceinline__ S identity() {
        typedef typename S::Value V;
        S s;
        s.s = Zero<V>::get();  // -0.0
        s.e = Convert<V, int>::apply(0);
        return s;
    }
    template <typename S> static __device__ __forceinline__ S apply(S a, S b) {
        CompensatedMath<typename S::Value>::join(a.s, a.e, b.s, b.e);
        return a;
    }
    // The warps' chains of joins (operators.cuh, warp_joins), for float sums: TwoSum of the sums and
    // the errors added, without renormalising or the infinity select on the chain (5 joins a warp
    // scan, each on its lanes' critical path); close_warp renormalises once at its end.  The value
    // is apply's (renormalising is exact); where an error word grew past the sum's last bit, the
    // next join's rounding of the errors may differ from apply's: within the documented bound,
    // and exact where the words hold every partial sum (docs/operators.md).  An infinite or NaN sum
    // stays so along the chain (its error NaN), and the close gives it error 0, as two_sum_renorm.
    // H200, 2^27, every join so (timing only, logs/2026-11-29-s58/runmath2.sh): "auto" 1.158 ->
    // 1.132x the plain sum's time, the look-ahead 1.30 -> 1.15x.
    template <typename S> __host__ __device__ static constexpr bool warp_joins() {
        return FiniteBySelects<typename S::Value>::value;
    }
    template <typename S> static __device__ __forceinline__ S join_warp(S a, const S &b) {
        typedef typename S::Value V;
        const V hi = a.s + b.s;
        a.e = (a.e + b.e) - two_sum_nlo(a.s, b.s, hi);  // the error itself, not negated, on the chain
        a.s = hi;
        return a;
    }
    template <typename S> static __device__ __forceinline__ S close_warp(S x) {
        typedef typename S::Value V;
        // 0 - e is never -0.0 (as two_sum_nlo): a zero error, of either sign, leaves the sum as it is
        renormalise_nlo(x.s, V(0) - x.e, isfinite(x.s), x.s, x.e);
        return x;
    }
    template <typename S, typename TIn> static __device__ __forceinline__ S lift(TIn x) {
        typedef typename S::Value V;
        S s;
        s.s = Base::template lift<V, TIn>(x);
        s.e = Convert<V, int>::apply(0);
        return s;
    }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut project(const S &s, const S &, bool) {
        return Convert<TOut, typename S::Value>::apply(s.s);
    }
    template <typename TOut, typename S> static __device__ __forceinline__ TOut first(const S &p, bool has) {
        typedef typename S::Value V;
        return Convert<TOut, V>::apply(has ? p.s : Presented<Base, V>::get());
    }
};

}  // namespace distscan

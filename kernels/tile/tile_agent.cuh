// distscan/kernels/tile/tile_agent.cuh -- what the two tile-consuming agents (agent_scan.cuh,
// agent_lookahead.cuh) share: the types of a tile of the policy's shape (its I/O, its block
// scan), where a warp's segment of a tile lies, reading a staged segment into the accumulator
// type, and folding a tile's prefix into its scanned items on the way out.
//
// REVERSE (suffix scans): the tiles, the warps' segments in a tile, the lanes' runs in a segment
// and the items of a run are all taken in mirrored order, so that logical item i is physical
// item n-1-i.  Physical tiles stay where they are (aligned: the same 16-byte vector loads and
// stores); the partial tile, physically the last, is logically the first, and its missing
// items are the identity at its front.  A warp still moves only its own shared-memory slice
// (it loads the physical segment it owns in mirrored order; each lane reads another lane's run
// of that slice), so the warp synchronises with __syncwarp only, as forwards.
//
// Operators with auxiliary inputs (segment flags, coefficients: util/states.cuh) read them
// with their items (Extra): each lane loads its own run of flags and coefficients from global
// memory straight into registers, 16-byte vectors where the run is whole and aligned, issued
// BEFORE the segment's items are loaded so that all three are in flight together (load_aux).
// Staged after the items, the flags and the coefficients had cost two more DRAM round trips per
// tile, one after the other, in a kernel whose blocks have no other loads in flight then.
#pragma once
#include "../block/block_scan.cuh"
#include "../util/states.cuh"
#include "tile_io.cuh"

namespace distscan {

// DISTSCAN_COEF_ONE (the host's ModuleKey.coef_one; -D in its compile options): a linear
// recurrence's coefficients are the same along the scanned axis (a scalar a, an exponential
// moving average, a per-channel decay), so d_coef holds one coefficient (the 1-D kernels) or one a
// column (the column-tile kernels, agent_columns.cuh), read for every item: no array of n
// coefficients written by the host and read again (8 bytes an item of float32, not 12 + 4).
#ifndef DISTSCAN_COEF_ONE
#define DISTSCAN_COEF_ONE 0
#endif
constexpr bool COEF_ONE = DISTSCAN_COEF_ONE != 0;

// What a state operator's tile reads and writes besides its items (unused by plain operators).
template <typename TAcc>
struct Extra {
    const unsigned char *flags;  // segment flags, one byte per item (or null)
    const void *coef;            // coefficients, TAcc::Value per item (COEF_ONE: one for all; or null)
    bool coef_vector_ok;         // coef is 16-byte aligned
    bool has_param;              // the call's parameter (its initial) is projected
    TAcc param;
};

template <typename TAcc>
__device__ __forceinline__ Extra<TAcc> no_extra() {
    Extra<TAcc> ex;
    ex.flags = 0;
    ex.coef = 0;
    ex.coef_vector_ok = false;
    ex.has_param = false;
    return ex;
}

// A state operator's PARAM_READS_MORE (kernels/util/states.cuh); false for the value operators,
// which have none.
template <typename Op, bool STATE = Op::STATE> struct ParamReadsMore {
    static constexpr bool value = false;
};
template <typename Op> struct ParamReadsMore<Op, true> {
    static constexpr bool value = Op::PARAM_READS_MORE;
};

// The coefficient type of a state operator's items (a placeholder for the others).
template <typename TAcc, bool STATE> struct CoefOf {
    typedef TAcc type;
};
template <typename TAcc> struct CoefOf<TAcc, true> {
    typedef typename TAcc::Value type;
};

// Policy: the tile shape, a TilePolicy or a LookaheadPolicy (agent_policy.cuh).  The agents
// derive from TileAgent as `Tile` and name its types (Tile::InIO, Tile::BScan, ...) and the
// shape (Policy::WARPS, Policy::TILE_ITEMS, ...) there: one definition of each for both.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, typename Policy,
          bool SWIZZLE = false, bool REVERSE = false>
struct TileAgent {
    static constexpr int ITEMS = Policy::ITEMS;
    typedef WarpTileIO<TIn, ITEMS, SWIZZLE> InIO;  // SWIZZLE: tile_io.cuh
    typedef WarpTileIO<TOut, ITEMS, SWIZZLE> OutIO;
    typedef typename BlockScanFor<Policy::BLOCK_ALGO, TAcc, Op, Policy::BLOCK_THREADS>::type BScan;
    // one warp's shared-memory slice: its segment, staged in or out
    static constexpr int IO_BYTES = InIO::WARP_BYTES > OutIO::WARP_BYTES ? InIO::WARP_BYTES : OutIO::WARP_BYTES;
    typedef typename CoefOf<TAcc, Op::STATE>::type TCoef;

    // Where the calling warp's segment of `tile` starts, and how many of its items exist (in
    // memory: REVERSE mirrors the tile and the warp).
    static __device__ __forceinline__ i64 segment(i64 n, i64 tile, int warp, int &valid) {
        if (REVERSE) {
            tile = (n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS - 1 - tile;
            warp = Policy::WARPS - 1 - warp;
        }
        const i64 seg_base = tile * (i64)Policy::TILE_ITEMS + (i64)warp * (32 * ITEMS);  // 64-bit: N > 2^31
        const i64 rem = n - seg_base;
        valid = rem <= 0 ? 0 : (rem >= 32 * ITEMS ? 32 * ITEMS : (int)rem);
        return seg_base;
    }

    // The lane whose run of the staged segment the calling lane scans, and where its item i
    // lies in that run.
    static __device__ __forceinline__ int run_lane(int lane) { return REVERSE ? 31 - lane : lane; }
    static __device__ __forceinline__ int run_item(int i) { return REVERSE ? ITEMS - 1 - i : i; }

    // The lane's ITEMS items of a staged segment, in the accumulator type (the identity past
    // the `valid` items that exist).
    static __device__ __forceinline__ void staged_items(const char *smem, int lane, int valid, TAcc (&items)[ITEMS]) {
        TIn raw[ITEMS];
        const int src = run_lane(lane);
        InIO::smem_to_regs(smem, src, raw);
        if (valid == 32 * ITEMS) {  // a whole segment (every one but the last): no item to test
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) items[i] = Op::template lift<TAcc, TIn>(raw[run_item(i)]);
            return;
        }
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int k = run_item(i);
            items[i] = (src * ITEMS + k < valid) ? Op::template lift<TAcc, TIn>(raw[k]) : Op::template identity<TAcc>();
        }
    }

    // Bytes per vector load of a run of `bytes` bytes: 16, 8, 4 or 1 (scalar).
    __host__ __device__ static constexpr int vector_bytes(int bytes) {
        return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : 1;
    }
    static constexpr int FLAG_VB = vector_bytes(ITEMS);                         // flags: 1 byte an item
    static constexpr int COEF_VB = vector_bytes(ITEMS * (int)sizeof(TCoef));

    // A lane's run of auxiliary inputs: the flags (0 past the end, or without flags) and the
    // coefficients (TCoef() past the end, or without coefficients) of its ITEMS items, each in
    // a union with the vectors that load it (registers, as WarpTileIO::smem_to_regs's).
    struct AuxRun {
        union {
            typename VectorOf<FLAG_VB>::type v[ITEMS / FLAG_VB];
            unsigned char flags[ITEMS];
            unsigned words[(ITEMS + 3) / 4];  // flag_bits' view: four flags a word
        } f;
        union {
            typename VectorOf<COEF_VB>::type v[ITEMS * sizeof(TCoef) / COEF_VB];
            TCoef coef[ITEMS];
        } c;
    };

    // Issue the loads of the lane's run of the segment at seg_base's flags and coefficients (the
    // run that staged_items' lane reads: run_lane).  Nothing waits for them here: lift_aux reads
    // the registers once the items are staged.
    static __device__ __forceinline__ void load_aux(int lane, int valid, i64 seg_base, const Extra<TAcc> &ex,
                                                    AuxRun &aux) {
        const int first = run_lane(lane) * ITEMS;  // the run's first item in the segment
        const bool whole = valid == 32 * ITEMS;
        if (ex.flags != 0) {
            const unsigned char *d_flags = ex.flags + seg_base + first;
            typedef typename VectorOf<FLAG_VB>::type FV;
            if (FLAG_VB > 1 && whole && (reinterpret_cast<unsigned long long>(d_flags) & (FLAG_VB - 1)) == 0) {
#pragma unroll
                for (int v = 0; v < ITEMS / FLAG_VB; ++v) aux.f.v[v] = reinterpret_cast<const FV *>(d_flags)[v];
            } else {
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) aux.f.flags[k] = (first + k < valid) ? d_flags[k] : 0;
            }
        } else {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) aux.f.flags[k] = 0;
        }
        if (COEF_ONE && ex.coef != 0) {
            fill_coef(ex, aux);
        } else if (ex.coef != 0) {
            const TCoef *d_coef = reinterpret_cast<const TCoef *>(ex.coef) + seg_base + first;
            typedef typename VectorOf<COEF_VB>::type CV;
            // coef_vector_ok: the array is 16-byte aligned, and so is every whole run when runs
            // are whole 16-byte vectors (their offsets are multiples of the run's bytes)
            if (COEF_VB == 16 && whole && ex.coef_vector_ok) {
#pragma unroll
                for (int v = 0; v < (int)(ITEMS * sizeof(TCoef) / 16); ++v)
                    aux.c.v[v] = reinterpret_cast<const CV *>(d_coef)[v];
            } else {
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) aux.c.coef[k] = (first + k < valid) ? d_coef[k] : TCoef();
            }
        }
    }

    // COEF_ONE: every item's coefficient is the one at ex.coef (the same word for every lane: one
    // load a warp, from L1 after the first)
    static __device__ __forceinline__ void fill_coef(const Extra<TAcc> &ex, AuxRun &aux) {
        const TCoef c = *reinterpret_cast<const TCoef *>(ex.coef);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) aux.c.coef[k] = c;
    }

    // staged_items for operators with auxiliary inputs, from the run load_aux loaded.  `starts`
    // gets bit i set where item i's flag is.
    // BITS (the look-ahead, for RUN_BITS operators, whose runs fold by `starts` alone): the flags
    // as bits first (flag_bits), each item's flag then one bit of them.  A byte's extraction, test
    // and shift an item (SASS: PRMT, LOP3, ISETP) were a third of the segmented look-ahead's
    // instructions.  Not on the look-back, whose generic runs read each item's flag byte: there
    // it took the segmented float32 kernel from 88 to 127 registers and 5 % of its speed (H100).
    template <bool BITS = false>
    static __device__ __forceinline__ void lift_aux(const char *smem, int lane, int valid, const Extra<TAcc> &ex,
                                                    const AuxRun &aux, TAcc (&items)[ITEMS], unsigned &starts) {
        TIn raw[ITEMS];
        const int src = run_lane(lane);
        InIO::smem_to_regs(smem, src, raw);
        const bool whole = valid == 32 * ITEMS;  // every segment but the last: no item to test
        if constexpr (BITS) {
            static_assert(ITEMS % 4 == 0 && ITEMS <= 32, "flag_bits: four flags a word, 32 at most");
            unsigned bits = flag_bits(aux);  // bit k: the run's flag k, in memory order
            const int present = valid - src * ITEMS;  // the run's items that exist, from its first in memory
            if (!whole) bits &= present >= ITEMS ? ~0u : (present <= 0 ? 0u : (1u << present) - 1u);
            if (REVERSE) bits = __brev(bits) >> (32 - ITEMS);  // bit i: item i's (run_item)
            starts = bits;
            if (whole) {  // apart, so that the whole run's lifts carry no test of `valid`
#pragma unroll
                for (int i = 0; i < ITEMS; ++i) {
                    const int k = run_item(i);
                    items[i] = Op::template lift<TAcc, TIn>(raw[k], (bits & (1u << i)) != 0u,
                                                           ex.coef != 0 ? aux.c.coef[k] : TCoef());
                }
                return;
            }
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                const int k = run_item(i);
                if (src * ITEMS + k < valid) {
                    items[i] = Op::template lift<TAcc, TIn>(raw[k], (bits & (1u << i)) != 0u,
                                                           ex.coef != 0 ? aux.c.coef[k] : TCoef());
                } else {
                    items[i] = Op::template identity<TAcc>();
                }
            }
        } else {
            starts = 0u;
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                const int k = run_item(i);
                if (whole || src * ITEMS + k < valid) {
                    const bool flag = aux.f.flags[k] != 0;
                    starts |= (flag ? 1u : 0u) << i;
                    items[i] = Op::template lift<TAcc, TIn>(raw[k], flag, ex.coef != 0 ? aux.c.coef[k] : TCoef());
                } else {
                    items[i] = Op::template identity<TAcc>();
                }
            }
        }
    }

    // Bit k set where the run's flag byte k is nonzero (ITEMS a multiple of 4, at most 32): per
    // word, bit 7 of each byte says whether the byte is nonzero ((low seven bits + 0x7F) | the
    // byte), and one multiply gathers bits 7, 15, 23, 31 into 28-31 (no partial product reaches
    // them but those four: the others land on bits 7, 14, 15, 21, 22, 23).
    static __device__ __forceinline__ unsigned flag_bits(const AuxRun &aux) {
        unsigned bits = 0u;
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            const unsigned w = aux.f.words[j];
            const unsigned high = (((w & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | w) & 0x80808080u;
            bits |= ((high * 0x00204081u) >> 28) << (4 * j);
        }
        return bits;
    }

    struct Nothing {
        __device__ __forceinline__ void operator()() const {}
    };

    // The warp's segment of `tile` into its slice (KEEP: tile_io.cuh) and the lane's items out of
    // it, in the accumulator type, with their auxiliary inputs for the operators that have them
    // (their loads issued first, so that they overlap the items').  `starts`: lift_aux's.
    // `staged()` runs once the segment is in the slice and before its items are lifted: work
    // whose loads were issued before this call finishes there, under the segment's round trip,
    // while the lifted items do not yet hold registers (agent_scan.cuh's prefix poll).
    template <bool KEEP, typename Staged = Nothing>
    static __device__ __forceinline__ void load_items(const TIn *d_in, i64 n, i64 tile, bool vector_ok, char *smem,
                                                      int warp, int lane, const Extra<TAcc> &ex,
                                                      TAcc (&items)[ITEMS], unsigned &starts,
                                                      const Staged &staged = Staged()) {
        int valid;
        const i64 seg_base = segment(n, tile, warp, valid);
        if constexpr (Op::AUX > 0) {
            AuxRun aux;
            load_aux(lane, valid, seg_base, ex, aux);
            InIO::template load_to_smem<KEEP>(d_in + seg_base, valid, vector_ok, smem, lane);
            __syncwarp();
            staged();
            lift_aux(smem, lane, valid, ex, aux, items, starts);
        } else {
            InIO::template load_to_smem<KEEP>(d_in + seg_base, valid, vector_ok, smem, lane);
            __syncwarp();
            staged();
            staged_items(smem, lane, valid, items);
        }
    }

    // An item's output from the state before it (exclusive) or its own prefix (inclusive).
    // HAS: whether the call's parameter is projected, known at compile time (0 or 1: the store's
    // copy for that value, Op::PARAM_READS_MORE), else -1: Extra::has_param.
    template <int HAS = -1>
    static __device__ __forceinline__ TOut output(const TAcc &v, const Extra<TAcc> &ex, bool start) {
        if constexpr (Op::STATE) {
            const bool has = HAS < 0 ? ex.has_param : HAS == 1;
            if (EXCLUSIVE && Op::fresh(v, start)) return Op::template first<TOut>(ex.param, has);
            return Op::template project<TOut>(v, ex.param, has);
        } else {
            return Convert<TOut, TAcc>::apply(v);
        }
    }

    // out[i]: item i's output from `prefix` op the thread's scanned items (the state before
    // item i, or its own); RUN: by apply_run, where no item is the identity.
    // The scanned items are the later operands: where all are tame, apply_tame serves (operators.cuh).
    template <bool RUN, int HAS>
    static __device__ __forceinline__ void fold_prefix(const TAcc &prefix, const TAcc (&items)[ITEMS],
                                                       const Extra<TAcc> &ex, unsigned starts, TOut (&out)[ITEMS]) {
        by_tameness<Op, TAcc>(all_tame<Op>(items), [&](auto tame) {
            constexpr bool TAME = decltype(tame)::value;
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                TAcc v;
                if (EXCLUSIVE && i == 0) {
                    v = prefix;
                } else {
                    const TAcc &run = items[EXCLUSIVE ? i - 1 : i];
                    v = RUN ? apply_run<Op, TAcc, TAME>(prefix, run) : apply_maybe_tame<Op, TAcc, TAME>(prefix, run);
                }
                out[run_item(i)] = output<HAS>(v, ex, (starts >> i) & 1u);
            }
        });
    }

    // Fold `prefix` (the tile's and the thread's) into the scanned items and store them
    // through the warp's slice, which must be free (every lane past reading its input).
    static __device__ __forceinline__ void store(TOut *d_out, i64 n, i64 tile, bool vector_ok, char *smem, int warp,
                                                 int lane, TAcc prefix, const TAcc (&items)[ITEMS]) {
        store(d_out, n, tile, vector_ok, smem, warp, lane, prefix, items, no_extra<TAcc>(), 0u);
    }

    static __device__ __forceinline__ void store(TOut *d_out, i64 n, i64 tile, bool vector_ok, char *smem, int warp,
                                                 int lane, TAcc prefix, const TAcc (&items)[ITEMS],
                                                 const Extra<TAcc> &ex, unsigned starts) {
        int valid;
        const i64 seg_base = segment(n, tile, warp, valid);
        TOut out[ITEMS];
        if constexpr (Op::RUN_STATE) {  // items as lifted (block_scan_runs.cuh): scanned here from the prefix
            typename Op::template Run<TAcc> r = Op::template run_begin<TAcc>(prefix);
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                if (!EXCLUSIVE) Op::template run_add<TAcc>(r, items[i]);
                const TAcc v = (EXCLUSIVE && i == 0) ? prefix : Op::template run_value<TAcc>(r);
                out[run_item(i)] = output(v, ex, (starts >> i) & 1u);
                if (EXCLUSIVE) Op::template run_add<TAcc>(r, items[i]);
            }
        } else if constexpr (ParamReadsMore<Op>::value) {  // a copy for each value of has_param
            if (ex.has_param) fold_prefix_of<1>(prefix, items, ex, starts, valid, out);
            else fold_prefix_of<0>(prefix, items, ex, starts, valid, out);
        } else {
            fold_prefix_of<-1>(prefix, items, ex, starts, valid, out);
        }
        store_out(d_out, seg_base, valid, vector_ok, smem, lane, out);
    }

    // fold_prefix of a segment of `valid` items: where it is whole, every item lifted and none the
    // identity, the run's cheaper combine serves (operators.cuh, apply_run; the same values).
    template <int HAS>
    static __device__ __forceinline__ void fold_prefix_of(const TAcc &prefix, const TAcc (&items)[ITEMS],
                                                          const Extra<TAcc> &ex, unsigned starts, int valid,
                                                          TOut (&out)[ITEMS]) {
        if (Op::RUN_APPLY && valid == 32 * ITEMS) fold_prefix<true, HAS>(prefix, items, ex, starts, out);
        else fold_prefix<false, HAS>(prefix, items, ex, starts, out);
    }

    // store() for items as lifted (not scanned): each thread's run scanned again, in order, from
    // `prefix` (the tile's and the thread's), one application an item where store()'s prefix op
    // the scanned run costs the run's scan and then one more (the look-ahead's RESCAN,
    // agent_lookahead.cuh).  Integers and max/min give store()'s bits; float sums and products
    // round in another order (each output is still prefix, then the run's items one by one).
    static __device__ __forceinline__ void store_rescanned(TOut *d_out, i64 n, i64 tile, bool vector_ok, char *smem,
                                                           int warp, int lane, TAcc prefix, const TAcc (&items)[ITEMS],
                                                           const Extra<TAcc> &ex, unsigned starts) {
        int valid;
        const i64 seg_base = segment(n, tile, warp, valid);
        TOut out[ITEMS];
        if constexpr (ParamReadsMore<Op>::value) {  // a copy for each value of has_param
            if (ex.has_param) rescan_run<1>(prefix, items, ex, starts, valid, out);
            else rescan_run<0>(prefix, items, ex, starts, valid, out);
        } else {
            rescan_run<-1>(prefix, items, ex, starts, valid, out);
        }
        store_out(d_out, seg_base, valid, vector_ok, smem, lane, out);
    }

    // store_rescanned's outputs of a thread's run; HAS as output()'s.
    template <int HAS>
    static __device__ __forceinline__ void rescan_run(const TAcc &prefix, const TAcc (&items)[ITEMS],
                                                      const Extra<TAcc> &ex, unsigned starts, int valid,
                                                      TOut (&out)[ITEMS]) {
        const bool whole = Op::RUN_APPLY && valid == 32 * ITEMS;  // no item the identity: apply_run serves
        TAcc running = prefix;
        by_tameness<Op, TAcc>(all_tame<Op>(items), [&](auto tame) {  // operators.cuh, tames
            constexpr bool TAME = decltype(tame)::value;
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                const bool start = (starts & (1u << i)) != 0u;
                if (EXCLUSIVE) out[run_item(i)] = output<HAS>(running, ex, start);
                // by the bits where run_total_bits takes them, from item 0 where that item's left may
                // be the prefix (BITS_AT_FIRST); the outputs read no flag apply_bits leaves out
                if (Op::RUN_BITS && (i > 0 || Op::BITS_AT_FIRST) && (!REVERSE || valid == 32 * ITEMS)) {
                    running = bits_apply<TAME>(running, items[i], starts, i);
                } else {
                    running = whole ? apply_run<Op, TAcc, TAME>(running, items[i])
                                    : apply_maybe_tame<Op, TAcc, TAME>(running, items[i]);
                }
                if (!EXCLUSIVE) out[run_item(i)] = output<HAS>(running, ex, start);
            }
        });
    }

    // The run total of lifted items (lift_aux's, with its `starts`) for RUN_BITS operators: the
    // values folded by the bits, the flags set from them, as run_total's.  A reverse scan's partial
    // run (padded first with the identity: valid < 32 * ITEMS) by run_total's applications.
    static __device__ __forceinline__ TAcc run_total_bits(const TAcc (&items)[ITEMS], unsigned starts, int valid) {
        if (REVERSE && valid != 32 * ITEMS) return run_total<TAcc, Op, ITEMS>(items);
        TAcc run = items[0];
        by_tameness<Op, TAcc>(all_tame<Op>(items), [&](auto tame) {  // operators.cuh, tames
#pragma unroll
            for (int i = 1; i < ITEMS; ++i) run = bits_apply<decltype(tame)::value>(run, items[i], starts, i);
        });
        bits_close(run, starts);
        return run;
    }

  private:
    // Op::apply_bits and Op::close_run, for RUN_BITS operators only (the others have none)
    // TAME: b tame (operators.cuh, tames)
    template <bool TAME = false>
    static __device__ __forceinline__ TAcc bits_apply(const TAcc &a, const TAcc &b, unsigned starts, int i) {
        if constexpr (Op::RUN_BITS && TAME && Op::template tames<TAcc>()) return Op::template apply_bits<TAcc, true>(a, b, starts, i);
        else if constexpr (Op::RUN_BITS) return Op::template apply_bits<TAcc>(a, b, starts, i);
        else return b;
    }
    static __device__ __forceinline__ void bits_close(TAcc &run, unsigned starts) {
        if constexpr (Op::RUN_BITS) Op::template close_run<TAcc>(run, starts, ITEMS - 1);
    }

    // The lane's outputs through the warp's slice (free: every lane past reading it) to d_out.
    static __device__ __forceinline__ void store_out(TOut *d_out, i64 seg_base, int valid, bool vector_ok, char *smem,
                                                     int lane, const TOut (&out)[ITEMS]) {
        OutIO::regs_to_smem(smem, run_lane(lane), out);
        __syncwarp();
        OutIO::store_from_smem(d_out + seg_base, valid, vector_ok, smem, lane);
    }
};

}  // namespace distscan

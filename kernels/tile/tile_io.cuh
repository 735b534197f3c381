// distscan/kernels/tile/tile_io.cuh -- moving a tile between global memory and registers.
//
// Each warp owns a contiguous segment of 32*ITEMS items of the tile; each lane owns
// ITEMS consecutive items of that segment ("blocked" arrangement, which the thread scan
// needs).  Global memory is read and written "striped": in step k lane l moves the
// (k*32+l)-th 16-byte vector of the segment, so every warp instruction touches 512
// contiguous bytes (fully coalesced), and all steps' loads are issued before the first
// is used (several 16-byte loads in flight per lane).  A per-warp shared-memory buffer
// transposes between the two arrangements.  The 8 lanes of a 16-byte shared-memory phase
// must hit 8 different bank groups (16-byte columns of a 128-byte row) in both.  By default
// each lane's bytes are padded by 16 when LANE_BYTES/16 is even.  SWIZZLE (the look-ahead
// kernel's ring, where the padding would cost a stage) instead XORs each 128-byte row's
// columns with a key (the owning lane for rows of one lane, else the row): no padding, a few
// more address instructions; it needs a power-of-two number of 16-byte vectors per lane.
//
// Partial tiles and buffers not aligned to 16 bytes take a scalar path (still coalesced:
// step k, lane l moves item k*32+l of the segment).
#pragma once
#include "../util/types.cuh"

namespace distscan {

// cp.async groups (sm_80+; no-ops before, where load_to_smem_async is synchronous).
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Wait until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
#endif
}

template <typename T, int ITEMS, bool SWIZZLE_IF_POW2 = false>
struct WarpTileIO {
    static const int LANE_BYTES = ITEMS * (int)sizeof(T);
    static_assert(LANE_BYTES % 16 == 0, "ITEMS * sizeof(T) must be a multiple of 16 bytes");
    static const int VECS = LANE_BYTES / 16;  // 16-byte vectors per lane
    static const bool SWIZZLE = SWIZZLE_IF_POW2 && (VECS & (VECS - 1)) == 0;
    static const int STRIDE = SWIZZLE ? LANE_BYTES : LANE_BYTES + ((VECS % 2 == 0) ? 16 : 0);  // lane stride (bytes)
    static const int WARP_BYTES = 32 * STRIDE;
    static const int KEY_VECS = VECS > 8 ? VECS : 8;  // 16-byte vectors that share one XOR key

    // shared-memory byte offset of byte b of the warp's segment
    static __device__ __forceinline__ int smem_offset(int b) {
        if (SWIZZLE) {
            const int v = b >> 4;
            return ((v ^ ((v / KEY_VECS) & 7)) << 4) | (b & 15);
        }
        return (b / LANE_BYTES) * STRIDE + (b % LANE_BYTES);
    }
    // ... of the lane's k-th 16-byte vector (blocked arrangement)
    static __device__ __forceinline__ int lane_vec_offset(int lane, int k) {
        return SWIZZLE ? smem_offset(lane * LANE_BYTES + k * 16) : lane * STRIDE + k * 16;
    }

    // Global -> shared (striped).  `valid` items of the segment exist (ITEMS*32 when full).
    // KEEP: the data will be read again soon (ordinary loads, which leave it in L2);
    // otherwise it is streamed (evict-first: read once).
    template <bool KEEP = false>
    static __device__ __forceinline__ void load_to_smem(const T *d_seg, int valid, bool vector_ok, char *smem, int lane) {
        if (vector_ok && valid == 32 * ITEMS) {
            const uint4 *src = reinterpret_cast<const uint4 *>(d_seg);
            uint4 v[VECS];
#pragma unroll
            for (int k = 0; k < VECS; ++k) v[k] = KEEP ? src[k * 32 + lane] : __ldcs(src + k * 32 + lane);
#pragma unroll
            for (int k = 0; k < VECS; ++k)
                *reinterpret_cast<uint4 *>(smem + smem_offset((k * 32 + lane) * 16)) = v[k];
        } else {
#pragma unroll 4
            for (int k = 0; k < ITEMS; ++k) {
                int e = k * 32 + lane;
                if (e < valid) *reinterpret_cast<T *>(smem + smem_offset(e * (int)sizeof(T))) = d_seg[e];
            }
        }
    }

    // Global -> shared without waiting (the look-ahead kernel's prefetch): full aligned
    // segments become 16-byte cp.async copies that land while the warp does other work;
    // the caller commits them as a group and waits for the group (cp_async_wait) before
    // reading.  Partial or unaligned segments, and GPUs before sm_80, load synchronously.
    static __device__ __forceinline__ void load_to_smem_async(const T *d_seg, int valid, bool vector_ok, char *smem,
                                                              int lane) {
#if __CUDA_ARCH__ >= 800
        if (vector_ok && valid == 32 * ITEMS) {
            const uint4 *src = reinterpret_cast<const uint4 *>(d_seg);
#pragma unroll
            for (int k = 0; k < VECS; ++k) {
                const unsigned dst = (unsigned)__cvta_generic_to_shared(smem + smem_offset((k * 32 + lane) * 16));
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src + k * 32 + lane) : "memory");
            }
            return;
        }
#endif
        load_to_smem(d_seg, valid, vector_ok, smem, lane);
    }

    // Shared -> registers (blocked): lane's ITEMS consecutive items.
    static __device__ __forceinline__ void smem_to_regs(const char *smem, int lane, T (&items)[ITEMS]) {
        union {
            uint4 v[VECS];
            T t[ITEMS];
        } u;
#pragma unroll
        for (int k = 0; k < VECS; ++k) u.v[k] = *reinterpret_cast<const uint4 *>(smem + lane_vec_offset(lane, k));
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) items[i] = u.t[i];
    }

    // Registers (blocked) -> shared.
    static __device__ __forceinline__ void regs_to_smem(char *smem, int lane, const T (&items)[ITEMS]) {
        union {
            uint4 v[VECS];
            T t[ITEMS];
        } u;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) u.t[i] = items[i];
#pragma unroll
        for (int k = 0; k < VECS; ++k) *reinterpret_cast<uint4 *>(smem + lane_vec_offset(lane, k)) = u.v[k];
    }

    // Shared -> global (striped).
    static __device__ __forceinline__ void store_from_smem(T *d_seg, int valid, bool vector_ok, const char *smem, int lane) {
        if (vector_ok && valid == 32 * ITEMS) {
            uint4 *dst = reinterpret_cast<uint4 *>(d_seg);
#pragma unroll
            for (int k = 0; k < VECS; ++k)
                __stcs(dst + k * 32 + lane, *reinterpret_cast<const uint4 *>(smem + smem_offset((k * 32 + lane) * 16)));
        } else {
#pragma unroll 4
            for (int k = 0; k < ITEMS; ++k) {
                int e = k * 32 + lane;
                if (e < valid) d_seg[e] = *reinterpret_cast<const T *>(smem + smem_offset(e * (int)sizeof(T)));
            }
        }
    }
};

}  // namespace distscan

// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// Geometry of one paged decode-attention call. Caches are contiguous [N, S, Hk, D].
struct DecodeShape {
  int64_t batch;
  int64_t q_heads;
  int64_t kv_heads;
  int64_t head_size;
  int64_t block_size;
  int64_t table_width;  // M, columns of the block table
};

// Float32 paged decode attention (one query per request), see
// deepinfer_kernels.ops.paged_attention_decode for the semantics. q and out are contiguous
// [B, Hq, D]; block_tables [B, M]; seq_lens [B]; sinks is null or [Hq]; window <= 0 means
// full attention. One task per (request, KV head) computes an exact two-pass softmax in a
// fixed order (OpenMP splits tasks, never a reduction), so a row's result does not depend on
// the batch or the thread count.
void paged_attention_decode_f32(const float* q, const float* k_cache, const float* v_cache,
                                const int32_t* block_tables, const int32_t* seq_lens,
                                const float* sinks, float* out, const DecodeShape& shape,
                                float scale, int64_t window);

// Float32 paged prefill attention in batch-invariant form, see
// deepinfer_kernels.ops.paged_attention_prefill(batch_invariant=True). q and out are
// contiguous [tokens, Hq, D]; shape.batch is the number of requests B; cu_seqlens_q [B+1];
// seq_lens [B] with seq_lens[b] >= q_len_b (checked by the caller). Query i of request b
// sits at position p = seq_lens[b] - q_len_b + i and is computed by the very routine of
// paged_attention_decode_f32 with seq_len p + 1, one task per (token, KV head): its bits are
// those of a one-token decode call, whatever the chunking or the rest of the batch.
void paged_attention_prefill_f32(const float* q, const float* k_cache, const float* v_cache,
                                 const int32_t* block_tables, const int32_t* cu_seqlens_q,
                                 const int32_t* seq_lens, const float* sinks, float* out,
                                 const DecodeShape& shape, int64_t tokens, float scale,
                                 int64_t window);

}  // namespace deepinfer::cpu

// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
#include "decode_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace deepinfer::cpu {
namespace {

// Dot product with a fixed summation order (8 interleaved partial sums, then a fixed tree):
// vectorisable without -ffast-math and identical whatever the batch.
float dot(const float* a, const float* b, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; ++j) part[j] += a[d + j] * b[d + j];
  for (; d < n; ++d) part[d % 8] += a[d] * b[d];
  return ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
}

// All query heads that share one KV head of one request: scores for every visible key
// (keys read once for the whole group), an exact two-pass softmax per head (max, then
// exp-sum, with an optional sink logit in the denominator), then the probability-weighted
// sum of values (values read once for the whole group).
void attend_group(const float* q, const float* k_cache, const float* v_cache,
                  const int32_t* block_table, int64_t seq_len, int64_t kv_head, int64_t first_head,
                  const float* sinks, float* out, const DecodeShape& shape, float scale,
                  int64_t window, std::vector<float>& probs) {
  const int64_t head_size = shape.head_size;
  const int64_t group = shape.q_heads / shape.kv_heads;
  if (seq_len <= 0) {
    std::fill(out, out + group * head_size, 0.0f);
    return;
  }
  const int64_t first = window > 0 ? std::max<int64_t>(seq_len - window, 0) : 0;
  const int64_t len = seq_len - first;
  const int64_t row_stride = shape.kv_heads * head_size;
  probs.assign(group * len, 0.0f);
  auto offset_of = [&](int64_t pos) {
    const int64_t block = block_table[pos / shape.block_size];
    return (block * shape.block_size + pos % shape.block_size) * row_stride + kv_head * head_size;
  };
  for (int64_t i = 0; i < len; ++i) {
    const float* key = k_cache + offset_of(first + i);
    for (int64_t g = 0; g < group; ++g) probs[g * len + i] = dot(q + g * head_size, key, head_size) * scale;
  }
  std::vector<float> denom(group);
  for (int64_t g = 0; g < group; ++g) {
    float* p = probs.data() + g * len;
    const float sink = sinks != nullptr ? sinks[first_head + g] : -std::numeric_limits<float>::infinity();
    float m = sink;
    for (int64_t i = 0; i < len; ++i) m = std::max(m, p[i]);
    float sum = sinks != nullptr ? std::exp(sink - m) : 0.0f;
    for (int64_t i = 0; i < len; ++i) {
      p[i] = std::exp(p[i] - m);
      sum += p[i];
    }
    denom[g] = sum;
  }
  std::fill(out, out + group * head_size, 0.0f);
  for (int64_t i = 0; i < len; ++i) {
    const float* value = v_cache + offset_of(first + i);
    for (int64_t g = 0; g < group; ++g) {
      const float w = probs[g * len + i];
      float* o = out + g * head_size;
      for (int64_t d = 0; d < head_size; ++d) o[d] += w * value[d];
    }
  }
  for (int64_t g = 0; g < group; ++g)
    for (int64_t d = 0; d < head_size; ++d) out[g * head_size + d] /= denom[g];
}

}  // namespace

void paged_attention_decode_f32(const float* q, const float* k_cache, const float* v_cache,
                                const int32_t* block_tables, const int32_t* seq_lens,
                                const float* sinks, float* out, const DecodeShape& shape,
                                float scale, int64_t window) {
  const int64_t group = shape.q_heads / shape.kv_heads;
  const int64_t tasks = shape.batch * shape.kv_heads;
  // Each (request, KV head) task is independent and computed in one fixed order, so the
  // parallel split changes nothing in the result (batch and thread-count invariant).
#pragma omp parallel
  {
    std::vector<float> probs;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t b = t / shape.kv_heads;
      const int64_t kv = t % shape.kv_heads;
      const int64_t row = (b * shape.q_heads + kv * group) * shape.head_size;
      attend_group(q + row, k_cache, v_cache, block_tables + b * shape.table_width, seq_lens[b], kv,
                   kv * group, sinks, out + row, shape, scale, window, probs);
    }
  }
}

void paged_attention_prefill_f32(const float* q, const float* k_cache, const float* v_cache,
                                 const int32_t* block_tables, const int32_t* cu_seqlens_q,
                                 const int32_t* seq_lens, const float* sinks, float* out,
                                 const DecodeShape& shape, int64_t tokens, float scale,
                                 int64_t window) {
  std::vector<int64_t> request(tokens), length(tokens);   // per token: b and its seq_len p + 1
  for (int64_t b = 0; b < shape.batch; ++b) {
    const int64_t start = cu_seqlens_q[b], end = cu_seqlens_q[b + 1];
    for (int64_t t = start; t < end; ++t) {
      request[t] = b;
      length[t] = seq_lens[b] - (end - t) + 1;
    }
  }
  const int64_t group = shape.q_heads / shape.kv_heads;
  const int64_t tasks = tokens * shape.kv_heads;
#pragma omp parallel
  {
    std::vector<float> probs;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < tasks; ++i) {
      const int64_t t = i / shape.kv_heads;
      const int64_t kv = i % shape.kv_heads;
      const int64_t row = (t * shape.q_heads + kv * group) * shape.head_size;
      attend_group(q + row, k_cache, v_cache, block_tables + request[t] * shape.table_width,
                   length[t], kv, kv * group, sinks, out + row, shape, scale, window, probs);
    }
  }
}

}  // namespace deepinfer::cpu

// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
#include "decode_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace deepinfer::cpu {
namespace {

// Online softmax state of one (request, head): running max, sum and weighted values
// (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax").
struct OnlineSoftmax {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  std::vector<float> acc;

  explicit OnlineSoftmax(int64_t head_size) : acc(head_size, 0.0f) {}

  void add(float score, const float* value) {
    const float new_max = std::max(max, score);
    const float rescale = std::exp(max - new_max);  // 0 on the first key
    const float weight = std::exp(score - new_max);
    sum = sum * rescale + weight;
    for (size_t d = 0; d < acc.size(); ++d) acc[d] = acc[d] * rescale + weight * value[d];
    max = new_max;
  }

  // A sink logit joins the denominator only.
  void add_sink(float sink) {
    const float new_max = std::max(max, sink);
    const float rescale = std::exp(max - new_max);
    sum = sum * rescale + std::exp(sink - new_max);
    for (float& a : acc) a *= rescale;
    max = new_max;
  }
};

void attend_one(const float* q, const float* k_cache, const float* v_cache,
                const int32_t* block_table, int64_t seq_len, int64_t kv_head, const float* sink,
                float* out, const DecodeShape& shape, float scale, int64_t window) {
  const int64_t head_size = shape.head_size;
  if (seq_len <= 0) {
    std::fill(out, out + head_size, 0.0f);
    return;
  }
  OnlineSoftmax state(head_size);
  const int64_t first = window > 0 ? std::max<int64_t>(seq_len - window, 0) : 0;
  const int64_t row_stride = shape.kv_heads * head_size;
  for (int64_t pos = first; pos < seq_len; ++pos) {
    const int64_t block = block_table[pos / shape.block_size];
    const int64_t offset = (block * shape.block_size + pos % shape.block_size) * row_stride +
                           kv_head * head_size;
    const float* key = k_cache + offset;
    float score = 0.0f;
    for (int64_t d = 0; d < head_size; ++d) score += q[d] * key[d];
    state.add(score * scale, v_cache + offset);
  }
  if (sink != nullptr) state.add_sink(*sink);
  for (int64_t d = 0; d < head_size; ++d) out[d] = state.acc[d] / state.sum;
}

}  // namespace

void paged_attention_decode_f32(const float* q, const float* k_cache, const float* v_cache,
                                const int32_t* block_tables, const int32_t* seq_lens,
                                const float* sinks, float* out, const DecodeShape& shape,
                                float scale, int64_t window) {
  const int64_t group = shape.q_heads / shape.kv_heads;
  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t h = 0; h < shape.q_heads; ++h) {
      const int64_t row = (b * shape.q_heads + h) * shape.head_size;
      attend_one(q + row, k_cache, v_cache, block_tables + b * shape.table_width, seq_lens[b],
                 h / group, sinks != nullptr ? sinks + h : nullptr, out + row, shape, scale,
                 window);
    }
  }
}

}  // namespace deepinfer::cpu

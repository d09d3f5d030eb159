// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
#include "bitmask.h"

namespace deepinfer::cpu {

template <typename T>
void apply_token_bitmask(T* logits, int64_t row_stride, int64_t vocab, T neg_inf,
                         const int32_t* bitmask, int64_t words, const int64_t* rows,
                         int64_t num_rows) {
  for (int64_t i = 0; i < num_rows; ++i) {
    const int64_t row = rows[i];
    T* out = logits + row * row_stride;
    const int32_t* mask = bitmask + row * words;
    for (int64_t t = 0; t < vocab; ++t) {
      const uint32_t word = static_cast<uint32_t>(mask[t >> 5]);
      if (((word >> (t & 31)) & 1u) == 0u) out[t] = neg_inf;
    }
  }
}

template void apply_token_bitmask<int16_t>(int16_t*, int64_t, int64_t, int16_t,
                                            const int32_t*, int64_t, const int64_t*, int64_t);
template void apply_token_bitmask<int32_t>(int32_t*, int64_t, int64_t, int32_t,
                                            const int32_t*, int64_t, const int64_t*, int64_t);

}  // namespace deepinfer::cpu

// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// Sets logits[r, t] to the bit pattern `neg_inf` (the dtype's -inf) for every selected row r
// and token t < vocab whose bit t % 32 of bitmask[r, t / 32] is clear. The logits are seen
// as raw integers of the dtype's width (T = int16_t for 16-bit floats, int32_t for
// float32), so one routine serves every dtype. rows: num_rows distinct row ids.
template <typename T>
void apply_token_bitmask(T* logits, int64_t row_stride, int64_t vocab, T neg_inf,
                         const int32_t* bitmask, int64_t words, const int64_t* rows,
                         int64_t num_rows);

}  // namespace deepinfer::cpu

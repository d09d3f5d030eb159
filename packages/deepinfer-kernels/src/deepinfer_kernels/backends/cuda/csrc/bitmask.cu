// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
// apply_token_bitmask: one thread per (row, token); a disallowed token's logit becomes the
// dtype's -inf, written as a raw 2- or 4-byte word.
#include "common.cuh"

namespace deepinfer::cuda {
namespace {

constexpr int kThreads = 256;

template <typename Word>
__global__ void bitmask_kernel(Word* logits, int64_t row_stride, int64_t vocab, Word neg_inf,
                               const int32_t* bitmask, int64_t words, const int64_t* rows) {
  const int64_t row = rows != nullptr ? rows[blockIdx.x] : blockIdx.x;
  const int64_t token = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (token >= vocab) return;
  const uint32_t word = static_cast<uint32_t>(bitmask[row * words + token / 32]);
  if (((word >> (token % 32)) & 1u) == 0u) logits[row * row_stride + token] = neg_inf;
}

template <typename Word>
int launch(void* logits, int64_t row_stride, int64_t vocab, uint32_t neg_inf,
           const int32_t* bitmask, int64_t words, const int64_t* rows, int64_t num_rows,
           cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(num_rows),
                  static_cast<unsigned>((vocab + kThreads - 1) / kThreads));
  bitmask_kernel<Word><<<grid, kThreads, 0, stream>>>(static_cast<Word*>(logits), row_stride,
                                                      vocab, static_cast<Word>(neg_inf), bitmask,
                                                      words, rows);
  return launch_status();
}

}  // namespace
}  // namespace deepinfer::cuda

// rows: null (every row) or num_rows distinct row ids; neg_inf: the dtype's -inf bits.
extern "C" int deepinfer_apply_token_bitmask(void* logits, int64_t row_stride, int64_t vocab,
                                             uint32_t neg_inf, int elem_bytes,
                                             const int32_t* bitmask, int64_t words,
                                             const int64_t* rows, int64_t num_rows,
                                             cudaStream_t stream) {
  if (num_rows == 0 || vocab == 0) return 0;
  if (elem_bytes == 4) {
    return deepinfer::cuda::launch<uint32_t>(logits, row_stride, vocab, neg_inf, bitmask, words,
                                             rows, num_rows, stream);
  }
  return deepinfer::cuda::launch<uint16_t>(logits, row_stride, vocab, neg_inf, bitmask, words,
                                           rows, num_rows, stream);
}

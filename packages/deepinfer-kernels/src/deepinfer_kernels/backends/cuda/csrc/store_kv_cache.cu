// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
// store_kv_cache: one thread block per token copies its [Hk, D] key and value into its slot
// of the contiguous [N, S, Hk, D] caches. A pure copy, so elements move as raw 2- or 4-byte
// words whatever the float dtype.
#include "common.cuh"

namespace deepinfer::cuda {
namespace {

template <typename Word>
__global__ void store_kv_cache_kernel(const Word* k, const Word* v, Word* k_cache,
                                      Word* v_cache, const int64_t* slot_mapping, int64_t width,
                                      int64_t k_stride, int64_t v_stride) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;  // padding token
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    k_cache[slot * width + i] = k[token * k_stride + i];
    v_cache[slot * width + i] = v[token * v_stride + i];
  }
}

template <typename Word>
int launch(const void* k, const void* v, void* k_cache, void* v_cache, const int64_t* slots,
           int64_t tokens, int64_t width, int64_t k_stride, int64_t v_stride,
           cudaStream_t stream) {
  const int threads = width >= 1024 ? 1024 : ((width + 31) / 32) * 32;
  store_kv_cache_kernel<Word><<<tokens, threads, 0, stream>>>(
      static_cast<const Word*>(k), static_cast<const Word*>(v), static_cast<Word*>(k_cache),
      static_cast<Word*>(v_cache), slots, width, k_stride, v_stride);
  return launch_status();
}

}  // namespace
}  // namespace deepinfer::cuda

// width = Hk * D elements per token; strides in elements; elem_bytes is 2 or 4.
extern "C" int deepinfer_store_kv_cache(const void* k, const void* v, void* k_cache,
                                        void* v_cache, const int64_t* slot_mapping,
                                        int64_t tokens, int64_t width, int64_t k_stride,
                                        int64_t v_stride, int elem_bytes, cudaStream_t stream) {
  if (tokens == 0) return 0;
  if (elem_bytes == 4) {
    return deepinfer::cuda::launch<uint32_t>(k, v, k_cache, v_cache, slot_mapping, tokens,
                                             width, k_stride, v_stride, stream);
  }
  return deepinfer::cuda::launch<uint16_t>(k, v, k_cache, v_cache, slot_mapping, tokens, width,
                                           k_stride, v_stride, stream);
}

// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
// rms_norm (optionally with the residual add): one thread block per row, float32 math, a
// fixed-shape block reduction, so a row's result does not depend on the number of rows.
#include "common.cuh"

namespace deepinfer::cuda {
namespace {

constexpr int kThreads = 256;

// Sum over the block: warp shuffles, then one warp over the per-warp partials.
__device__ float block_sum(float value) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffff, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  value = lane < kThreads / 32 ? partial[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffff, value, offset);
  return value;  // every thread holds the total
}

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* residual, const T* weight, T* out,
                                T* residual_out, int64_t hidden, float eps, int64_t x_stride,
                                int64_t res_stride, int64_t out_stride, int64_t res_out_stride) {
  const int64_t row = blockIdx.x;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += kThreads) {
    float v = to_float(x[row * x_stride + i]);
    if (residual != nullptr) {
      const T summed = from_float<T>(v + to_float(residual[row * res_stride + i]));
      residual_out[row * res_out_stride + i] = summed;  // the rounded residual stream
      v = to_float(summed);
    }
    sum_sq += v * v;
  }
  const float rstd = rsqrtf(block_sum(sum_sq) / static_cast<float>(hidden) + eps);
  for (int64_t i = threadIdx.x; i < hidden; i += kThreads) {
    const float v = residual != nullptr ? to_float(residual_out[row * res_out_stride + i])
                                        : to_float(x[row * x_stride + i]);
    out[row * out_stride + i] = from_float<T>(v * rstd * to_float(weight[i]));
  }
}

template <typename T>
int launch(const void* x, const void* residual, const void* weight, void* out,
           void* residual_out, int64_t rows, int64_t hidden, float eps, int64_t x_stride,
           int64_t res_stride, int64_t out_stride, int64_t res_out_stride, cudaStream_t stream) {
  rms_norm_kernel<T><<<rows, kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(residual), static_cast<const T*>(weight),
      static_cast<T*>(out), static_cast<T*>(residual_out), hidden, eps, x_stride, res_stride,
      out_stride, res_out_stride);
  return launch_status();
}

}  // namespace
}  // namespace deepinfer::cuda

// residual and residual_out are null without the fused add; strides in elements.
extern "C" int deepinfer_rms_norm(const void* x, const void* residual, const void* weight,
                                  void* out, void* residual_out, int64_t rows, int64_t hidden,
                                  float eps, int64_t x_stride, int64_t res_stride,
                                  int64_t out_stride, int64_t res_out_stride, int dtype,
                                  cudaStream_t stream) {
  using namespace deepinfer::cuda;
  if (rows == 0) return 0;
  switch (dtype) {
    case kFloat32:
      return launch<float>(x, residual, weight, out, residual_out, rows, hidden, eps, x_stride,
                           res_stride, out_stride, res_out_stride, stream);
    case kFloat16:
      return launch<__half>(x, residual, weight, out, residual_out, rows, hidden, eps, x_stride,
                            res_stride, out_stride, res_out_stride, stream);
    case kBFloat16:
      return launch<__nv_bfloat16>(x, residual, weight, out, residual_out, rows, hidden, eps,
                                   x_stride, res_stride, out_stride, res_out_stride, stream);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

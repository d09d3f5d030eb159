// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
// Shared helpers of the `cuda` backend. The kernels take plain pointers and are exported
// with a C ABI (loaded through ctypes), so they need no torch headers to compile.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace deepinfer::cuda {

// dtype codes shared with backends/cuda/ops.py
enum DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// The launch status as an int for the C ABI (0 = cudaSuccess).
inline int launch_status() { return static_cast<int>(cudaGetLastError()); }

}  // namespace deepinfer::cuda

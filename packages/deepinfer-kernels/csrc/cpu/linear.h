// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// Element type of the weight (x is always float32, converted exactly by the caller; the
// output is float32).
enum class LinearInput { kFloat32, kBFloat16, kFloat16 };

// Geometry of one linear call: x [rows, in] and weight [out, in], both row-major and dense.
struct LinearShape {
  int64_t rows;  // T
  int64_t out;   // N
  int64_t in;    // K
};

// Whether this machine runs the kernel (x86-64 with AVX2, FMA and F16C, checked at run time).
bool linear_supported();

// out[t, n] = sum_k x[t, k] * weight[n, k] (+ bias[n]), in float32, out [rows, out] dense.
// Batch invariant: every output element is one 8-lane fused multiply-add chain over k
// (lane l takes k = l, l + 8, ...; the K % 8 tail goes through the same lanes, zero padded),
// then one fixed tree over the 8 lanes, then the bias add. Register blocking and the row /
// column remainders only decide which elements are computed together, never this order, and
// OpenMP splits the output columns, never k. So row t's result is the same bits whatever
// the other rows are, and whatever the thread count. Precondition: linear_supported().
void linear_f32_out(const float* x, const void* weight, const float* bias, float* out,
                    const LinearShape& shape, LinearInput type, int threads);

}  // namespace deepinfer::cpu

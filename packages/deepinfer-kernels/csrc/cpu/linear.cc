// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
//
// Batch-invariant float32-accumulating GEMM out = x * weight^T (+ bias) for the `cpu` backend.
// Both operands are K-contiguous (HF weight layout), so each output element is a dot product
// of two contiguous rows: the kernel keeps 4 x 3 (or 1 x 6) of them in AVX2 registers.
// x arrives in float32 (converted once by the caller); the weight is read in its own dtype.
// NOTE: only the functions between push_options and pop_options are compiled for AVX2; the
// rest of the extension stays baseline x86-64 and linear_supported() checks the CPU first.
#include "linear.h"

#include <omp.h>

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace deepinfer::cpu {
namespace {

constexpr int kRowBlock = 4;        // rows of x per full register block (4 x 3 outputs)
constexpr int kPanel = 6;           // rows of weight per panel: two 4 x 3 blocks, or 1 x 6
constexpr int64_t kRowChunk = 64;   // rows of x kept hot in L2 while a thread sweeps its panels
constexpr int64_t kParallelWork = int64_t{1} << 17;   // multiply-adds below which one thread runs

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Weight loaders: 8 consecutive elements as 8 float32 lanes (exact conversions).
struct LoadF32 {
  using T = float;
  static __m256 load(const T* p) { return _mm256_loadu_ps(p); }
};
struct LoadBF16 {   // bfloat16 is the top half of a float32
  using T = uint16_t;
  static __m256 load(const T* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i wide = _mm256_cvtepu16_epi32(raw);
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};
struct LoadF16 {
  using T = uint16_t;
  static __m256 load(const T* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

// The last n < 8 elements, zero padded (all-zero bits are +0.0 in every input type).
template <typename In>
__m256 load_tail(const typename In::T* p, int64_t n) {
  typename In::T buf[8] = {};
  for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
  return In::load(buf);
}

// Fixed tree over the 8 lanes: (l0+l4, l1+l5, l2+l6, l3+l7), then pairs, then the last pair.
float lane_sum(__m256 v) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

// MR rows of x (float32) against NR rows of weight. Every element takes the same steps:
// 8-lane FMAs over k in ascending order, the zero-padded tail, lane_sum, bias.
template <typename W, int MR, int NR>
void block(const float* x, const typename W::T* w, const float* bias, float* out, int64_t in,
           int64_t out_stride) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= in; k += 8) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load(w + j * in + k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(x + i * in + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < in) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = load_tail<W>(w + j * in + k, in - k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = load_tail<LoadF32>(x + i * in + k, in - k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      float s = lane_sum(acc[i][j]);
      if (bias != nullptr) s += bias[j];
      out[i * out_stride + j] = s;
    }
}

// A 4-row block against cols <= 3 weight rows.
template <typename W>
void block4(int cols, const float* x, const typename W::T* w, const float* bias, float* out,
            int64_t in, int64_t out_stride) {
  switch (cols) {
    case 3: return block<W, 4, 3>(x, w, bias, out, in, out_stride);
    case 2: return block<W, 4, 2>(x, w, bias, out, in, out_stride);
    default: return block<W, 4, 1>(x, w, bias, out, in, out_stride);
  }
}

// One row against cols <= 6 weight rows.
template <typename W>
void block1(int cols, const float* x, const typename W::T* w, const float* bias, float* out,
            int64_t in, int64_t out_stride) {
  switch (cols) {
    case 6: return block<W, 1, 6>(x, w, bias, out, in, out_stride);
    case 5: return block<W, 1, 5>(x, w, bias, out, in, out_stride);
    case 4: return block<W, 1, 4>(x, w, bias, out, in, out_stride);
    case 3: return block<W, 1, 3>(x, w, bias, out, in, out_stride);
    case 2: return block<W, 1, 2>(x, w, bias, out, in, out_stride);
    default: return block<W, 1, 1>(x, w, bias, out, in, out_stride);
  }
}

// Rows [row_begin, row_end) of x against panel `panel` (weight rows kPanel * panel ...):
// groups of 4 rows as two 4 x 3 blocks, leftover rows one at a time as 1 x 6 blocks (six
// independent FMA chains keep a single decode row from waiting on FMA latency).
template <typename W>
void run_panel(const float* x, const typename W::T* w, const float* bias, float* out,
               const LinearShape& shape, int64_t row_begin, int64_t row_end, int64_t panel) {
  const int64_t col = panel * kPanel;
  const int cols = static_cast<int>(shape.out - col < kPanel ? shape.out - col : kPanel);
  const int first = cols < 3 ? cols : 3;
  const typename W::T* wp = w + col * shape.in;
  const float* bp = bias != nullptr ? bias + col : nullptr;
  int64_t row = row_begin;
  for (; row + kRowBlock <= row_end; row += kRowBlock) {
    const float* xp = x + row * shape.in;
    float* op = out + row * shape.out + col;
    block4<W>(first, xp, wp, bp, op, shape.in, shape.out);
    if (cols > 3)
      block4<W>(cols - 3, xp, wp + 3 * shape.in, bp != nullptr ? bp + 3 : nullptr, op + 3,
                shape.in, shape.out);
  }
  for (; row < row_end; ++row)
    block1<W>(cols, x + row * shape.in, wp, bp, out + row * shape.out + col, shape.in, shape.out);
}

void panel_any(LinearInput type, const float* x, const void* w, const float* bias, float* out,
               const LinearShape& shape, int64_t row_begin, int64_t row_end, int64_t panel) {
  switch (type) {
    case LinearInput::kFloat32:
      return run_panel<LoadF32>(x, static_cast<const float*>(w), bias, out, shape, row_begin,
                                row_end, panel);
    case LinearInput::kBFloat16:
      return run_panel<LoadBF16>(x, static_cast<const uint16_t*>(w), bias, out, shape, row_begin,
                                 row_end, panel);
    case LinearInput::kFloat16:
      return run_panel<LoadF16>(x, static_cast<const uint16_t*>(w), bias, out, shape, row_begin,
                                row_end, panel);
  }
}

#pragma GCC pop_options
#endif  // __x86_64__

}  // namespace

bool linear_supported() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

void linear_f32_out(const float* x, const void* weight, const float* bias, float* out,
                    const LinearShape& shape, LinearInput type, int threads) {
#if defined(__x86_64__)
  if (shape.rows == 0 || shape.out == 0) return;
  const int64_t panels = (shape.out + kPanel - 1) / kPanel;
  const bool parallel = threads > 1 && shape.rows * shape.out * shape.in >= kParallelWork;
  // Each thread owns a fixed range of panels (output columns) and sweeps the rows chunk by
  // chunk; the split changes who computes an element, never how.
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int64_t count = omp_get_num_threads();
    const int64_t id = omp_get_thread_num();
    const int64_t first = panels * id / count;
    const int64_t last = panels * (id + 1) / count;
    for (int64_t row = 0; row < shape.rows; row += kRowChunk) {
      const int64_t row_end = row + kRowChunk < shape.rows ? row + kRowChunk : shape.rows;
      for (int64_t panel = first; panel < last; ++panel)
        panel_any(type, x, weight, bias, out, shape, row, row_end, panel);
    }
  }
#else
  (void)x, (void)weight, (void)bias, (void)out, (void)shape, (void)type, (void)threads;
#endif
}

}  // namespace deepinfer::cpu

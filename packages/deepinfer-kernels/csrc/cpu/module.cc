// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: DeepInfer contributors
// nanobind bindings of the `cpu` backend (module deepinfer_kernels._cpu_ext). Tensors arrive
// through DLPack as CPU ndarrays; the Python side (backends/cpu/*.py) checks shapes and
// contiguity and allocates outputs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>

#include "bitmask.h"
#include "decode_attention.h"
#include "linear.h"

namespace nb = nanobind;

namespace {

template <typename T, typename... Extra>
using Array = nb::ndarray<T, nb::device::cpu, nb::c_contig, Extra...>;

void decode(Array<const float, nb::ndim<3>> q, Array<const float, nb::ndim<4>> k_cache,
            Array<const float, nb::ndim<4>> v_cache,
            Array<const int32_t, nb::ndim<2>> block_tables,
            Array<const int32_t, nb::ndim<1>> seq_lens, Array<const float, nb::ndim<1>> sinks,
            bool has_sinks, Array<float, nb::ndim<3>> out, float scale, int64_t window) {
  deepinfer::cpu::DecodeShape shape{static_cast<int64_t>(q.shape(0)),
                                    static_cast<int64_t>(q.shape(1)),
                                    static_cast<int64_t>(k_cache.shape(2)),
                                    static_cast<int64_t>(q.shape(2)),
                                    static_cast<int64_t>(k_cache.shape(1)),
                                    static_cast<int64_t>(block_tables.shape(1))};
  nb::gil_scoped_release release;
  deepinfer::cpu::paged_attention_decode_f32(q.data(), k_cache.data(), v_cache.data(),
                                             block_tables.data(), seq_lens.data(),
                                             has_sinks ? sinks.data() : nullptr, out.data(),
                                             shape, scale, window);
}

void prefill(Array<const float, nb::ndim<3>> q, Array<const float, nb::ndim<4>> k_cache,
             Array<const float, nb::ndim<4>> v_cache,
             Array<const int32_t, nb::ndim<2>> block_tables,
             Array<const int32_t, nb::ndim<1>> cu_seqlens_q,
             Array<const int32_t, nb::ndim<1>> seq_lens, Array<const float, nb::ndim<1>> sinks,
             bool has_sinks, Array<float, nb::ndim<3>> out, float scale, int64_t window) {
  deepinfer::cpu::DecodeShape shape{static_cast<int64_t>(seq_lens.shape(0)),
                                    static_cast<int64_t>(q.shape(1)),
                                    static_cast<int64_t>(k_cache.shape(2)),
                                    static_cast<int64_t>(q.shape(2)),
                                    static_cast<int64_t>(k_cache.shape(1)),
                                    static_cast<int64_t>(block_tables.shape(1))};
  nb::gil_scoped_release release;
  deepinfer::cpu::paged_attention_prefill_f32(
      q.data(), k_cache.data(), v_cache.data(), block_tables.data(), cu_seqlens_q.data(),
      seq_lens.data(), has_sinks ? sinks.data() : nullptr, out.data(), shape,
      static_cast<int64_t>(q.shape(0)), scale, window);
}

// x float32 [T, K]; weight float32 (T = float) or the raw bits of a 16-bit float
// (T = int16_t, `type` says which) [N, K]; bias float32 (ignored unless has_bias); out
// float32 [T, N].
template <typename T>
void linear(Array<const float, nb::ndim<2>> x, Array<const T, nb::ndim<2>> weight,
            Array<const float, nb::ndim<1>> bias, bool has_bias, Array<float, nb::ndim<2>> out,
            int type, int threads) {
  deepinfer::cpu::LinearShape shape{static_cast<int64_t>(x.shape(0)),
                                    static_cast<int64_t>(weight.shape(0)),
                                    static_cast<int64_t>(x.shape(1))};
  nb::gil_scoped_release release;
  deepinfer::cpu::linear_f32_out(x.data(), weight.data(), has_bias ? bias.data() : nullptr,
                                 out.data(), shape,
                                 static_cast<deepinfer::cpu::LinearInput>(type), threads);
}

template <typename T>
void bitmask(Array<T, nb::ndim<2>> logits, int64_t vocab, T neg_inf,
             Array<const int32_t, nb::ndim<2>> mask, Array<const int64_t, nb::ndim<1>> rows) {
  nb::gil_scoped_release release;
  deepinfer::cpu::apply_token_bitmask<T>(logits.data(), static_cast<int64_t>(logits.shape(1)),
                                         vocab, neg_inf, mask.data(),
                                         static_cast<int64_t>(mask.shape(1)), rows.data(),
                                         static_cast<int64_t>(rows.shape(0)));
}

}  // namespace

NB_MODULE(_cpu_ext, m) {
  m.doc() = "DeepInfer cpu kernel backend (C++)";
  m.def("paged_attention_decode_f32", &decode, nb::arg("q"), nb::arg("k_cache"),
        nb::arg("v_cache"), nb::arg("block_tables"), nb::arg("seq_lens"), nb::arg("sinks"),
        nb::arg("has_sinks"), nb::arg("out"), nb::arg("scale"), nb::arg("window"));
  m.def("paged_attention_prefill_f32", &prefill, nb::arg("q"), nb::arg("k_cache"),
        nb::arg("v_cache"), nb::arg("block_tables"), nb::arg("cu_seqlens_q"),
        nb::arg("seq_lens"), nb::arg("sinks"), nb::arg("has_sinks"), nb::arg("out"),
        nb::arg("scale"), nb::arg("window"));
  m.def("linear_supported", &deepinfer::cpu::linear_supported);
  m.def("linear_f32", &linear<float>, nb::arg("x"), nb::arg("weight"), nb::arg("bias"),
        nb::arg("has_bias"), nb::arg("out"), nb::arg("type"), nb::arg("threads"));
  m.def("linear_16", &linear<int16_t>, nb::arg("x"), nb::arg("weight"), nb::arg("bias"),
        nb::arg("has_bias"), nb::arg("out"), nb::arg("type"), nb::arg("threads"));
  m.def("apply_token_bitmask_16", &bitmask<int16_t>, nb::arg("logits"), nb::arg("vocab"),
        nb::arg("neg_inf"), nb::arg("bitmask"), nb::arg("rows"));
  m.def("apply_token_bitmask_32", &bitmask<int32_t>, nb::arg("logits"), nb::arg("vocab"),
        nb::arg("neg_inf"), nb::arg("bitmask"), nb::arg("rows"));
}

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Bad arguments raise ValueError naming the offending field."""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels import ops

F32, I32, I64 = torch.float32, torch.int32, torch.int64


def _attn():
    q = torch.randn(3, 4, 16)
    cache = torch.randn(4, 4, 2, 16)
    table = torch.zeros(2, 2, dtype=I32)
    cu = torch.tensor([0, 1, 3], dtype=I32)
    lens = torch.tensor([2, 3], dtype=I32)
    return q, cache, cache.clone(), table, cu, lens


def _sample_args(batch=2, vocab=8):
    return (torch.randn(batch, vocab), torch.ones(batch), torch.zeros(batch, dtype=I64),
            torch.ones(batch), torch.zeros(batch), torch.zeros(batch, dtype=I64),
            torch.zeros(batch, dtype=I64))


CASES = {
    "linear weight in features": (lambda: ops.linear(torch.randn(2, 8), torch.randn(3, 7)),
                                  "weight"),
    "linear weight dtype": (lambda: ops.linear(torch.randn(2, 8), torch.randn(3, 8).half()),
                            "weight"),
    "linear bias size": (lambda: ops.linear(torch.randn(2, 8), torch.randn(3, 8),
                                            torch.randn(4)), "bias"),
    "linear x 1-D": (lambda: ops.linear(torch.randn(8), torch.randn(3, 8)), "x"),
    "prefill batch_invariant": (lambda: ops.paged_attention_prefill(
        *_attn(), 0.25, batch_invariant="yes"), "batch_invariant"),
    "rms_norm weight size": (lambda: ops.rms_norm(torch.randn(2, 8), torch.ones(7), 1e-6),
                             "weight"),
    "rms_norm eps": (lambda: ops.rms_norm(torch.randn(2, 8), torch.ones(8), 0.0), "eps"),
    "rms_norm residual": (lambda: ops.rms_norm(torch.randn(2, 8), torch.ones(8), 1e-6,
                                               torch.randn(3, 8)), "residual"),
    "rms_norm int": (lambda: ops.rms_norm(torch.ones(2, 8, dtype=I64), torch.ones(8), 1e-6), "x"),
    "silu odd": (lambda: ops.silu_and_mul(torch.randn(2, 7)), "x"),
    "rotary positions dtype": (lambda: ops.rotary_embedding(
        torch.zeros(2, dtype=I32), torch.randn(2, 1, 8), torch.randn(2, 1, 8),
        torch.randn(4, 8), True), "positions"),
    "rotary cos_sin too wide": (lambda: ops.rotary_embedding(
        torch.zeros(2, dtype=I64), torch.randn(2, 1, 8), torch.randn(2, 1, 8),
        torch.randn(4, 10), True), "cos_sin"),
    "store slot dtype": (lambda: ops.store_kv_cache(
        torch.randn(2, 1, 8), torch.randn(2, 1, 8), torch.randn(2, 4, 1, 8),
        torch.randn(2, 4, 1, 8), torch.zeros(2, dtype=I32)), "slot_mapping"),
    "store cache heads": (lambda: ops.store_kv_cache(
        torch.randn(2, 1, 8), torch.randn(2, 1, 8), torch.randn(2, 4, 2, 8),
        torch.randn(2, 4, 2, 8), torch.zeros(2, dtype=I64)), "k_cache"),
    "prefill cu_seqlens": (lambda: ops.paged_attention_prefill(
        *_attn()[:4], torch.tensor([0, 3], dtype=I32), _attn()[5], 0.25), "cu_seqlens_q"),
    "prefill gqa": (lambda: ops.paged_attention_prefill(
        torch.randn(3, 3, 16), *_attn()[1:], 0.25), "q"),
    "prefill window": (lambda: ops.paged_attention_prefill(*_attn(), 0.25, sliding_window=0),
                       "sliding_window"),
    "prefill sinks": (lambda: ops.paged_attention_prefill(*_attn(), 0.25, sinks=torch.zeros(3)),
                      "sinks"),
    "prefill scale": (lambda: ops.paged_attention_prefill(*_attn(), -1.0), "scale"),
    "decode split": (lambda: ops.paged_attention_decode(
        torch.randn(2, 4, 16), *_attn()[1:4], _attn()[5], 0.25, split_size=0), "split_size"),
    "decode block_tables dtype": (lambda: ops.paged_attention_decode(
        torch.randn(2, 4, 16), *_attn()[1:3], torch.zeros(2, 2, dtype=I64), _attn()[5], 0.25),
        "block_tables"),
    "moe top_k": (lambda: ops.fused_moe(torch.randn(2, 8), torch.randn(2, 4),
                                        torch.randn(4, 6, 8), torch.randn(4, 8, 3), 5), "top_k"),
    "moe w2": (lambda: ops.fused_moe(torch.randn(2, 8), torch.randn(2, 4),
                                     torch.randn(4, 6, 8), torch.randn(4, 8, 4), 2), "w2"),
    "moe scoring": (lambda: ops.fused_moe(torch.randn(2, 8), torch.randn(2, 4),
                                          torch.randn(4, 6, 8), torch.randn(4, 8, 3), 2, "relu"),
                    "scoring"),
    "moe groups": (lambda: ops.fused_moe(torch.randn(2, 8), torch.randn(2, 4),
                                         torch.randn(4, 6, 8), torch.randn(4, 8, 3), 2,
                                         n_group=3, topk_group=1), "n_group"),
    "sample logits dtype": (lambda: ops.sample(torch.randn(2, 8).half(), *_sample_args()[1:]),
                            "logits"),
    "sample seeds size": (lambda: ops.sample(*_sample_args()[:5], torch.zeros(3, dtype=I64),
                                             _sample_args()[6]), "seeds"),
    "bitmask words": (lambda: ops.apply_token_bitmask(torch.randn(2, 65),
                                                      torch.zeros(2, 2, dtype=I32)), "bitmask"),
    "bitmask dtype": (lambda: ops.apply_token_bitmask(torch.randn(2, 32),
                                                      torch.zeros(2, 1, dtype=I64)), "bitmask"),
    "unknown backend": (lambda: ops.silu_and_mul(torch.randn(2, 8), backend="nope"), "backend"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_argument_names_field(name):
    call, field = CASES[name]
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        call()


# Index values are checked on CPU tensors (no device sync there): every backend that runs here,
# the C++ `cpu` one included, gets an error instead of an out-of-bounds access.
def _kv():
    return torch.randn(3, 2, 8), torch.randn(3, 2, 8), torch.randn(4, 4, 2, 8), torch.randn(4, 4, 2, 8)


VALUE_CASES = {
    "store slot past the cache": (lambda b: ops.store_kv_cache(*_kv(), torch.tensor([0, 16, 1]), backend=b),
                                  "slot_mapping", ("reference", "triton")),
    "bitmask index = B": (lambda b: ops.apply_token_bitmask(torch.randn(2, 64), torch.zeros(2, 2, dtype=I32),
                                                            torch.tensor([2], dtype=I64), backend=b),
                          "indices", ("reference", "cpu", "triton")),
    "bitmask index -1": (lambda b: ops.apply_token_bitmask(torch.randn(2, 64), torch.zeros(2, 2, dtype=I32),
                                                           torch.tensor([-1], dtype=I64), backend=b),
                         "indices", ("reference", "cpu", "triton")),
    "prefill cu beyond T": (lambda b: ops.paged_attention_prefill(
        *_attn()[:4], torch.tensor([0, 1, 4], dtype=I32), _attn()[5], 0.25, backend=b),
        "cu_seqlens_q", ("reference", "triton")),
    "prefill cu decreasing": (lambda b: ops.paged_attention_prefill(
        *_attn()[:4], torch.tensor([0, 4, 3], dtype=I32), _attn()[5], 0.25, backend=b),
        "cu_seqlens_q", ("reference", "triton")),
    "prefill seq_len below q_len": (lambda b: ops.paged_attention_prefill(
        *_attn()[:5], torch.tensor([2, 1], dtype=I32), 0.25, backend=b), "seq_lens", ("reference", "triton")),
    "prefill block id past the pool": (lambda b: ops.paged_attention_prefill(
        *_attn()[:3], torch.tensor([[4, 0], [0, 0]], dtype=I32), *_attn()[4:], 0.25, backend=b),
        "block_tables", ("reference", "triton")),
    "decode negative block id": (lambda b: ops.paged_attention_decode(
        torch.randn(2, 4, 16), *_attn()[1:3], torch.tensor([[-1, 0], [0, 0]], dtype=I32), _attn()[5], 0.25,
        backend=b), "block_tables", ("reference", "cpu", "triton")),
    "decode seq_len past the table": (lambda b: ops.paged_attention_decode(
        torch.randn(2, 4, 16), *_attn()[1:4], torch.tensor([2, 9], dtype=I32), 0.25, backend=b),
        "seq_lens", ("reference", "cpu", "triton")),
    "rotary position past the table": (lambda b: ops.rotary_embedding(
        torch.tensor([0, 4]), torch.randn(2, 1, 8), torch.randn(2, 1, 8), torch.randn(4, 8), True, backend=b),
        "positions", ("reference", "triton")),
    "sample negative temperature": (lambda b: ops.sample(
        _sample_args()[0], torch.tensor([1.0, -0.5]), *_sample_args()[2:], backend=b), "temperature",
        ("reference", "triton")),
    "sample top_p zero": (lambda b: ops.sample(
        *_sample_args()[:3], torch.tensor([1.0, 0.0]), *_sample_args()[4:], backend=b), "top_p",
        ("reference", "triton")),
    "sample NaN min_p": (lambda b: ops.sample(
        *_sample_args()[:4], torch.tensor([0.0, float("nan")]), *_sample_args()[5:], backend=b), "min_p",
        ("reference", "triton")),
}


@pytest.mark.parametrize("name,backend", [(n, b) for n in sorted(VALUE_CASES) for b in VALUE_CASES[n][2]])
def test_bad_index_values_name_the_field_before_any_backend_runs(name, backend):
    call, field, _ = VALUE_CASES[name]
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        call(backend)


SCALAR_CASES = {
    "moe top_k float": (lambda: ops.fused_moe(torch.randn(2, 8), torch.randn(2, 4), torch.randn(4, 6, 8),
                                              torch.randn(4, 8, 3), 1.5), "top_k"),
    "moe scaling text": (lambda: ops.fused_moe(torch.randn(2, 8), torch.randn(2, 4), torch.randn(4, 6, 8),
                                               torch.randn(4, 8, 3), 2, routed_scaling_factor="x"),
                         "routed_scaling_factor"),
    "rope max_position float": (lambda: ops.build_rope_cache(8, 32.5, 10000.0), "max_position"),
    "rope int dtype": (lambda: ops.build_rope_cache(8, 32, 10000.0, dtype=I32), "dtype"),
    "rope scaling text": (lambda: ops.build_rope_cache(8, 32, 10000.0, rope_scaling="linear"), "rope_scaling"),
    "uniforms n float": (lambda: ops.keyed_uniforms(torch.zeros(2, dtype=I64), torch.zeros(2, dtype=I64), 2.5), "n"),
    "decode window bool": (lambda: ops.paged_attention_decode(torch.randn(2, 4, 16), *_attn()[1:4], _attn()[5], 0.25,
                                                              sliding_window=True), "sliding_window"),
    "meta tensors": (lambda: ops.store_kv_cache(*(t.to("meta") for t in _kv()), torch.zeros(3, dtype=I64,
                                                                                            device="meta")), "k"),
    "empty vocabulary": (lambda: ops.sample(torch.randn(2, 0), *_sample_args()[1:]), "logits"),
    "norm eps text": (lambda: ops.rms_norm(torch.randn(2, 8), torch.ones(8), "1e-6"), "eps"),
    "norm eps bool": (lambda: ops.rms_norm(torch.randn(2, 8), torch.ones(8), True), "eps"),
    "norm eps inf": (lambda: ops.rms_norm(torch.randn(2, 8), torch.ones(8), float("inf")), "eps"),
    "rotary norm_eps nan": (lambda: _rotary(norm_eps=float("nan")), "norm_eps"),
    "rotary norm_eps missing": (lambda: _rotary(norm_eps=None), "norm_eps"),
    "rotary is_neox text": (lambda: _rotary(is_neox="no"), "is_neox"),
    "rotary no k heads": (lambda: _rotary(k_heads=0), "k"),
}


def _rotary(norm_eps=1e-6, is_neox=True, k_heads=2):
    w = torch.ones(8)
    return ops.rotary_embedding(torch.zeros(3, dtype=I64), torch.randn(3, 4, 8), torch.randn(3, k_heads, 8),
                                torch.randn(4, 8), is_neox, q_norm_weight=w, k_norm_weight=w, norm_eps=norm_eps)


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_bad_scalars_name_the_field(name):
    call, field = SCALAR_CASES[name]
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        call()


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_strided_index_tensors_give_the_contiguous_result(backend):
    """Index tensors that are views with a stride (e.g. every other element) are read by value
    (on the GPU when there is one: the triton backend serves CPU tensors only in the interpreter)."""
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator().manual_seed(3)
    k, v = torch.randn(4, 2, 8, generator=gen).to(dev), torch.randn(4, 2, 8, generator=gen).to(dev)
    slots = torch.tensor([0, 99, 5, 99, 9, 99, 14, 99], device=dev)[::2]   # strided view: [0, 5, 9, 14]
    k_cache = torch.full((4, 4, 2, 8), -7.0, device=dev)                   # poisoned
    v_cache = torch.full((4, 4, 2, 8), -7.0, device=dev)
    ops.store_kv_cache(k, v, k_cache, v_cache, slots, backend=backend)
    want_k, want_v = torch.full_like(k_cache, -7.0), torch.full_like(v_cache, -7.0)
    ops.store_kv_cache(k, v, want_k, want_v, slots.contiguous(), backend="reference")
    assert torch.equal(k_cache, want_k) and torch.equal(v_cache, want_v)
    positions = torch.tensor([3, 0, 1, 0, 2, 0, 0, 0], device=dev)[::2]
    q, kk = torch.randn(4, 2, 8, generator=gen).to(dev), torch.randn(4, 1, 8, generator=gen).to(dev)
    cos_sin = torch.randn(8, 8, generator=gen).to(dev)
    got = ops.rotary_embedding(positions, q.clone(), kk.clone(), cos_sin, True, backend=backend)
    want = ops.rotary_embedding(positions.contiguous(), q.clone(), kk.clone(), cos_sin, True, backend="reference")
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)

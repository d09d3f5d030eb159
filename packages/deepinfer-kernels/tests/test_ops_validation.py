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

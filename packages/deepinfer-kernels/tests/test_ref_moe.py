# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference fused_moe against a per-token loop and HF's Mixtral / DeepSeek-V3 MoE blocks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers import DeepseekV3Config, MixtralConfig
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (DeepseekV3Experts,
                                                                  DeepseekV3TopkRouter)
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

from deepinfer_kernels import ops


def _loop_routing(logits, top_k, scoring, bias, n_group, topk_group, renormalize, scale):
    """One token: Python sorting, float64."""
    scores = logits.double().softmax(-1) if scoring == "softmax" else logits.double().sigmoid()
    choice = scores + (bias.double() if bias is not None else 0)
    experts = list(range(len(scores)))
    if n_group:
        size = len(scores) // n_group
        group_score = [sum(sorted(choice[g * size:(g + 1) * size].tolist())[-2:])
                       for g in range(n_group)]
        best = sorted(range(n_group), key=lambda g: -group_score[g])[:topk_group]
        experts = [e for e in experts if e // size in best]
    chosen = sorted(experts, key=lambda e: -float(choice[e]))[:top_k]
    weights = [float(scores[e]) for e in chosen]
    if renormalize:
        weights = [w / sum(weights) for w in weights]
    return chosen, [w * scale for w in weights]


def _loop_moe(x, logits, w13, w2, *routing):
    out = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        for e, w in zip(*_loop_routing(logits[t], *routing)):
            gate, up = (w13[e].double() @ x[t].double()).chunk(2)
            out[t] += w * (w2[e].double() @ (F.silu(gate) * up))
    return out


SPECS = [  # tokens, hidden, inter, experts, top_k, scoring, bias, groups, renormalize, scale
    (0, 16, 8, 4, 2, "softmax", False, None, True, 1.0),
    (7, 32, 24, 8, 2, "softmax", False, None, True, 1.0),
    (9, 32, 24, 8, 3, "softmax", False, None, False, 1.0),
    (11, 16, 8, 16, 4, "sigmoid", True, (4, 2), True, 2.5),
    (6, 24, 16, 6, 1, "sigmoid", False, None, False, 1.0),
    (5, 16, 8, 8, 3, "softmax", True, (2, 1), True, 1.0),
]


@pytest.mark.parametrize("spec", SPECS)
def test_fused_moe_matches_per_token_loop(spec):
    tokens, hidden, inter, experts, top_k, scoring, bias, groups, renorm, scale = spec
    torch.manual_seed(tokens + experts)
    x = torch.randn(tokens, hidden)
    logits = torch.randn(tokens, experts)
    w13 = torch.randn(experts, 2 * inter, hidden) * hidden ** -0.5
    w2 = torch.randn(experts, hidden, inter) * inter ** -0.5
    b = torch.randn(experts) * 0.1 if bias else None
    n_group, topk_group = groups or (None, None)
    out = ops.fused_moe(x, logits, w13, w2, top_k, scoring, b, n_group, topk_group, renorm,
                        scale)
    expected = _loop_moe(x, logits, w13, w2, top_k, scoring, b, n_group, topk_group, renorm,
                         scale)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


def test_fused_moe_matches_hf_mixtral_block():
    torch.manual_seed(11)
    config = MixtralConfig(hidden_size=32, intermediate_size=24, num_local_experts=6,
                           num_experts_per_tok=2)
    block = MixtralSparseMoeBlock(config).eval()
    for p in block.parameters():
        torch.nn.init.normal_(p, std=0.2)
    x = torch.randn(1, 9, 32)
    logits = F.linear(x[0], block.gate.weight)
    with torch.no_grad():
        expected = block(x)[0]
        out = ops.fused_moe(x[0], logits, block.experts.gate_up_proj, block.experts.down_proj, 2,
                            "softmax", renormalize=True)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_fused_moe_matches_hf_deepseek_v3_router_and_experts():
    torch.manual_seed(12)
    config = DeepseekV3Config(hidden_size=32, moe_intermediate_size=16, n_routed_experts=16,
                              num_experts_per_tok=4, n_group=4, topk_group=2,
                              routed_scaling_factor=2.5, norm_topk_prob=True)
    router = DeepseekV3TopkRouter(config)
    experts = DeepseekV3Experts(config)
    with torch.no_grad():
        router.weight.normal_(std=0.3)
        router.e_score_correction_bias.normal_(std=0.1)
        experts.gate_up_proj.normal_(std=0.2)
        experts.down_proj.normal_(std=0.2)
        x = torch.randn(10, 32)
        logits, weights, ids = router(x)
        expected = experts(x, ids, weights)
        out = ops.fused_moe(x, logits, experts.gate_up_proj, experts.down_proj, 4, "sigmoid",
                            router.e_score_correction_bias, 4, 2, True, 2.5)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Cases for fused_moe, sample and apply_token_bitmask."""

from __future__ import annotations

import torch

from deepinfer_kernels.testing.case import FLOAT32, OpCase, randint, randn

INTERP = frozenset({"interp"})


def fused_moe_cases() -> list[OpCase]:
    def make(tokens: int, hidden: int, inter: int, experts: int, top_k: int, scoring: str,
             bias: bool, groups: tuple[int, int] | None, renormalize: bool, scaling: float):
        def build(dtype, device, gen):
            x = randn(gen, (tokens, hidden), dtype, device)
            logits = randn(gen, (tokens, experts), torch.float32, device)
            w13 = randn(gen, (experts, 2 * inter, hidden), dtype, device, hidden ** -0.5)
            w2 = randn(gen, (experts, hidden, inter), dtype, device, inter ** -0.5)
            b = randn(gen, (experts,), torch.float32, device, 0.1) if bias else None
            n_group, topk_group = groups if groups else (None, None)
            args = (x, logits, w13, w2, top_k, scoring, b, n_group, topk_group, renormalize,
                    scaling)
            return args, {}
        return build

    specs = [
        ("empty", (0, 16, 8, 4, 2, "softmax", False, None, True, 1.0), INTERP),
        ("mixtral_tiny", (3, 16, 8, 4, 2, "softmax", False, None, True, 1.0), INTERP),
        ("qwen_norenorm", (9, 32, 24, 8, 3, "softmax", False, None, False, 1.0), frozenset()),
        ("dsv3_tiny", (5, 16, 8, 8, 2, "sigmoid", True, (4, 2), True, 2.5), INTERP),
        ("dsv3", (33, 64, 48, 16, 4, "sigmoid", True, (4, 2), True, 2.5), frozenset()),
        ("sigmoid_nogroup", (17, 48, 40, 6, 1, "sigmoid", False, None, False, 1.0), frozenset()),
        ("mixtral", (64, 128, 96, 8, 2, "softmax", False, None, True, 1.0), frozenset()),
    ]
    return [OpCase("fused_moe", name, make(*spec), tags=tags) for name, spec, tags in specs]


def sample_cases() -> list[OpCase]:
    def make(batch: int, vocab: int, mode: str):
        def build(dtype, device, gen):
            logits = randn(gen, (batch, vocab), torch.float32, device, 3.0)
            temperature = torch.rand(batch, generator=gen) * 1.5 + 0.1
            top_k = torch.zeros(batch, dtype=torch.int64)
            top_p = torch.ones(batch)
            min_p = torch.zeros(batch)
            if mode in ("greedy", "mixed"):
                temperature[::2] = 0.0
            if mode in ("filters", "mixed"):
                top_k = torch.randint(-1, max(vocab // 2, 2), (batch,), generator=gen)
                top_p = torch.rand(batch, generator=gen) * 0.9 + 0.1
                min_p = torch.rand(batch, generator=gen) * 0.2
            seeds = torch.randint(-2**62, 2**62, (batch,), generator=gen)
            steps = torch.randint(0, 2**40, (batch,), generator=gen)
            tensors = (logits, temperature, top_k, top_p, min_p, seeds, steps)
            return tuple(t.to(device) for t in tensors), {}
        return build

    specs = [(0, 16, "plain", INTERP), (3, 16, "plain", INTERP), (4, 37, "mixed", INTERP),
             (5, 1000, "greedy", frozenset()), (7, 1000, "filters", frozenset()),
             (16, 4099, "mixed", frozenset())]
    return [OpCase("sample", f"B{b}_V{v}_{m}", make(b, v, m), dtypes=FLOAT32, tags=t)
            for b, v, m, t in specs]


def apply_token_bitmask_cases() -> list[OpCase]:
    def make(batch: int, vocab: int, extra_words: int, rows: int | None, index_dtype):
        def build(dtype, device, gen):
            logits = randn(gen, (batch, vocab), dtype, device)
            words = -(-vocab // 32) + extra_words
            bitmask = randint(gen, -2**31, 2**31, (batch, words), torch.int32, device)
            indices = None
            if rows is not None:
                indices = torch.randperm(batch, generator=gen)[:rows].to(index_dtype).to(device)
            return (logits, bitmask, indices), {}
        return build

    specs = [(0, 32, 0, None, torch.int32, INTERP), (3, 40, 0, None, torch.int32, INTERP),
             (4, 33, 1, 2, torch.int64, INTERP), (5, 1000, 0, None, torch.int32, frozenset()),
             (8, 4097, 2, 3, torch.int32, frozenset()), (16, 49152, 0, 16, torch.int64,
                                                          frozenset())]
    return [OpCase("apply_token_bitmask", f"B{b}_V{v}_x{x}_rows{r}", make(b, v, x, r, i), tags=t)
            for b, v, x, r, i, t in specs]


def other_cases() -> dict[str, list[OpCase]]:
    """Cases of fused_moe, sample and apply_token_bitmask, by op name."""
    return {"fused_moe": fused_moe_cases(), "sample": sample_cases(),
            "apply_token_bitmask": apply_token_bitmask_cases()}

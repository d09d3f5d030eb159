# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Cases for the per-token ops: linear, rms_norm, rotary_embedding, silu_and_mul,
store_kv_cache. Cases named `_bi` pass `batch_invariant=True`."""

from __future__ import annotations

import torch

from deepinfer_kernels.ops.rope_cache import build_rope_cache
from deepinfer_kernels.testing.case import OpCase, randn, randperm

INTERP = frozenset({"interp"})


def _bi(invariant: bool) -> dict:
    return {"batch_invariant": True} if invariant else {}


def linear_cases() -> list[OpCase]:
    def make(tokens: int, k: int, n: int, bias: bool, invariant: bool):
        def build(dtype, device, gen):
            x = randn(gen, (tokens, k), dtype, device)
            weight = randn(gen, (n, k), dtype, device, k ** -0.5)
            b = randn(gen, (n,), dtype, device, 0.1) if bias else None
            return (x, weight, b), _bi(invariant)
        return build

    # (T, K, N, bias, batch_invariant): K % 8 tails, N not a multiple of any tile, T = 0 and 1.
    shapes = [(0, 16, 8, True, True), (1, 16, 8, False, True), (3, 20, 7, True, True),
              (5, 33, 13, True, False), (9, 576, 192, False, True), (33, 1000, 65, True, True),
              (64, 130, 70, True, True)]
    return [OpCase("linear", f"T{t}_K{k}_N{n}{'_bias' if b else ''}{'_bi' if bi else ''}",
                   make(t, k, n, b, bi), tags=INTERP if t <= 5 and k <= 33 else frozenset())
            for t, k, n, b, bi in shapes]


def rms_norm_cases() -> list[OpCase]:
    def make(tokens: int, hidden: int, residual: bool, invariant: bool):
        def build(dtype, device, gen):
            x = randn(gen, (tokens, hidden), dtype, device)
            weight = randn(gen, (hidden,), dtype, device, 0.5) + 1
            res = randn(gen, (tokens, hidden), dtype, device) if residual else None
            return (x, weight, 1e-6, res), _bi(invariant)
        return build

    shapes = [(0, 16, True, False), (3, 32, False, False), (3, 32, True, False),
              (1, 64, False, False), (7, 96, True, False), (33, 1000, False, False),
              (33, 1000, True, False), (5, 4096, True, False), (3, 32, True, True),
              (1, 100, False, True), (33, 1000, True, True)]
    return [OpCase("rms_norm", f"T{t}_H{h}{'_res' if r else ''}{'_bi' if bi else ''}",
                   make(t, h, r, bi), tags=INTERP if t <= 3 and h <= 32 else frozenset())
            for t, h, r, bi in shapes]


def rotary_embedding_cases() -> list[OpCase]:
    def make(tokens: int, hq: int, hk: int, head: int, rot: int, neox: bool):
        def build(dtype, device, gen):
            positions = torch.randint(0, 64, (tokens,), generator=gen).to(device)
            q = randn(gen, (tokens, hq, head), dtype, device)
            k = randn(gen, (tokens, hk, head), dtype, device)
            cos_sin = build_rope_cache(rot, 64, 10000.0, None, torch.float32, device)
            return (positions, q, k, cos_sin, neox), {}
        return build

    shapes = [(0, 2, 1, 16, 16, True), (3, 2, 1, 16, 16, True), (3, 2, 1, 16, 16, False),
              (3, 2, 2, 24, 8, True), (5, 4, 2, 64, 64, False), (5, 4, 2, 80, 32, True),
              (17, 8, 8, 128, 128, True), (17, 8, 2, 128, 64, False)]
    cases = [OpCase("rotary_embedding", f"T{t}_Hq{a}_Hk{b}_D{d}_R{r}_{'neox' if n else 'gptj'}",
                    make(t, a, b, d, r, n), tags=INTERP if t <= 3 else frozenset())
             for t, a, b, d, r, n in shapes]

    def make_normed(tokens: int, hq: int, hk: int, head: int, rot: int, neox: bool):
        def build(dtype, device, gen):
            (positions, q, k, cos_sin, is_neox), _ = make(tokens, hq, hk, head, rot, neox)(dtype, device, gen)
            weights = {name: (1.0 + 0.5 * randn(gen, (head,), dtype, device)) for name in ("q_norm_weight",
                                                                                        "k_norm_weight")}
            # q/k as views of a fused qkv row (the engine's layout): strided, not contiguous.
            qkv = randn(gen, (tokens, (hq + 2 * hk) * head), dtype, device)
            q = qkv[:, : hq * head].view(tokens, hq, head)
            k = qkv[:, hq * head: (hq + hk) * head].view(tokens, hk, head)
            return (positions, q, k, cos_sin, is_neox), {**weights, "norm_eps": 1e-6}
        return build

    normed = [(0, 2, 1, 16, 16, True), (3, 2, 1, 16, 16, True), (3, 4, 2, 32, 32, False),
              (9, 16, 8, 128, 128, True), (3, 2, 2, 24, 8, True)]   # the last: partial rotary
    cases += [OpCase("rotary_embedding", f"T{t}_Hq{a}_Hk{b}_D{d}_R{r}_{'neox' if n else 'gptj'}_qknorm",
                     make_normed(t, a, b, d, r, n), tags=INTERP if t <= 3 else frozenset())
              for t, a, b, d, r, n in normed]
    return cases


def silu_and_mul_cases() -> list[OpCase]:
    def make(tokens: int, inter: int):
        def build(dtype, device, gen):
            return (randn(gen, (tokens, 2 * inter), dtype, device, 2.0),), {}
        return build

    shapes = [(0, 8), (3, 8), (1, 11), (13, 344), (64, 1536)]
    return [OpCase("silu_and_mul", f"T{t}_I{i}", make(t, i),
                   tags=INTERP if t <= 3 and i <= 11 else frozenset()) for t, i in shapes]


def store_kv_cache_cases() -> list[OpCase]:
    def make(tokens: int, blocks: int, block_size: int, heads: int, head: int, padded: int):
        def build(dtype, device, gen):
            k = randn(gen, (tokens, heads, head), dtype, device)
            v = randn(gen, (tokens, heads, head), dtype, device)
            k_cache = randn(gen, (blocks, block_size, heads, head), dtype, device)
            v_cache = randn(gen, (blocks, block_size, heads, head), dtype, device)
            slots = randperm(gen, blocks * block_size, device)[:tokens].clone()
            slots[:padded] = -1
            return (k, v, k_cache, v_cache, slots), {}
        return build

    shapes = [(0, 2, 4, 1, 8, 0), (3, 2, 4, 1, 8, 1), (5, 3, 16, 2, 64, 0),
              (19, 8, 16, 3, 80, 4), (64, 16, 16, 8, 128, 7)]
    return [OpCase("store_kv_cache", f"T{t}_N{n}_S{s}_Hk{h}_D{d}_pad{p}", make(t, n, s, h, d, p),
                   tags=INTERP if t <= 3 else frozenset()) for t, n, s, h, d, p in shapes]


def layer_cases() -> dict[str, list[OpCase]]:
    """Cases of the per-token ops, by op name."""
    return {"linear": linear_cases(), "rms_norm": rms_norm_cases(),
            "rotary_embedding": rotary_embedding_cases(),
            "silu_and_mul": silu_and_mul_cases(), "store_kv_cache": store_kv_cache_cases()}

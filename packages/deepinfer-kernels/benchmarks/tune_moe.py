# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sweep of the triton fused_moe launch configurations, kernel-only (CUDA-graph replay).

    python packages/deepinfer-kernels/benchmarks/tune_moe.py [--quick] [--json out.json]

For MoE shapes of an OLMoE-like layer (E=64, top-8, H=2048, I=1024) and a Mixtral-like one
(E=8, top-2, H=2048, I=768, bf16) at several T, times the whole op for every `MoeConfig` of a
grid (configurations that do not fit the GPU are skipped), checks each output against the
`reference` backend (relative L2 error), and prints per shape the best configurations, the
bucket `moe.pick_config` chooses today (with the time of each step: routing, align, the two
GEMMs, combine), and dense cuBLAS GEMMs of the same FLOPs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch

from deepinfer_kernels import ops
from deepinfer_kernels.backends.triton import moe
from deepinfer_kernels.backends.triton.moe_routing import align_by_expert, select_experts

sys.path.insert(0, str(Path(__file__).parent))
from bench_ops import time_graph  # noqa: E402

SHAPES = [(64, 8, 1024), (8, 2, 768)]          # experts, top_k, inter (H = 2048)
HIDDEN = 2048


def grid(quick: bool) -> list[moe.MoeConfig]:
    if quick:
        return [cfg for _, cfg in moe.CONFIGS] + [moe.FIXED_CONFIG]
    return [moe.MoeConfig(m, n, k, 8, w, s) for m, n, k, w, s in
            itertools.product((16, 32, 64, 128), (64, 128), (64, 128), (4, 8), (3, 4))]


def inputs(tokens: int, experts: int, top_k: int, inter: int) -> tuple:
    x = torch.randn(tokens, HIDDEN, dtype=torch.bfloat16, device="cuda")
    logits = torch.randn(tokens, experts, device="cuda")
    w13 = torch.randn(experts, 2 * inter, HIDDEN, dtype=torch.bfloat16, device="cuda") * 0.02
    w2 = torch.randn(experts, HIDDEN, inter, dtype=torch.bfloat16, device="cuda") * 0.02
    return (x, logits, w13, w2, top_k, "softmax", None, None, None, True, 1.0)


def dense_us(tokens: int, top_k: int, inter: int) -> float:
    rows = tokens * top_k
    a = torch.randn(rows, HIDDEN, dtype=torch.bfloat16, device="cuda")
    b13 = torch.randn(HIDDEN, 2 * inter, dtype=torch.bfloat16, device="cuda")
    act = torch.randn(rows, inter, dtype=torch.bfloat16, device="cuda")
    b2 = torch.randn(inter, HIDDEN, dtype=torch.bfloat16, device="cuda")
    return time_graph([lambda: (a @ b13, act @ b2)], calls=20)


def stages(work: tuple, cfg: moe.MoeConfig) -> str:
    """Graph time of each step of the op for one configuration."""
    x, logits, w13, w2, top_k, *routing = work
    weights, ids = select_experts(logits, top_k, *routing)
    sorted_pairs, tiles = align_by_expert(ids, w13.shape[0], cfg.block_m)
    act = moe.gate_up(x, w13, sorted_pairs, tiles, top_k, cfg)
    parts = moe.down(act, w2, sorted_pairs, tiles, weights, cfg)
    steps = {
        "route": lambda: select_experts(logits, top_k, *routing),
        "align": lambda: align_by_expert(ids, w13.shape[0], cfg.block_m),
        "gate_up": lambda: moe.gate_up(x, w13, sorted_pairs, tiles, top_k, cfg),
        "down": lambda: moe.down(act, w2, sorted_pairs, tiles, weights, cfg),
        "combine": lambda: moe.combine(parts, top_k),
    }
    return ", ".join(f"{name} {time_graph([fn], calls=10, repeats=5):.1f}"
                     for name, fn in steps.items())


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the configured buckets")
    parser.add_argument("--tokens", default="16,64,256,1024,4096")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    results = []
    for (experts, top_k, inter), tokens in itertools.product(
            SHAPES, [int(t) for t in args.tokens.split(",")]):
        work = inputs(tokens, experts, top_k, inter)
        ref = ops.fused_moe(*work, backend="reference")
        flops = 6 * tokens * top_k * HIDDEN * inter
        dense = dense_us(tokens, top_k, inter)
        picked = moe.pick_config(tokens, top_k, experts, torch.device("cuda"))
        timed = []
        for cfg in grid(args.quick):
            try:
                err = rel_err(moe.fused_moe(*work, config=cfg), ref)
                us = time_graph([lambda cfg=cfg: moe.fused_moe(*work, config=cfg)], calls=10,
                                repeats=5)
            except Exception as exc:                 # noqa: BLE001 (out of shared memory)
                print(f"  skip {cfg}: {type(exc).__name__}", file=sys.stderr)
                continue
            timed.append((us, err, cfg))
        timed.sort(key=lambda r: r[0])
        picked_us = next((us for us, _, cfg in timed if cfg == picked), float("nan"))
        print(f"E{experts} k{top_k} I{inter} T{tokens}: dense {dense:.1f} us "
              f"({flops / dense / 1e6:.0f} TFLOP/s); picked {picked} {picked_us:.1f} us "
              f"(x{picked_us / dense:.2f} dense)")
        print(f"  steps of the picked config (us): {stages(work, picked)}")
        for us, err, cfg in timed[:4]:
            print(f"  {us:8.1f} us {flops / us / 1e6:6.0f} TFLOP/s  x{us / dense:.2f}  "
                  f"err {err:.1e}  {cfg}")
        results.append({"experts": experts, "top_k": top_k, "inter": inter, "tokens": tokens,
                        "dense_us": dense, "picked_us": picked_us,
                        "timed": [(us, err, vars(cfg)) for us, err, cfg in timed]})
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

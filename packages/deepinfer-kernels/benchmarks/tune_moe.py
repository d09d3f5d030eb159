# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sweep of the triton fused_moe launch configurations, kernel-only (CUDA-graph replay).

    python packages/deepinfer-kernels/benchmarks/tune_moe.py [--quick] [--json out.json]
    python packages/deepinfer-kernels/benchmarks/tune_moe.py --per-gemm [--max-configs N]
        [--tokens 256,1024,4096] [--json out.json] [--count]

For MoE shapes of an OLMoE-like layer (E=64, top-8, H=2048, I=1024) and a Mixtral-like one
(E=8, top-2, H=2048, I=768, bf16) at several T, times the whole op for every `MoeConfig` of a
grid (configurations that do not fit the GPU are skipped), checks each output against the
`reference` backend (relative L2 error), and prints per shape the best configurations, the
bucket `moe.pick_config` chooses today (with the time of each step: routing, align, the two
GEMMs, combine), and dense cuBLAS GEMMs of the same FLOPs.

`--per-gemm` sweeps the gate/up and the down GEMM separately (see `per_gemm_main`): per shape,
T and block_m the 3 fastest correct configurations of each, the routing and align times, and
the dense cuBLAS time of each GEMM. `--count` only prints the grid sizes and a duration estimate.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import replace
import sys
import time
from collections import Counter
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
    if quick:   # the buckets, each also without split tiles, with TMA loads, with TMA loads of
        # gathered inputs; the batch-invariant one
        buckets = [cfg for _, cfg in moe.CONFIGS]
        return (buckets + [replace(cfg, split_tiles=False) for cfg in buckets]
                + [replace(cfg, tma=True) for cfg in buckets]
                + [replace(cfg, tma=True, gather_x=True) for cfg in buckets]
                + [replace(cfg, tma=True, gather_x=True, num_stages=cfg.num_stages + 1) for cfg in buckets]
                + [replace(cfg, tma=True, num_stages=cfg.num_stages + 1) for cfg in buckets]
                + [moe.FIXED_CONFIG])
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


# --- --per-gemm: the two grouped GEMMs swept separately -----------------------------------

GEMM_BLOCK_M = (64, 128)
SMEM_LIMIT = 232448          # bytes of shared memory one H100/H200 program may use (227 KB)
ACC_PER_THREAD = 128         # fp32 accumulator values per thread beyond which registers spill
COMPILE_S, RUN_S = 2.0, 0.15  # estimates: Triton compile on a slow host, one time_graph


def gemm_fits(gemm: str, cfg: moe.MoeConfig) -> bool:
    """Whether a bf16 config fits: the pipelined loads (num_stages copies of an A tile and one
    (down) or two (gate/up) weight tiles) within SMEM_LIMIT, the accumulators (one or two
    [BLOCK_M, BLOCK_N] fp32) within ACC_PER_THREAD per thread (measured with ptxas for sm_90a:
    256 per thread spills)."""
    weights = 2 if gemm == "gate_up" else 1
    smem = cfg.num_stages * (cfg.block_m + weights * cfg.block_n) * cfg.block_k * 2
    acc = weights * cfg.block_m * cfg.block_n // (32 * cfg.num_warps)
    return smem <= SMEM_LIMIT and acc <= ACC_PER_THREAD


TMA_MODES = {"off": (False,), "on": (True,), "both": (False, True)}


def gemm_grid(gemm: str, block_m: int, max_configs: int, tma: str = "off"
              ) -> tuple[list[moe.MoeConfig], int]:
    """(configs, number pruned by `gemm_fits`); with max_configs > 0, an evenly spaced subset.
    `tma`: "off", "on" (TMA loads; the gate/up GEMM of gathered inputs) or "both"."""
    every = [moe.MoeConfig(block_m, n, k, 8, w, s, tma=t, gather_x=t and gemm == "gate_up")
             for t, n, k, w, s in
             itertools.product(TMA_MODES[tma], (64, 128, 256), (64, 128), (4, 8), (3, 4, 5))]
    fits = [cfg for cfg in every if gemm_fits(gemm, cfg)]
    pruned = len(every) - len(fits)
    if 0 < max_configs < len(fits):
        step = len(fits) / max_configs
        fits = [fits[int(i * step)] for i in range(max_configs)]
    return fits, pruned


def short(cfg: moe.MoeConfig) -> str:
    tma = ("g" if cfg.gather_x else "t") if cfg.tma else ""
    return f"n{cfg.block_n}k{cfg.block_k}w{cfg.num_warps}s{cfg.num_stages}{tma}"


def gemm_references(work: tuple, weights: torch.Tensor, ids: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (token, slot) pair p, in float32: act[p] = silu(x Wg^T) * (x Wu^T) and
    parts[p] = weight[p] * (bf16(act[p]) W2^T), for expert ids[p]."""
    x, _, w13, w2, top_k, *_ = work
    flat = ids.flatten().long()
    act = torch.empty(flat.numel(), w2.shape[2], device=x.device)
    parts = torch.empty(flat.numel(), w2.shape[1], device=x.device)
    for e in range(w13.shape[0]):
        pairs = (flat == e).nonzero().squeeze(1)
        gate, up = (x[pairs // top_k].float() @ w13[e].float().t()).chunk(2, dim=-1)
        act[pairs] = torch.nn.functional.silu(gate) * up
        y = act[pairs].to(x.dtype).float() @ w2[e].float().t()
        parts[pairs] = y * weights.flatten()[pairs, None]
    return act, parts


def sweep_gemm(configs: list[moe.MoeConfig], run, check) -> tuple[list, list, list]:
    """(timed [(us, err, cfg)] fastest first, failed [(cfg, error)], wrong [(us, err, cfg)]):
    `run(cfg)` launches the GEMM, `check(out)` its relative L2 error (wrong if >= 2e-2).
    A config that fails to compile or launch (shared memory, registers) is counted as failed."""
    timed, failed, wrong = [], [], []
    for cfg in configs:
        try:
            err = check(run(cfg))
            us = time_graph([lambda cfg=cfg: run(cfg)], calls=10, repeats=5)
        except Exception as exc:                     # noqa: BLE001 (compile, resources)
            failed.append((cfg, f"{type(exc).__name__}: {str(exc)[:120]}"))
            continue
        (timed if err < 2e-2 else wrong).append((us, err, cfg))
    timed.sort(key=lambda r: r[0])
    return timed, failed, wrong


def dense_parts_us(tokens: int, top_k: int, inter: int) -> tuple[float, float]:
    """cuBLAS [T * top_k, H] x [H, 2I] and [T * top_k, I] x [I, H] (same FLOPs per GEMM)."""
    rows = tokens * top_k
    a = torch.randn(rows, HIDDEN, dtype=torch.bfloat16, device="cuda")
    b13 = torch.randn(HIDDEN, 2 * inter, dtype=torch.bfloat16, device="cuda")
    act = torch.randn(rows, inter, dtype=torch.bfloat16, device="cuda")
    b2 = torch.randn(inter, HIDDEN, dtype=torch.bfloat16, device="cuda")
    return (time_graph([lambda: a @ b13], calls=20), time_graph([lambda: act @ b2], calls=20))


def per_gemm_block(work, weights, ids, refs, block_m: int, max_configs: int, tma: str = "off") -> dict:
    """One block_m: align, then each GEMM's sweep (down fed the reference activations)."""
    x, _, w13, w2, top_k, *_ = work
    experts, pairs = w13.shape[0], ids.numel()
    sorted_pairs, tiles = align_by_expert(ids, experts, block_m)
    align = time_graph([lambda: align_by_expert(ids, experts, block_m)], calls=10, repeats=5)
    real = (tiles < experts).repeat_interleave(block_m) & (sorted_pairs < pairs)
    rows = real.nonzero().squeeze(1)
    row_pairs = sorted_pairs[rows].long()
    act_ref, parts_ref = refs
    act_in = torch.zeros(sorted_pairs.numel(), act_ref.shape[1], dtype=x.dtype, device=x.device)
    act_in[rows] = act_ref[row_pairs].to(x.dtype)
    result = {"block_m": block_m, "align_us": align}
    gemms = {
        "gate_up": (lambda cfg: moe.gate_up(x, w13, sorted_pairs, tiles, top_k, cfg),
                    lambda out: rel_err(out[rows].float(), act_ref[row_pairs])),
        "down": (lambda cfg: moe.down(act_in, w2, sorted_pairs, tiles, weights, cfg),
                 lambda out: rel_err(out.float(), parts_ref)),
    }
    for gemm, (run, check) in gemms.items():
        configs, pruned = gemm_grid(gemm, block_m, max_configs, tma)
        timed, failed, wrong = sweep_gemm(configs, run, check)
        result[gemm] = {"timed": timed, "failed": failed, "wrong": wrong, "pruned": pruned}
        torch.cuda.empty_cache()
    return result


def print_block(res: dict, dense: tuple[float, float]) -> None:
    counts = ", ".join(f"{g} {len(res[g]['timed'])} ok {len(res[g]['failed'])} failed "
                       f"{len(res[g]['wrong'])} WRONG" for g in ("gate_up", "down"))
    print(f"  m{res['block_m']}: align {res['align_us']:.1f} us; {counts}")
    for gemm, ref_us in zip(("gate_up", "down"), dense):
        best = " | ".join(f"{us:.1f} {short(cfg)}" for us, _, cfg in res[gemm]["timed"][:3])
        ratio = res[gemm]["timed"][0][0] / ref_us if res[gemm]["timed"] else float("nan")
        print(f"    {gemm:7s} x{ratio:.2f} dense: {best}")
        for us, err, cfg in res[gemm]["wrong"]:
            print(f"    WRONG {gemm} {short(cfg)}: rel err {err:.1e} ({us:.1f} us)")
        kinds = Counter(why.split(":")[0] for _, why in res[gemm]["failed"])
        if kinds:
            print(f"    {gemm} failed: " + ", ".join(f"{k} x{n}" for k, n in kinds.items()))


def suggestion(blocks: list[dict]) -> str:
    """The block_m whose align + best gate/up + best down is smallest, as a MoeConfig."""
    done = [b for b in blocks if b["gate_up"]["timed"] and b["down"]["timed"]]
    if not done:
        return "none (no block_m has a correct config of both GEMMs)"
    best = min(done, key=lambda b: b["align_us"] + b["gate_up"]["timed"][0][0]
               + b["down"]["timed"][0][0])
    up, dn = best["gate_up"]["timed"][0][2], best["down"]["timed"][0][2]
    total = best["align_us"] + best["gate_up"]["timed"][0][0] + best["down"]["timed"][0][0]
    return (f"{total:.1f} us align+GEMMs: MoeConfig({up.block_m}, {up.block_n}, {up.block_k}, "
            f"8, {up.num_warps}, {up.num_stages}, down=({dn.block_n}, {dn.block_k}, "
            f"{dn.num_warps}, {dn.num_stages})) [gate_up {short(up)}, down {short(dn)}]")


def count_estimate(shapes: list, token_list: list[int], max_configs: int, tma: str = "off") -> str:
    """Grid sizes and a duration estimate (compiles once per config, runs per shape and T)."""
    sizes = {(g, m): gemm_grid(g, m, max_configs, tma) for g in ("gate_up", "down")
             for m in GEMM_BLOCK_M}
    configs = sum(len(c) for c, _ in sizes.values())
    pruned = sum(p for _, p in sizes.values())
    runs = configs * len(shapes) * len(token_list)
    minutes = (configs * COMPILE_S + runs * RUN_S) / 60 + 0.3
    per = ", ".join(f"{g} m{m} {len(c)}" for (g, m), (c, _) in sizes.items())
    return (f"per-gemm grid: {per} ({pruned} pruned: shared memory or register spills); "
            f"{configs} compiles + {runs} timed runs: ~{minutes:.1f} min")


def per_gemm_main(shapes: list, token_list: list[int], max_configs: int, json_path: str,
                  count_only: bool, tma: str = "off") -> None:
    """Per shape and T: routing time and dense cuBLAS time of each GEMM; per block_m the align
    time, then the 3 fastest correct configs of each GEMM (us, `nBLOCK_N kBLOCK_K wWARPS
    sSTAGES`), every WRONG one (relative L2 error >= 2e-2 against float32 torch) and the
    failure kinds; then the block_m with the smallest align + GEMM sum as a MoeConfig.
    `json_path` (rewritten after each shape and T): every timing."""
    print(count_estimate(shapes, token_list, max_configs, tma), flush=True)
    if count_only:
        return
    start, results = time.time(), []
    for (experts, top_k, inter), tokens in itertools.product(shapes, token_list):
        work = inputs(tokens, experts, top_k, inter)
        logits, routing = work[1], work[5:]
        weights, ids = select_experts(logits, top_k, *routing)
        route = time_graph([lambda: select_experts(logits, top_k, *routing)], calls=10,
                           repeats=5)
        dense = dense_parts_us(tokens, top_k, inter)
        refs = gemm_references(work, weights, ids)
        print(f"E{experts} k{top_k} I{inter} T{tokens}: route {route:.1f} us; dense gate_up "
              f"{dense[0]:.1f} down {dense[1]:.1f} us", flush=True)
        blocks = []
        for block_m in GEMM_BLOCK_M:
            blocks.append(per_gemm_block(work, weights, ids, refs, block_m, max_configs, tma))
            print_block(blocks[-1], dense)
        print(f"  best: {suggestion(blocks)}  [{time.time() - start:.0f} s]", flush=True)
        results.append({"experts": experts, "top_k": top_k, "inter": inter, "tokens": tokens,
                        "route_us": route, "dense_gate_up_us": dense[0],
                        "dense_down_us": dense[1], "blocks": [jsonable(b) for b in blocks]})
        del work, refs
        torch.cuda.empty_cache()
        if json_path:
            with open(json_path, "w") as f:
                json.dump(results, f, indent=1)


def jsonable(block: dict) -> dict:
    out = {"block_m": block["block_m"], "align_us": block["align_us"]}
    for gemm in ("gate_up", "down"):
        res = block[gemm]
        out[gemm] = {"timed": [(us, err, short(cfg)) for us, err, cfg in res["timed"]],
                     "wrong": [(us, err, short(cfg)) for us, err, cfg in res["wrong"]],
                     "failed": [(short(cfg), why) for cfg, why in res["failed"]],
                     "pruned": res["pruned"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the configured buckets")
    parser.add_argument("--per-gemm", action="store_true",
                        help="sweep the gate/up and down GEMMs separately")
    parser.add_argument("--max-configs", type=int, default=0,
                        help="--per-gemm: at most this many configurations per GEMM and block_m")
    parser.add_argument("--count", action="store_true",
                        help="--per-gemm: print the grid sizes and estimated duration only")
    parser.add_argument("--tokens", default="", help="default 16,64,256,1024,4096; "
                        "256,1024,4096 with --per-gemm")
    parser.add_argument("--tma", choices=sorted(TMA_MODES), default="off",
                        help="--per-gemm: TMA variants to sweep (suffix t; g: gate/up of gathered inputs)")
    parser.add_argument("--shapes", default="", help="experts:top_k:inter,... (default all)")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split(":")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    if args.per_gemm:
        per_gemm_main(shapes, [int(t) for t in (args.tokens or "256,1024,4096").split(",")],
                      args.max_configs, args.json, args.count, args.tma)
        return
    results = []
    for (experts, top_k, inter), tokens in itertools.product(
            shapes, [int(t) for t in (args.tokens or "16,64,256,1024,4096").split(",")]):
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

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton fused mixture-of-experts (see `deepinfer_kernels.ops.fused_moe`).

Four steps, all on the device, none synchronising with the host:
  1. routing (`moe_routing.select_experts`): [T, top_k] weights and expert ids;
  2. `moe_routing.align_by_expert`: the T * top_k (token, slot) pairs sorted by expert, each
     expert's segment padded to BLOCK_M rows, so one GEMM tile belongs to one expert;
  3. two grouped GEMMs over those tiles (`moe_gemm`): gate/up with SiLU-and-multiply fused in the epilogue
     (`act = silu(x Wg^T) * (x Wu^T)`, rounded to the input dtype like the reference), then
     down with the routing weight multiplied in (float32), one row per pair in the input dtype;
  4. a combine that adds each token's top_k rows in slot order in float32 (fixed order, no
     atomics), so the result is deterministic and a token's output does not depend on the other
     tokens. For 16-bit inputs the per-pair rows are rounded once more than in the reference
     (which adds in float32 and rounds once): within the suite's bf16/fp16 tolerances, and it
     halves the traffic of the largest intermediate.
Steps 3's tiles are ordered in groups of GROUP_M row tiles (as in Triton's matmul tutorial) so
that tiles of one expert run together and share its weight tiles through the L2 cache.

Launch configurations are chosen by the expected rows per expert, `T * top_k / E` (see
`CONFIGS`); the down GEMM may have its own block_n, block_k, num_warps and num_stages
(`MoeConfig.down`), block_m and group_m are shared (block_m fixes the layout of step 2).
A token's result can differ in the last bits between configurations (another tile shape may
use another MMA instruction); `batch_invariant=True` uses one fixed configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.moe_gemm import down, gate_up
from deepinfer_kernels.backends.triton.moe_routing import align_by_expert, select_experts


@dataclass(frozen=True)
class MoeConfig:
    """Launch parameters of the two grouped GEMMs.

    Attributes:
        block_m: rows (token, slot pairs) per tile, both GEMMs; each expert's segment is
            padded to it (the layout of `align_by_expert`).
        block_n: output columns per tile (gate/up GEMM; also down when `down` is None).
        block_k: reduction step (same).
        group_m: row tiles that share a column tile before moving on (L2 reuse), both GEMMs.
        num_warps: warps per program (gate/up; also down when `down` is None).
        num_stages: software-pipeline depth of the reduction loop (same).
        down: (block_n, block_k, num_warps, num_stages) of the down GEMM, or None for the
            gate/up values.
        split_tiles: a tile whose second half is padding computes only its first half (see
            `moe_gemm`; needs block_m >= 32). Not batch invariant, so `FIXED_CONFIG` is False.
        tma: load weight tiles, and the down GEMM's activation tiles, through TMA descriptors
            where the layout allows it (Hopper and newer; `moe_gemm._weight_operand`);
            elsewhere (the interpreter emulates TMA; an older GPU does not have it) pointer loads.
        gather_x: with `tma`, gather the input rows into the sorted layout first (one
            `index_select`, T * top_k rows plus padding) so the gate/up GEMM loads them through
            TMA too, instead of gathering them tile by tile.
    """

    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int
    down: tuple[int, int, int, int] | None = None
    split_tiles: bool = True
    tma: bool = False
    gather_x: bool = False

    def __post_init__(self) -> None:
        tiles = {"block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k}
        if self.down is not None:
            if len(self.down) != 4:
                raise ValueError(f"down: need (block_n, block_k, num_warps, num_stages), got {self.down}")
            tiles.update({"down block_n": self.down[0], "down block_k": self.down[1]})
        for name, value in tiles.items():
            if not isinstance(value, int) or value < 16 or value & (value - 1):
                raise ValueError(f"{name}: must be a power of two >= 16, got {value}")
        warps = [("num_warps", self.num_warps)] + ([("down num_warps", self.down[2])] if self.down else [])
        for name, value in warps:
            if value not in (1, 2, 4, 8, 16):
                raise ValueError(f"{name}: must be 1, 2, 4, 8 or 16, got {value}")
        stages = [("num_stages", self.num_stages)] + ([("down num_stages", self.down[3])] if self.down else [])
        for name, value in stages + [("group_m", self.group_m)]:
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {value}")

    def down_gemm(self) -> MoeConfig:
        """The down GEMM's parameters as a config of their own (`down` None)."""
        if self.down is None:
            return self
        block_n, block_k, num_warps, num_stages = self.down
        return replace(self, block_n=block_n, block_k=block_k, num_warps=num_warps,
                       num_stages=num_stages, down=None)


CONFIGS: tuple[tuple[float, MoeConfig], ...] = (
    (8.0, MoeConfig(16, 64, 128, 8, 4, 4)),         # decode: streams the weights
    (64.0, MoeConfig(64, 64, 64, 8, 4, 4)),
    (float("inf"), MoeConfig(128, 128, 64, 8, 8, 4, down=(256, 64, 8, 4), tma=True)),
)
"""(largest expected rows per expert `T * top_k / E`, config) buckets, first match wins.
From benchmarks/tune_moe.py on an H200 (bf16, E=64 top-8 and E=8 top-2, H=2048): each is
the best of a 64-configuration grid at T = 16, 256, 1024 and 4096, or within 2% of it.
float32 runs halve block_k (`for_dtype`): the tiles above would not fit in shared memory.
The last bucket's `down` is the best down GEMM of `tune_moe.py --per-gemm` at T = 1024 and 4096
(E=64, block_m 128; H200, 2026-11-30: 282 us against 308 us with the gate/up parameters). It
loads through TMA (`tma`; `tune_moe.py --quick`, H200, same run: E=64 top-8 T=4096 828.7 against
914.6 us without, T=1024 319.2 against 326.1; E=8 top-2 T=4096 182.3 against 199.4), with a
4-stage gate/up pipeline (another run, E=64 T=4096: 761.7 against 806.4 us with 3 stages)."""

FIXED_CONFIG = MoeConfig(64, 64, 64, 8, 4, 4, split_tiles=False)
"""One configuration for every T, tiles never split: batch-invariant results (at some cost at
the extremes)."""

INTERPRETER_CONFIG = MoeConfig(16, 16, 16, 2, 1, 1)
"""Tiny tiles for the Triton interpreter on the CPU."""


def pick_config(tokens: int, top_k: int, num_experts: int, device: torch.device) -> MoeConfig:
    """The bucket of `CONFIGS` for `tokens * top_k / num_experts` rows per expert (CUDA), or
    `INTERPRETER_CONFIG` on other devices."""
    if device.type != "cuda":
        return INTERPRETER_CONFIG
    rows = tokens * top_k / num_experts
    return next(cfg for limit, cfg in CONFIGS if rows <= limit)


@triton.jit
def _combine_kernel(parts_ptr, out_ptr, hidden, out_stride, TOP_K: tl.constexpr,
                    BLOCK_H: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = h < hidden
    acc = tl.zeros([BLOCK_H], tl.float32)
    for j in tl.static_range(TOP_K):                 # slot order: fixed, batch invariant
        acc += tl.load(parts_ptr + (t * TOP_K + j) * hidden + h, mask=mask, other=0.0)
    tl.store(out_ptr + t * out_stride + h, acc.to(out_ptr.dtype.element_ty), mask=mask)


def for_dtype(cfg: MoeConfig, dtype: torch.dtype) -> MoeConfig:
    """float32 tiles take twice the shared memory: halve the reduction step, at most 3 stages
    (for both GEMMs)."""
    if dtype != torch.float32:
        return cfg
    down = cfg.down
    if down is not None:
        down = (down[0], max(16, down[1] // 2), down[2], min(down[3], 3))
    return replace(cfg, block_k=max(16, cfg.block_k // 2), num_stages=min(cfg.num_stages, 3),
                   down=down)


def combine(parts: torch.Tensor, top_k: int) -> torch.Tensor:
    """[T, H]: each token's top_k rows of `parts` added in slot order, in float32."""
    tokens, size = parts.shape[0] // top_k, parts.shape[1]
    out = torch.empty((tokens, size), dtype=parts.dtype, device=parts.device)
    block_h = min(1024, triton.next_power_of_2(size))
    _combine_kernel[(tokens, triton.cdiv(size, block_h))](
        parts, out, size, out.stride(0), TOP_K=top_k, BLOCK_H=block_h)
    return out


def grouped_swiglu(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor,
                   weights: torch.Tensor, ids: torch.Tensor, cfg: MoeConfig) -> torch.Tensor:
    """Steps 2-4 for given routing: [T, H] in `hidden.dtype`.

    Args:
        hidden: [T, H]; w13: [E, 2I, H]; w2: [E, H, I] (unit stride along H, H and I).
        weights: [T, top_k] float32 routing weights; ids: [T, top_k] int32 expert ids.
        cfg: Launch configuration (adapted to float32 by `for_dtype`).
    """
    cfg = for_dtype(cfg, hidden.dtype)
    sorted_pairs, tile_experts = align_by_expert(ids, w13.shape[0], cfg.block_m)
    act = gate_up(hidden, w13, sorted_pairs, tile_experts, ids.shape[1], cfg)
    parts = down(act, w2, sorted_pairs, tile_experts, weights, cfg)
    return combine(parts, ids.shape[1])


def fused_moe(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor,
              w2: torch.Tensor, top_k: int, scoring: str,
              e_score_correction_bias: torch.Tensor | None, n_group: int | None,
              topk_group: int | None, renormalize: bool, routed_scaling_factor: float, *,
              batch_invariant: bool = False, config: MoeConfig | None = None) -> torch.Tensor:
    """See `deepinfer_kernels.ops.fused_moe`.

    `batch_invariant=True` launches `FIXED_CONFIG` whatever T (on CUDA), so a token's output
    is bitwise the same in any batch; `config` overrides both choices (benchmarks, tests)."""
    tokens = hidden.shape[0]
    if tokens == 0:
        return torch.empty_like(hidden)
    weights, ids = select_experts(router_logits, top_k, scoring, e_score_correction_bias,
                                  n_group, topk_group, renormalize, routed_scaling_factor)
    if config is not None:
        cfg = config
    elif batch_invariant and hidden.device.type == "cuda":
        cfg = FIXED_CONFIG
    else:
        cfg = pick_config(tokens, top_k, w13.shape[0], hidden.device)
    return grouped_swiglu(hidden, w13, w2, weights, ids, cfg)

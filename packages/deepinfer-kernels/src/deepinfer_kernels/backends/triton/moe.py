# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton fused mixture-of-experts (see `deepinfer_kernels.ops.fused_moe`).

Four steps, all on the device, none synchronising with the host:
  1. routing (`moe_routing.select_experts`): [T, top_k] weights and expert ids;
  2. `moe_routing.align_by_expert`: the T * top_k (token, slot) pairs sorted by expert, each
     expert's segment padded to BLOCK_M rows, so one GEMM tile belongs to one expert;
  3. two grouped GEMMs over those tiles: gate/up with SiLU-and-multiply fused in the epilogue
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

from deepinfer_kernels.backends.triton.attention_common import dot_precision, upcast_dots
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
    """

    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int
    down: tuple[int, int, int, int] | None = None

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
    (float("inf"), MoeConfig(128, 128, 64, 8, 8, 3)),
)
"""(largest expected rows per expert `T * top_k / E`, config) buckets, first match wins.
From benchmarks/tune_moe.py on an H200 (bf16, E=64 top-8 and E=8 top-2, H=2048): each is
the best of a 64-configuration grid at T = 16, 256, 1024 and 4096, or within 2% of it.
float32 runs halve block_k (`for_dtype`): the tiles above would not fit in shared memory.
`down` is None in all of them (the down GEMM uses the gate/up parameters) until
`tune_moe.py --per-gemm` on a GPU finds better down parameters."""

FIXED_CONFIG = MoeConfig(64, 64, 64, 8, 4, 4)
"""One configuration for every T: batch-invariant results (at some cost at the extremes)."""

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
def _tile(pid, num_m, num_n, GROUP_M: tl.constexpr):
    """(row tile, column tile) of program `pid`: GROUP_M row tiles sweep each column tile."""
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    size = tl.minimum(num_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % size, (pid % per_group) // size


@triton.jit(do_not_specialize=["num_pairs", "num_experts", "top_k", "num_m"])
def _gate_up_kernel(x_ptr, w_ptr, act_ptr, pairs_ptr, tile_expert_ptr, num_pairs, num_experts,
                    top_k, hidden, inter, num_m, x_stride, w_stride_e, w_stride_n, act_stride,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, PRECISION: tl.constexpr,
                    UPCAST: tl.constexpr):
    pid_m, pid_n = _tile(tl.program_id(0), num_m, tl.cdiv(inter, BLOCK_N), GROUP_M)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    if expert >= num_experts:                         # a tile past the last expert's segment
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pair = tl.load(pairs_ptr + rows)
    row_ok = pair < num_pairs
    token = (pair // top_k).to(tl.int64)
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < inter
    k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + token[:, None] * x_stride + k[None, :]
    g_ptrs = w_ptr + expert * w_stride_e + n[None, :].to(tl.int64) * w_stride_n + k[:, None]
    u_ptrs = g_ptrs + inter * w_stride_n
    gate = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    up = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, hidden, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs, mask=row_ok[:, None], other=0.0)
            wg = tl.load(g_ptrs, mask=n_ok[None, :], other=0.0)
            wu = tl.load(u_ptrs, mask=n_ok[None, :], other=0.0)
        else:
            k_ok = k0 + k < hidden
            a = tl.load(x_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            wg = tl.load(g_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
            wu = tl.load(u_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if UPCAST:
            a, wg, wu = a.to(tl.float32), wg.to(tl.float32), wu.to(tl.float32)
        gate = tl.dot(a, wg, gate, input_precision=PRECISION)
        up = tl.dot(a, wu, up, input_precision=PRECISION)
        x_ptrs += BLOCK_K
        g_ptrs += BLOCK_K
        u_ptrs += BLOCK_K
    act = gate / (1.0 + tl.exp(-gate)) * up
    out = act_ptr + rows[:, None].to(tl.int64) * act_stride + n[None, :]
    tl.store(out, act.to(act_ptr.dtype.element_ty), mask=row_ok[:, None] & n_ok[None, :])


@triton.jit(do_not_specialize=["num_pairs", "num_experts", "num_m"])
def _down_kernel(act_ptr, w_ptr, out_ptr, pairs_ptr, tile_expert_ptr, weights_ptr, num_pairs,
                 num_experts, hidden, inter, num_m, act_stride, w_stride_e, w_stride_n,
                 out_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,
                 PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    pid_m, pid_n = _tile(tl.program_id(0), num_m, tl.cdiv(hidden, BLOCK_N), GROUP_M)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    if expert >= num_experts:
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pair = tl.load(pairs_ptr + rows)
    row_ok = pair < num_pairs
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < hidden
    k = tl.arange(0, BLOCK_K)
    a_ptrs = act_ptr + rows[:, None].to(tl.int64) * act_stride + k[None, :]
    w_ptrs = w_ptr + expert * w_stride_e + n[None, :].to(tl.int64) * w_stride_n + k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, inter, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=row_ok[:, None], other=0.0)
            w = tl.load(w_ptrs, mask=n_ok[None, :], other=0.0)
        else:
            k_ok = k0 + k < inter
            a = tl.load(a_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            w = tl.load(w_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if UPCAST:
            a, w = a.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(a, w, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    acc *= tl.load(weights_ptr + pair, mask=row_ok, other=0.0)[:, None]
    out = out_ptr + pair[:, None].to(tl.int64) * out_stride + n[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & n_ok[None, :])


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


def _launch_args(cfg: MoeConfig, device: torch.device, dtype: torch.dtype) -> dict:
    upcast = upcast_dots(device, dtype)
    return dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                GROUP_M=cfg.group_m, PRECISION=dot_precision(torch.float32 if upcast else dtype),
                UPCAST=upcast, num_warps=cfg.num_warps, num_stages=cfg.num_stages)


def gate_up(hidden: torch.Tensor, w13: torch.Tensor, sorted_pairs: torch.Tensor,
            tile_experts: torch.Tensor, top_k: int, cfg: MoeConfig) -> torch.Tensor:
    """[rows of the sorted layout, I] `silu(x Wg^T) * (x Wu^T)` in `hidden.dtype` (padding
    rows unwritten).

    Args:
        hidden: [T, H]; w13: [E, 2I, H], unit stride along H.
        sorted_pairs, tile_experts: from `align_by_expert(ids, E, cfg.block_m)`.
        top_k: slots per token. cfg: launch parameters (the gate/up ones; used as given).
    """
    experts, inter = w13.shape[0], w13.shape[1] // 2
    num_m = tile_experts.shape[0]
    act = torch.empty((num_m * cfg.block_m, inter), dtype=hidden.dtype, device=hidden.device)
    _gate_up_kernel[(num_m * triton.cdiv(inter, cfg.block_n),)](
        hidden, w13, act, sorted_pairs, tile_experts, hidden.shape[0] * top_k, experts, top_k,
        hidden.shape[1], inter, num_m, hidden.stride(0), w13.stride(0), w13.stride(1),
        act.stride(0), EVEN_K=hidden.shape[1] % cfg.block_k == 0,
        **_launch_args(cfg, hidden.device, hidden.dtype))
    return act


def down(act: torch.Tensor, w2: torch.Tensor, sorted_pairs: torch.Tensor,
         tile_experts: torch.Tensor, weights: torch.Tensor, cfg: MoeConfig) -> torch.Tensor:
    """[T * top_k, H] `weight * (act W2^T)` per (token, slot) pair, in `act.dtype`.

    Args:
        act: [rows of the sorted layout, I], unit stride along I (from `gate_up`).
        w2: [E, H, I], unit stride along I. weights: [T, top_k] float32, contiguous.
        sorted_pairs, tile_experts: from `align_by_expert(ids, E, cfg.block_m)`.
        cfg: launch parameters; `cfg.down_gemm()` is launched.
    """
    cfg = cfg.down_gemm()
    experts, size, inter = w2.shape
    pairs = weights.numel()
    num_m = tile_experts.shape[0]
    parts = torch.empty((pairs, size), dtype=act.dtype, device=act.device)
    _down_kernel[(num_m * triton.cdiv(size, cfg.block_n),)](
        act, w2, parts, sorted_pairs, tile_experts, weights, pairs, experts, size, inter, num_m,
        act.stride(0), w2.stride(0), w2.stride(1), parts.stride(0),
        EVEN_K=inter % cfg.block_k == 0, **_launch_args(cfg, act.device, act.dtype))
    return parts


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

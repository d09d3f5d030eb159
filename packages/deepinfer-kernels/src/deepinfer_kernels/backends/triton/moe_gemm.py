# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The two grouped GEMMs of the Triton fused MoE (see `moe.py` for the whole op).

Rows are (token, slot) pairs in the expert-sorted, BLOCK_M-padded layout of
`moe_routing.align_by_expert`: a tile of BLOCK_M rows belongs to one expert, its valid rows come
first and padding rows (pair index `num_pairs`) last. With `split_tiles`, a tile whose second half
is all padding computes only its first half (a BLOCK_M / 2 tile): the last tile of each expert is
on average half padding, so this saves about half the padded work (at T=4096, E=64, top-8,
BLOCK_M=128: 12.5% of the rows are padding). A row's result then depends on its tile's shape,
which depends on how many rows its expert got in the batch: `FIXED_CONFIG` (batch-invariant
mode) does not split.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import dot_precision, upcast_dots

if TYPE_CHECKING:
    from deepinfer_kernels.backends.triton.moe import MoeConfig


@triton.jit
def _tile(pid, num_m, num_n, GROUP_M: tl.constexpr):
    """(row tile, column tile) of program `pid`: GROUP_M row tiles sweep each column tile."""
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    size = tl.minimum(num_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % size, (pid % per_group) // size


@triton.jit
def _gate_up_rows(x_ptr, w_ptr, act_ptr, pairs_ptr, expert, first_row, pid_n, num_pairs, top_k,
                  hidden, inter, x_stride, w_stride_e, w_stride_n, act_stride, ROWS: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
                  PRECISION: tl.constexpr, UPCAST: tl.constexpr, TMA: tl.constexpr,
                  GATHERED: tl.constexpr):
    """`act[rows] = silu(x Wg^T) * (x Wu^T)` for ROWS rows from `first_row`, one column tile.

    With GATHERED, `x_ptr` is a TMA descriptor (blocks [ROWS, BLOCK_K]) of the activations
    already gathered into the sorted layout (row r = x[pair_r // top_k]; padding rows hold any
    token's row, and are never stored)."""
    rows = first_row + tl.arange(0, ROWS)
    pair = tl.load(pairs_ptr + rows)
    row_ok = pair < num_pairs
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < inter
    k = tl.arange(0, BLOCK_K)
    if not GATHERED:
        token = (pair // top_k).to(tl.int64)
        x_ptrs = x_ptr + token[:, None] * x_stride + k[None, :]
    if TMA:   # w_ptr is a descriptor of w13 as [E * 2I, H], blocks [BLOCK_N, BLOCK_K]
        g_row = (expert * 2 * inter + pid_n * BLOCK_N).to(tl.int32)
    else:
        g_ptrs = w_ptr + expert * w_stride_e + n[None, :].to(tl.int64) * w_stride_n + k[:, None]
        u_ptrs = g_ptrs + inter * w_stride_n
    gate = tl.zeros([ROWS, BLOCK_N], tl.float32)
    up = tl.zeros([ROWS, BLOCK_N], tl.float32)
    for k0 in range(0, hidden, BLOCK_K):
        if GATHERED:   # columns past H load as zeros
            a = x_ptr.load([first_row.to(tl.int32), k0])
        elif EVEN_K:
            a = tl.load(x_ptrs, mask=row_ok[:, None], other=0.0)
        else:
            a = tl.load(x_ptrs, mask=row_ok[:, None] & (k0 + k < hidden)[None, :], other=0.0)
        if TMA:   # rows past the gate (or up) half are other weights, columns past H zeros:
            wg = w_ptr.load([g_row, k0]).T          # the extra output columns are never stored
            wu = w_ptr.load([g_row + inter, k0]).T
        elif EVEN_K:
            wg = tl.load(g_ptrs, mask=n_ok[None, :], other=0.0)
            wu = tl.load(u_ptrs, mask=n_ok[None, :], other=0.0)
        else:
            k_ok = k0 + k < hidden
            wg = tl.load(g_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
            wu = tl.load(u_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if UPCAST:
            a, wg, wu = a.to(tl.float32), wg.to(tl.float32), wu.to(tl.float32)
        gate = tl.dot(a, wg, gate, input_precision=PRECISION)
        up = tl.dot(a, wu, up, input_precision=PRECISION)
        if not GATHERED:
            x_ptrs += BLOCK_K
        if not TMA:
            g_ptrs += BLOCK_K
            u_ptrs += BLOCK_K
    act = gate / (1.0 + tl.exp(-gate)) * up
    out = act_ptr + rows[:, None].to(tl.int64) * act_stride + n[None, :]
    tl.store(out, act.to(act_ptr.dtype.element_ty), mask=row_ok[:, None] & n_ok[None, :])


@triton.jit(do_not_specialize=["num_pairs", "num_experts", "top_k", "num_m"])
def _gate_up_kernel(x_ptr, x_half_ptr, w_ptr, act_ptr, pairs_ptr, tile_expert_ptr, num_pairs, num_experts,
                    top_k, hidden, inter, num_m, x_stride, w_stride_e, w_stride_n, act_stride,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, PRECISION: tl.constexpr,
                    UPCAST: tl.constexpr, SPLIT: tl.constexpr, TMA: tl.constexpr,
                    GATHERED: tl.constexpr):
    pid_m, pid_n = _tile(tl.program_id(0), num_m, tl.cdiv(inter, BLOCK_N), GROUP_M)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    if expert >= num_experts:                         # a tile past the last expert's segment
        return
    first = pid_m * BLOCK_M
    if SPLIT:
        if tl.load(pairs_ptr + first + BLOCK_M // 2) < num_pairs:   # valid rows past the half
            _gate_up_rows(x_ptr, w_ptr, act_ptr, pairs_ptr, expert, first, pid_n, num_pairs, top_k,
                          hidden, inter, x_stride, w_stride_e, w_stride_n, act_stride, BLOCK_M,
                          BLOCK_N, BLOCK_K, EVEN_K, PRECISION, UPCAST, TMA, GATHERED)
        else:   # gathered: x_half_ptr describes the rows in [BLOCK_M // 2, BLOCK_K] blocks
            _gate_up_rows(x_half_ptr, w_ptr, act_ptr, pairs_ptr, expert, first, pid_n, num_pairs, top_k,
                          hidden, inter, x_stride, w_stride_e, w_stride_n, act_stride, BLOCK_M // 2,
                          BLOCK_N, BLOCK_K, EVEN_K, PRECISION, UPCAST, TMA, GATHERED)
    else:
        _gate_up_rows(x_ptr, w_ptr, act_ptr, pairs_ptr, expert, first, pid_n, num_pairs, top_k,
                      hidden, inter, x_stride, w_stride_e, w_stride_n, act_stride, BLOCK_M,
                      BLOCK_N, BLOCK_K, EVEN_K, PRECISION, UPCAST, TMA, GATHERED)


@triton.jit
def _down_rows(act_ptr, w_ptr, out_ptr, pairs_ptr, weights_ptr, expert, first_row, pid_n,
               num_pairs, hidden, inter, act_stride, w_stride_e, w_stride_n, out_stride,
               ROWS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               EVEN_K: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, TMA: tl.constexpr):
    """`out[pair] = weight * (act W2^T)` for ROWS rows from `first_row`, one column tile.

    With TMA, `act_ptr` is a descriptor of `act` in [ROWS, BLOCK_K] blocks: the rows of a tile
    are contiguous in the sorted layout. Padding rows may hold anything (`act` is not zeroed):
    a row's products depend on that row only, and padding rows are never stored.
    """
    rows = first_row + tl.arange(0, ROWS)
    pair = tl.load(pairs_ptr + rows)
    row_ok = pair < num_pairs
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < hidden
    k = tl.arange(0, BLOCK_K)
    if not TMA:
        a_ptrs = act_ptr + rows[:, None].to(tl.int64) * act_stride + k[None, :]
    if TMA:   # w_ptr is a descriptor of w2 as [E * H, I], blocks [BLOCK_N, BLOCK_K]
        w_row = (expert * hidden + pid_n * BLOCK_N).to(tl.int32)
    else:
        w_ptrs = w_ptr + expert * w_stride_e + n[None, :].to(tl.int64) * w_stride_n + k[:, None]
    acc = tl.zeros([ROWS, BLOCK_N], tl.float32)
    for k0 in range(0, inter, BLOCK_K):
        if TMA:   # columns past I load as zeros
            a = act_ptr.load([first_row.to(tl.int32), k0])
        elif EVEN_K:
            a = tl.load(a_ptrs, mask=row_ok[:, None], other=0.0)
        else:
            a = tl.load(a_ptrs, mask=row_ok[:, None] & (k0 + k < inter)[None, :], other=0.0)
        if TMA:   # rows past this expert's H are the next expert's (never stored), columns past I zeros
            w = w_ptr.load([w_row, k0]).T
        elif EVEN_K:
            w = tl.load(w_ptrs, mask=n_ok[None, :], other=0.0)
        else:
            w = tl.load(w_ptrs, mask=(k0 + k < inter)[:, None] & n_ok[None, :], other=0.0)
        if UPCAST:
            a, w = a.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(a, w, acc, input_precision=PRECISION)
        if not TMA:
            a_ptrs += BLOCK_K
            w_ptrs += BLOCK_K
    acc *= tl.load(weights_ptr + pair, mask=row_ok, other=0.0)[:, None]
    out = out_ptr + pair[:, None].to(tl.int64) * out_stride + n[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & n_ok[None, :])


@triton.jit(do_not_specialize=["num_pairs", "num_experts", "num_m"])
def _down_kernel(act_ptr, act_half_ptr, w_ptr, out_ptr, pairs_ptr, tile_expert_ptr, weights_ptr, num_pairs,
                 num_experts, hidden, inter, num_m, act_stride, w_stride_e, w_stride_n,
                 out_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,
                 PRECISION: tl.constexpr, UPCAST: tl.constexpr, SPLIT: tl.constexpr,
                 TMA: tl.constexpr):
    pid_m, pid_n = _tile(tl.program_id(0), num_m, tl.cdiv(hidden, BLOCK_N), GROUP_M)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    if expert >= num_experts:
        return
    first = pid_m * BLOCK_M
    if SPLIT:
        if tl.load(pairs_ptr + first + BLOCK_M // 2) < num_pairs:
            _down_rows(act_ptr, w_ptr, out_ptr, pairs_ptr, weights_ptr, expert, first, pid_n,
                       num_pairs, hidden, inter, act_stride, w_stride_e, w_stride_n, out_stride,
                       BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, PRECISION, UPCAST, TMA)
        else:   # with TMA, act_half_ptr describes act in [BLOCK_M // 2, BLOCK_K] blocks
            _down_rows(act_half_ptr, w_ptr, out_ptr, pairs_ptr, weights_ptr, expert, first, pid_n,
                       num_pairs, hidden, inter, act_stride, w_stride_e, w_stride_n, out_stride,
                       BLOCK_M // 2, BLOCK_N, BLOCK_K, EVEN_K, PRECISION, UPCAST, TMA)
    else:
        _down_rows(act_ptr, w_ptr, out_ptr, pairs_ptr, weights_ptr, expert, first, pid_n,
                   num_pairs, hidden, inter, act_stride, w_stride_e, w_stride_n, out_stride,
                   BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, PRECISION, UPCAST, TMA)


def _launch_args(cfg: MoeConfig, device: torch.device, dtype: torch.dtype, tma: bool) -> dict:
    upcast = upcast_dots(device, dtype)
    return dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                GROUP_M=cfg.group_m, PRECISION=dot_precision(torch.float32 if upcast else dtype),
                UPCAST=upcast, SPLIT=cfg.split_tiles and cfg.block_m >= 32, TMA=tma,
                num_warps=cfg.num_warps, num_stages=cfg.num_stages)


def _weight_operand(w: torch.Tensor, cfg: MoeConfig) -> tuple[object, bool]:
    """The GEMM's weight argument and whether it is a TMA descriptor.

    With `cfg.tma`, `w` ([E, N, K], unit stride along K) is described as [E * N, K] in
    [block_n, block_k] blocks, so the kernel loads weight tiles with the tensor memory
    accelerator (Hopper and newer; the Triton interpreter emulates it). Otherwise, or when the
    layout does not allow it (not contiguous, rows not 16-byte aligned, an older GPU, a Triton
    without host descriptors), `w` itself goes to pointer loads.
    """
    if (not cfg.tma or not w.is_contiguous() or w.data_ptr() % 16
            or (w.shape[-1] * w.element_size()) % 16):
        return w, False
    if w.device.type == "cuda" and torch.cuda.get_device_capability(w.device)[0] < 9:
        return w, False
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return w, False
    return TensorDescriptor.from_tensor(w.reshape(-1, w.shape[-1]), [cfg.block_n, cfg.block_k]), True


def _row_operands(rows: torch.Tensor, cfg: MoeConfig) -> tuple[object, object]:
    """TMA descriptors of a sorted-layout operand `rows` ([rows, K], contiguous, rows 16-byte
    aligned) in [block_m, block_k] and [block_m // 2, block_k] blocks: the A operand of whole
    and of split tiles (only called when the weights go through TMA, so TMA is available)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    half = max(cfg.block_m // 2, 1)
    return (TensorDescriptor.from_tensor(rows, [cfg.block_m, cfg.block_k]),
            TensorDescriptor.from_tensor(rows, [half, cfg.block_k]))


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
    weights, tma = _weight_operand(w13, cfg)
    pairs = hidden.shape[0] * top_k
    gathered = tma and cfg.gather_x and (hidden.shape[1] * hidden.element_size()) % 16 == 0
    x_args = (hidden, hidden)
    if gathered:   # one gather into the sorted layout, then TMA loads of contiguous row tiles
        # (entries of tiles past the last expert are unwritten: clamped into range, never used)
        tokens = torch.div(sorted_pairs.clamp(0, pairs - 1), top_k, rounding_mode="floor")
        x_args = _row_operands(hidden.index_select(0, tokens), cfg)
    _gate_up_kernel[(num_m * triton.cdiv(inter, cfg.block_n),)](
        *x_args, weights, act, sorted_pairs, tile_experts, pairs, experts, top_k,
        hidden.shape[1], inter, num_m, hidden.stride(0), w13.stride(0), w13.stride(1),
        act.stride(0), EVEN_K=hidden.shape[1] % cfg.block_k == 0, GATHERED=gathered,
        **_launch_args(cfg, hidden.device, hidden.dtype, tma))
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
    w2_arg, tma = _weight_operand(w2, cfg)
    tma = tma and act.is_contiguous() and (act.shape[1] * act.element_size()) % 16 == 0
    act_args = _row_operands(act, cfg) if tma else (act, act)
    if not tma:
        w2_arg = w2
    _down_kernel[(num_m * triton.cdiv(size, cfg.block_n),)](
        *act_args, w2_arg, parts, sorted_pairs, tile_experts, weights, pairs, experts, size, inter, num_m,
        act.stride(0), w2.stride(0), w2.stride(1), parts.stride(0),
        EVEN_K=inter % cfg.block_k == 0, **_launch_args(cfg, act.device, act.dtype, tma))
    return parts

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton MoE routing (top-k expert selection) and the expert-sorted, block-padded layout.

Routing follows `deepinfer_kernels.ops.fused_moe` exactly (softmax or sigmoid scores, the
DeepSeek-V3 selection bias and group-limited selection, renormalisation, scaling): one program
per token holds the token's E scores in registers and picks the top_k by repeated argmax.
Ties go to the LOWER expert index (torch.topk leaves the order of ties unspecified, so rows with
exactly tied scores may pick differently from `reference`).

`align_by_expert` then lists the (token, slot) pairs expert by expert, each expert's segment
padded to a multiple of BLOCK_M, so that every BLOCK_M-row tile of the grouped GEMMs belongs to
one expert (the "moe_align_block_size" idea of vLLM's fused MoE). It runs on the device without
a host synchronisation (so it can be captured in a CUDA graph) and sizes every buffer by its
worst case.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _first_argmax(values, index, SENTINEL: tl.constexpr):
    """Lowest `index` among the maxima of `values` (1-D); `SENTINEL` if all are -inf/NaN."""
    best = tl.max(values, axis=0)
    return tl.min(tl.where(values == best, index, SENTINEL), axis=0)


@triton.jit
def _route_kernel(logits_ptr, bias_ptr, weights_ptr, ids_ptr, num_experts, logits_stride,
                  scale, TOP_K: tl.constexpr, SIGMOID: tl.constexpr, HAS_BIAS: tl.constexpr,
                  N_GROUP: tl.constexpr, TOPK_GROUP: tl.constexpr, RENORMALIZE: tl.constexpr,
                  BLOCK_E: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_K: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    e = tl.arange(0, BLOCK_E)
    valid = e < num_experts
    x = tl.load(logits_ptr + t * logits_stride + e, mask=valid, other=0.0).to(tl.float32)
    if SIGMOID:
        scores = 1.0 / (1.0 + tl.exp(-x))
    else:
        x = tl.where(valid, x, float("-inf"))
        ex = tl.exp(x - tl.max(x, axis=0))
        scores = ex / tl.sum(ex, axis=0)
    choice = scores
    if HAS_BIAS:
        choice += tl.load(bias_ptr + e, mask=valid, other=0.0).to(tl.float32)
    choice = tl.where(valid, choice, float("-inf"))
    if N_GROUP > 0:
        # A group's score is the sum of its two best choice values (DeepSeek-V3).
        group = e // (num_experts // N_GROUP)
        g = tl.arange(0, BLOCK_G)
        group_scores = tl.full([BLOCK_G], float("-inf"), tl.float32)
        for i in tl.static_range(N_GROUP):
            in_group = tl.where(group == i, choice, float("-inf"))
            first = _first_argmax(in_group, e, BLOCK_E)
            second = tl.max(tl.where(e == first, float("-inf"), in_group), axis=0)
            group_scores = tl.where(g == i, tl.max(in_group, axis=0) + second, group_scores)
        keep = e < 0
        for _ in tl.static_range(TOPK_GROUP):
            best = _first_argmax(group_scores, g, BLOCK_G)
            keep = keep | (group == best)
            group_scores = tl.where(g == best, float("-inf"), group_scores)
        choice = tl.where(keep, choice, float("-inf"))
    slot = tl.arange(0, BLOCK_K)
    ids = tl.zeros([BLOCK_K], tl.int32)
    weights = tl.zeros([BLOCK_K], tl.float32)
    for j in tl.static_range(TOP_K):
        best = _first_argmax(choice, e, BLOCK_E)
        best = tl.where(best < num_experts, best, j)  # all -inf/NaN left: a valid id, never E
        ids = tl.where(slot == j, best, ids)
        weights = tl.where(slot == j, tl.sum(tl.where(e == best, scores, 0.0), axis=0), weights)
        choice = tl.where(e == best, float("-inf"), choice)
    if RENORMALIZE:
        weights = weights / tl.sum(weights, axis=0)
    out = t * TOP_K + slot
    tl.store(weights_ptr + out, weights * scale, mask=slot < TOP_K)
    tl.store(ids_ptr + out, ids, mask=slot < TOP_K)


def select_experts(router_logits: torch.Tensor, top_k: int, scoring: str,
                   bias: torch.Tensor | None, n_group: int | None, topk_group: int | None,
                   renormalize: bool, routed_scaling_factor: float
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Routes every token to `top_k` experts (see `deepinfer_kernels.ops.fused_moe`).

    Args:
        router_logits: [T, E] float (any float dtype), unit stride along E.
        top_k, scoring, bias, n_group, topk_group, renormalize, routed_scaling_factor: as
            for `ops.fused_moe` (already validated there).

    Returns:
        ([T, top_k] float32 weights, [T, top_k] int32 expert ids), slot j holding the j-th
        best expert by selection score.
    """
    tokens, experts = router_logits.shape
    weights = torch.empty((tokens, top_k), dtype=torch.float32, device=router_logits.device)
    ids = torch.empty((tokens, top_k), dtype=torch.int32, device=router_logits.device)
    if tokens:
        _route_kernel[(tokens,)](
            router_logits, bias if bias is not None else router_logits, weights, ids, experts,
            router_logits.stride(0), routed_scaling_factor, TOP_K=top_k,
            SIGMOID=scoring == "sigmoid", HAS_BIAS=bias is not None, N_GROUP=n_group or 0,
            TOPK_GROUP=topk_group or 0, RENORMALIZE=renormalize,
            BLOCK_E=triton.next_power_of_2(experts),
            BLOCK_G=triton.next_power_of_2(max(n_group or 1, 2)),
            BLOCK_K=triton.next_power_of_2(max(top_k, 2)),
            num_warps=1 if experts <= 256 else 4)   # reductions stay within a warp
    return weights, ids


def max_blocks(num_pairs: int, num_experts: int, block_m: int) -> int:
    """Upper bound on the BLOCK_M tiles of `align_by_expert`: each non-empty expert (at most
    min(E, pairs)) pads its segment by fewer than BLOCK_M rows."""
    return triton.cdiv(num_pairs + min(num_experts, num_pairs) * (block_m - 1), block_m)


@triton.jit
def _count_kernel(ids_ptr, counts_ptr, num_pairs, num_experts, CHUNK: tl.constexpr,
                  BLOCK_E: tl.constexpr):
    """counts[c, e]: pairs of chunk c routed to expert e."""
    c = tl.program_id(0)
    pair = c * CHUNK + tl.arange(0, CHUNK)
    expert = tl.load(ids_ptr + pair, mask=pair < num_pairs, other=-1)
    e = tl.arange(0, BLOCK_E)
    counts = tl.sum((expert[:, None] == e[None, :]).to(tl.int32), axis=0)
    tl.store(counts_ptr + c * num_experts + e, counts, mask=e < num_experts)


@triton.jit
def _offsets_kernel(counts_ptr, pairs_ptr, tile_expert_ptr, num_chunks, num_pairs, num_experts,
                    num_tiles, BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr,
                    ROWS: tl.constexpr):
    """One program: turns counts[c, e] into the first row of chunk c's pairs of expert e,
    writes the padding rows of every expert's last tile and the expert of every tile."""
    e = tl.arange(0, BLOCK_E)
    e_ok = e < num_experts
    r = tl.arange(0, ROWS)
    total = tl.zeros([BLOCK_E], tl.int32)
    for c0 in range(0, num_chunks, ROWS):            # exclusive prefix over chunks
        offs = (c0 + r)[:, None] * num_experts + e[None, :]
        mask = (c0 + r < num_chunks)[:, None] & e_ok[None, :]
        count = tl.load(counts_ptr + offs, mask=mask, other=0)
        tl.store(counts_ptr + offs, tl.cumsum(count, axis=0) - count + total[None, :],
                 mask=mask)
        total += tl.sum(count, axis=0)
    padded = (total + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    end = tl.cumsum(padded, axis=0)
    start = end - padded
    for c0 in range(0, num_chunks, ROWS):
        offs = (c0 + r)[:, None] * num_experts + e[None, :]
        mask = (c0 + r < num_chunks)[:, None] & e_ok[None, :]
        prefix = tl.load(counts_ptr + offs, mask=mask, other=0)
        tl.store(counts_ptr + offs, prefix + start[None, :], mask=mask)
    for pad in range(BLOCK_M - 1):                   # padding rows: [start + total, end)
        row = start + total + pad
        tl.store(pairs_ptr + row, tl.full([BLOCK_E], num_pairs, tl.int32),
                 mask=e_ok & (row < end))
    for t0 in range(0, num_tiles, ROWS):             # a tile's expert: experts ending before it
        tile = t0 + r
        before = (end[None, :] <= (tile * BLOCK_M)[:, None]) & e_ok[None, :]
        tl.store(tile_expert_ptr + tile, tl.sum(before.to(tl.int32), axis=1),
                 mask=tile < num_tiles)


@triton.jit
def _scatter_kernel(ids_ptr, base_ptr, pairs_ptr, num_pairs, num_experts, CHUNK: tl.constexpr,
                    BLOCK_E: tl.constexpr):
    """Writes each pair at its expert's base row for the chunk plus its rank among the
    chunk's earlier pairs of the same expert (a stable order)."""
    c = tl.program_id(0)
    pair = c * CHUNK + tl.arange(0, CHUNK)
    ok = pair < num_pairs
    expert = tl.load(ids_ptr + pair, mask=ok, other=-1)
    hot = (expert[:, None] == tl.arange(0, BLOCK_E)[None, :]).to(tl.int32)
    rank = tl.sum(tl.where(hot == 1, tl.cumsum(hot, axis=0) - 1, 0), axis=1)
    base = tl.load(base_ptr + c * num_experts + expert, mask=ok, other=0)
    tl.store(pairs_ptr + base + rank, pair, mask=ok)


def align_by_expert(ids: torch.Tensor, num_experts: int, block_m: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Orders the (token, slot) pairs by expert, each expert's segment padded to BLOCK_M rows.

    Pair p = token * top_k + slot. Within an expert, pairs keep increasing order. Three
    launches (count per chunk, offsets, scatter), deterministic, no atomics.

    Args:
        ids: [T, top_k] int32 expert ids, contiguous.
        num_experts: E (<= 1024).
        block_m: Rows per GEMM tile.

    Returns:
        sorted_pairs: [max_blocks * block_m] int32; row r of the expert-sorted layout holds
            pair sorted_pairs[r], or T * top_k for padding rows (rows of tiles past the last
            expert's segment are left unwritten: no kernel reads them).
        block_experts: [max_blocks] int32, the expert of each tile; E for tiles past the end.
    """
    pairs = ids.numel()
    blocks = max_blocks(pairs, num_experts, block_m)
    sorted_pairs = torch.empty(blocks * block_m, dtype=torch.int32, device=ids.device)
    tile_experts = torch.empty(blocks, dtype=torch.int32, device=ids.device)
    if pairs == 0:
        return sorted_pairs, tile_experts
    block_e = triton.next_power_of_2(num_experts)
    # [CHUNK, E] and [ROWS, E] tiles of 16K and 8K elements.
    chunk = min(1024, max(16, 16384 // block_e))
    num_chunks = triton.cdiv(pairs, chunk)
    counts = torch.empty((num_chunks, num_experts), dtype=torch.int32, device=ids.device)
    _count_kernel[(num_chunks,)](ids, counts, pairs, num_experts, CHUNK=chunk, BLOCK_E=block_e)
    _offsets_kernel[(1,)](counts, sorted_pairs, tile_experts, num_chunks, pairs, num_experts,
                          blocks, BLOCK_M=block_m, BLOCK_E=block_e,
                          ROWS=max(1, 8192 // block_e))
    _scatter_kernel[(num_chunks,)](ids, counts, sorted_pairs, pairs, num_experts, CHUNK=chunk,
                                   BLOCK_E=block_e)
    return sorted_pairs, tile_experts

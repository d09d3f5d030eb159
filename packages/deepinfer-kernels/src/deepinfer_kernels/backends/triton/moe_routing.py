# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton MoE routing (top-k expert selection) and the expert-sorted, block-padded layout.

Routing follows `deepinfer_kernels.ops.fused_moe` exactly (softmax or sigmoid scores, the
DeepSeek-V3 selection bias and group-limited selection, renormalisation, scaling): one program
holds the E scores of BLOCK_T tokens as a [BLOCK_T, BLOCK_E] tile (one row per token, every
reduction along the row) and picks each token's top_k by repeated argmax. Ties go to the LOWER
expert index (torch.topk leaves the order of ties unspecified, so rows with exactly tied scores
may pick differently from `reference`). BLOCK_T depends on E only, so a token's result does not
depend on the batch.

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

ROUTE_TILE = 2048
"""Scores per routing program: BLOCK_T = ROUTE_TILE // BLOCK_E tokens (1 to 64)."""

CHUNK = 128
"""(token, slot) pairs per program of `align_by_expert`'s count and scatter steps."""


@triton.jit
def _first_argmax(values, index, SENTINEL: tl.constexpr):
    """Per row of [R, N] `values`: the lowest `index` ([1, N]) among the row's maxima, or
    `SENTINEL` where no element equals the maximum (NaN). Returns [R]."""
    best = tl.max(values, axis=1)
    return tl.min(tl.where(values == best[:, None], index, SENTINEL), axis=1)


@triton.jit
def _limit_groups(choice, e, num_experts, N_GROUP: tl.constexpr, TOPK_GROUP: tl.constexpr,
                  BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_G: tl.constexpr):
    """Group-limited selection: -inf outside each row's TOPK_GROUP best of N_GROUP groups of
    experts, a group's score being the sum of its two best `choice` values (DeepSeek-V3)."""
    group = e // (num_experts // N_GROUP)                       # [1, BLOCK_E]
    g = tl.arange(0, BLOCK_G)[None, :]
    group_scores = tl.full([BLOCK_T, BLOCK_G], float("-inf"), tl.float32)
    for i in tl.static_range(N_GROUP):
        in_group = tl.where(group == i, choice, float("-inf"))
        first = _first_argmax(in_group, e, BLOCK_E)
        second = tl.max(tl.where(e == first[:, None], float("-inf"), in_group), axis=1)
        score = tl.max(in_group, axis=1) + second
        group_scores = tl.where(g == i, score[:, None], group_scores)
    keep = tl.zeros([BLOCK_T, BLOCK_E], tl.int32)
    for _ in tl.static_range(TOPK_GROUP):
        best = _first_argmax(group_scores, g, BLOCK_G)
        keep = tl.where(group == best[:, None], 1, keep)
        group_scores = tl.where(g == best[:, None], float("-inf"), group_scores)
    return tl.where(keep != 0, choice, float("-inf"))


@triton.jit
def _top_k(choice, scores, e, num_experts, TOP_K: tl.constexpr, BLOCK_T: tl.constexpr,
           BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr):
    """Per row: the TOP_K best experts by `choice` ([BLOCK_T, BLOCK_K] int32, best first) and
    their `scores` ([BLOCK_T, BLOCK_K] float32); slots >= TOP_K hold 0."""
    slot = tl.arange(0, BLOCK_K)[None, :]
    ids = tl.zeros([BLOCK_T, BLOCK_K], tl.int32)
    weights = tl.zeros([BLOCK_T, BLOCK_K], tl.float32)
    for j in tl.static_range(TOP_K):
        best = _first_argmax(choice, e, BLOCK_E)
        best = tl.where(best < num_experts, best, j)  # all -inf/NaN left: a valid id, never E
        hit = e == best[:, None]
        ids = tl.where(slot == j, best[:, None], ids)
        weight = tl.sum(tl.where(hit, scores, 0.0), axis=1)
        weights = tl.where(slot == j, weight[:, None], weights)
        choice = tl.where(hit, float("-inf"), choice)
    return ids, weights


@triton.jit(do_not_specialize=["num_tokens"])
def _route_kernel(logits_ptr, bias_ptr, weights_ptr, ids_ptr, num_tokens, num_experts,
                  logits_stride, scale, TOP_K: tl.constexpr, SIGMOID: tl.constexpr,
                  HAS_BIAS: tl.constexpr, N_GROUP: tl.constexpr, TOPK_GROUP: tl.constexpr,
                  RENORMALIZE: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr,
                  BLOCK_G: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tokens [pid * BLOCK_T, (pid + 1) * BLOCK_T): one row of the tile each."""
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = t < num_tokens
    e = tl.arange(0, BLOCK_E)[None, :]
    valid = e < num_experts
    x = tl.load(logits_ptr + t[:, None].to(tl.int64) * logits_stride + e,
                mask=t_ok[:, None] & valid, other=0.0).to(tl.float32)
    if SIGMOID:
        scores = 1.0 / (1.0 + tl.exp(-x))
    else:
        x = tl.where(valid, x, float("-inf"))
        ex = tl.exp(x - tl.max(x, axis=1)[:, None])
        scores = ex / tl.sum(ex, axis=1)[:, None]
    choice = scores
    if HAS_BIAS:
        choice += tl.load(bias_ptr + e, mask=valid, other=0.0).to(tl.float32)
    choice = tl.where(valid, choice, float("-inf"))
    if N_GROUP > 0:
        choice = _limit_groups(choice, e, num_experts, N_GROUP, TOPK_GROUP, BLOCK_T, BLOCK_E,
                               BLOCK_G)
    ids, weights = _top_k(choice, scores, e, num_experts, TOP_K, BLOCK_T, BLOCK_E, BLOCK_K)
    if RENORMALIZE:
        weights = weights / tl.sum(weights, axis=1)[:, None]
    slot = tl.arange(0, BLOCK_K)[None, :]
    out = t[:, None].to(tl.int64) * TOP_K + slot
    mask = t_ok[:, None] & (slot < TOP_K)
    tl.store(weights_ptr + out, weights * scale, mask=mask)
    tl.store(ids_ptr + out, ids, mask=mask)


def route_block_t(num_experts: int) -> int:
    """Tokens per routing program: a ~ROUTE_TILE-score tile, 1 <= BLOCK_T <= 64. A function
    of E only: a token's routing is computed the same way whatever the batch."""
    return max(1, min(64, ROUTE_TILE // triton.next_power_of_2(num_experts)))


def select_experts(router_logits: torch.Tensor, top_k: int, scoring: str,
                   bias: torch.Tensor | None, n_group: int | None, topk_group: int | None,
                   renormalize: bool, routed_scaling_factor: float
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Routes every token to `top_k` experts (see `deepinfer_kernels.ops.fused_moe`).

    Args:
        router_logits: [T, E] float (any float dtype), unit stride along E, E <= 1024.
        top_k, scoring, bias, n_group, topk_group, renormalize, routed_scaling_factor: as
            for `ops.fused_moe` (already validated there); bias: [E] or None.

    Returns:
        ([T, top_k] float32 weights, [T, top_k] int32 expert ids), slot j holding the j-th
        best expert by selection score (ties: the lower expert index first).
    """
    tokens, experts = router_logits.shape
    weights = torch.empty((tokens, top_k), dtype=torch.float32, device=router_logits.device)
    ids = torch.empty((tokens, top_k), dtype=torch.int32, device=router_logits.device)
    if tokens:
        block_t = route_block_t(experts)
        _route_kernel[(triton.cdiv(tokens, block_t),)](
            router_logits, bias if bias is not None else router_logits, weights, ids, tokens,
            experts, router_logits.stride(0), routed_scaling_factor, TOP_K=top_k,
            SIGMOID=scoring == "sigmoid", HAS_BIAS=bias is not None, N_GROUP=n_group or 0,
            TOPK_GROUP=topk_group or 0, RENORMALIZE=renormalize, BLOCK_T=block_t,
            BLOCK_E=triton.next_power_of_2(experts),
            BLOCK_G=triton.next_power_of_2(max(n_group or 1, 2)),
            BLOCK_K=triton.next_power_of_2(max(top_k, 2)), num_warps=4)
    return weights, ids


def max_blocks(num_pairs: int, num_experts: int, block_m: int) -> int:
    """Upper bound on the BLOCK_M tiles of `align_by_expert`: each non-empty expert (at most
    min(E, pairs)) pads its segment by fewer than BLOCK_M rows."""
    return triton.cdiv(num_pairs + min(num_experts, num_pairs) * (block_m - 1), block_m)


@triton.jit(do_not_specialize=["num_pairs"])
def _count_kernel(ids_ptr, counts_ptr, num_pairs, num_experts, CHUNK: tl.constexpr,
                  BLOCK_E: tl.constexpr):
    """counts[c, e]: pairs of chunk c (pairs [c * CHUNK, (c + 1) * CHUNK)) routed to expert e,
    BLOCK_E experts at a time."""
    c = tl.program_id(0)
    pair = c * CHUNK + tl.arange(0, CHUNK)
    expert = tl.load(ids_ptr + pair, mask=pair < num_pairs, other=-1)
    for e0 in range(0, num_experts, BLOCK_E):
        e = e0 + tl.arange(0, BLOCK_E)
        counts = tl.sum((expert[:, None] == e[None, :]).to(tl.int32), axis=0)
        tl.store(counts_ptr + c * num_experts + e, counts, mask=e < num_experts)


@triton.jit(do_not_specialize=["num_chunks"])
def _offsets_kernel(counts_ptr, bounds_ptr, num_chunks, num_experts, BLOCK_M: tl.constexpr,
                    BLOCK_E: tl.constexpr, ROWS: tl.constexpr):
    """One program, two passes over counts [num_chunks, E] (ROWS chunks at a time).

    Pass 1 sums each expert's pairs, lays out the padded segments and writes
    bounds[0, e] (end of expert e's pairs) and bounds[1, e] (end of its padded segment);
    pass 2 turns counts[c, e] into the first row of chunk c's pairs of expert e."""
    e = tl.arange(0, BLOCK_E)
    e_ok = e < num_experts
    r = tl.arange(0, ROWS)
    total = tl.zeros([BLOCK_E], tl.int32)
    for c0 in range(0, num_chunks, ROWS):
        offs = (c0 + r)[:, None] * num_experts + e[None, :]
        mask = (c0 + r < num_chunks)[:, None] & e_ok[None, :]
        total += tl.sum(tl.load(counts_ptr + offs, mask=mask, other=0), axis=0)
    padded = (total + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    end = tl.cumsum(padded, axis=0)
    start = end - padded
    tl.store(bounds_ptr + e, start + total, mask=e_ok)
    tl.store(bounds_ptr + num_experts + e, end, mask=e_ok)
    for c0 in range(0, num_chunks, ROWS):                # exclusive prefix over chunks
        offs = (c0 + r)[:, None] * num_experts + e[None, :]
        mask = (c0 + r < num_chunks)[:, None] & e_ok[None, :]
        count = tl.load(counts_ptr + offs, mask=mask, other=0)
        tl.store(counts_ptr + offs, tl.cumsum(count, axis=0) - count + start[None, :],
                 mask=mask)
        start += tl.sum(count, axis=0)


@triton.jit
def _scatter(ids_ptr, base_ptr, pairs_ptr, c, num_pairs, num_experts, CHUNK: tl.constexpr):
    """Writes each pair of chunk c at its expert's base row for the chunk plus its rank among
    the chunk's earlier pairs of the same expert (a stable order)."""
    i = tl.arange(0, CHUNK)
    pair = c * CHUNK + i
    ok = pair < num_pairs
    expert = tl.load(ids_ptr + pair, mask=ok, other=-1)
    earlier = (expert[None, :] == expert[:, None]) & (i[None, :] < i[:, None])
    rank = tl.sum(earlier.to(tl.int32), axis=1)
    base = tl.load(base_ptr + c * num_experts + expert, mask=ok, other=0)
    tl.store(pairs_ptr + base + rank, pair, mask=ok)


@triton.jit
def _tiles(bounds_ptr, pairs_ptr, tile_expert_ptr, b, num_pairs, num_experts, num_tiles,
           BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, TILES: tl.constexpr):
    """Tiles [b * TILES, (b + 1) * TILES): the expert of each (the number of experts whose
    padded segment ends at or before the tile's first row; E past the last segment) and the
    value num_pairs in the tile's padding rows."""
    tile = b * TILES + tl.arange(0, TILES)
    tile_ok = tile < num_tiles
    e = tl.arange(0, BLOCK_E)
    end = tl.load(bounds_ptr + num_experts + e, mask=e < num_experts, other=2147483647)
    expert = tl.sum((end[None, :] <= (tile * BLOCK_M)[:, None]).to(tl.int32), axis=1)
    tl.store(tile_expert_ptr + tile, expert, mask=tile_ok)
    pairs_end = tl.load(bounds_ptr + expert, mask=tile_ok & (expert < num_experts),
                        other=2147483647)
    rows = tile[:, None] * BLOCK_M + tl.arange(0, BLOCK_M)[None, :]
    tl.store(pairs_ptr + rows, tl.full([TILES, BLOCK_M], num_pairs, tl.int32),
             mask=rows >= pairs_end[:, None])


@triton.jit(do_not_specialize=["num_pairs", "num_chunks", "num_tiles"])
def _place_kernel(ids_ptr, base_ptr, bounds_ptr, pairs_ptr, tile_expert_ptr, num_pairs,
                  num_experts, num_chunks, num_tiles, CHUNK: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, TILES: tl.constexpr):
    """Programs [0, num_chunks) scatter the pairs of one chunk each; the others write the
    experts and padding rows of TILES tiles each (disjoint rows: no ordering needed)."""
    pid = tl.program_id(0)
    if pid < num_chunks:
        _scatter(ids_ptr, base_ptr, pairs_ptr, pid, num_pairs, num_experts, CHUNK)
    else:
        _tiles(bounds_ptr, pairs_ptr, tile_expert_ptr, pid - num_chunks, num_pairs,
               num_experts, num_tiles, BLOCK_M, BLOCK_E, TILES)


def align_by_expert(ids: torch.Tensor, num_experts: int, block_m: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Orders the (token, slot) pairs by expert, each expert's segment padded to BLOCK_M rows.

    Pair p = token * top_k + slot. Within an expert, pairs keep increasing order. Three
    launches: per-chunk counts (parallel), the layout (one program: a prefix over
    [chunks, E] counts), then the scatter of the pairs and the tile experts and padding rows
    (parallel); deterministic, no atomics, no host synchronisation (CUDA-graph capturable).

    Args:
        ids: [T, top_k] int32 expert ids in [0, E), contiguous.
        num_experts: E (<= 1024).
        block_m: Rows per GEMM tile.

    Returns:
        sorted_pairs: [max_blocks * block_m] int32; row r of the expert-sorted layout holds
            pair sorted_pairs[r], or T * top_k for padding rows (rows of tiles past the last
            expert's segment are left unwritten: no kernel reads them).
        tile_experts: [max_blocks] int32, the expert of each tile; E for tiles past the end.
    """
    pairs = ids.numel()
    blocks = max_blocks(pairs, num_experts, block_m)
    sorted_pairs = torch.empty(blocks * block_m, dtype=torch.int32, device=ids.device)
    tile_experts = torch.empty(blocks, dtype=torch.int32, device=ids.device)
    if pairs == 0:
        return sorted_pairs, tile_experts
    block_e = triton.next_power_of_2(num_experts)
    num_chunks = triton.cdiv(pairs, CHUNK)
    counts = torch.empty((num_chunks, num_experts), dtype=torch.int32, device=ids.device)
    bounds = torch.empty((2, num_experts), dtype=torch.int32, device=ids.device)
    _count_kernel[(num_chunks,)](ids, counts, pairs, num_experts, CHUNK=CHUNK,
                                 BLOCK_E=min(block_e, 64))
    _offsets_kernel[(1,)](counts, bounds, num_chunks, num_experts, BLOCK_M=block_m,
                          BLOCK_E=block_e, ROWS=min(256, max(1, 8192 // block_e)),
                          num_warps=8)                 # [ROWS, E] <= 8K: no register spills
    tiles = max(1, 4096 // max(block_e, block_m))          # [TILES, E] and [TILES, BLOCK_M]
    _place_kernel[(num_chunks + triton.cdiv(blocks, tiles),)](
        ids, counts, bounds, sorted_pairs, tile_experts, pairs, num_experts, num_chunks,
        blocks, CHUNK=CHUNK, BLOCK_M=block_m, BLOCK_E=block_e, TILES=tiles)
    return sorted_pairs, tile_experts

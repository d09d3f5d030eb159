# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The drafter's teacher-forced blocks run per sequence: one attention call over a sequence's
context for all of its blocks, instead of one copy of the context per block.

`DSparkDrafter.forward` takes its context K/V per block row (`[L, R, N, H_kv, D]`), as the engine
needs. In training the R blocks come from B sequences (about 32 per sequence), so indexing the
context per block copies each sequence's K/V 32 times and the float32 attention reads every
copy: on the H200 these copies were 31% of a training step's GPU time (BENCHMARKS, session 16's
`train_step_profile.py`). Here a sequence's A blocks are laid side by side as one query of A*G
positions against `[its context ; all A blocks' keys]`, under a mask that gives block a the
context positions before its anchor and its own G positions (both directions), exactly the
keys `DSparkDrafter.forward` gives it; `scaled_dot_product_attention` then never materialises
the scores on CUDA. The result equals the per-block path to float rounding (tested in float32).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from deepinfer_kernels import ops

from deepinfer_dspark.drafter import DraftAttention, DSparkDrafter
from deepinfer_dspark.train.blocks import BlockBatch

KEY_ALIGN = 16   # keys padded to a multiple of this (the memory-efficient CUDA kernel's mask alignment)


def block_slots(seq_index: torch.Tensor, num_sequences: int) -> tuple[torch.Tensor, int]:
    """Each block's slot among its sequence's blocks.

    Args:
        seq_index: `[R]` int64, blocks grouped by sequence (as `sample_anchors` returns them).
        num_sequences: B.

    Returns:
        `(slot [R] int64, A)`: block r is block `slot[r]` of sequence `seq_index[r]`; A is the
        most blocks any sequence has (at least 1).

    Raises:
        ValueError: `seq_index` not sorted (blocks of a sequence apart: their slots would collide).
    """
    if seq_index.numel() > 1 and bool((seq_index[1:] < seq_index[:-1]).any()):
        raise ValueError("seq_index: blocks must be grouped by sequence in increasing order (as "
                         "`sample_anchors` returns them)")
    counts = torch.bincount(seq_index, minlength=num_sequences)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(seq_index.numel(), device=seq_index.device) - starts[seq_index]
    return slot, max(int(counts.max()) if counts.numel() else 1, 1)


def grouped_mask(anchors: torch.Tensor, context_len: int, block_size: int, key_len: int) -> torch.Tensor:
    """Which keys each block position sees: `[B, 1, A*G, key_len]` bool.

    Keys are `[context (context_len) ; block 0 (G) ; ... ; block A-1 (G) ; padding]`; block a's
    positions see the context positions before `anchors[:, a]` and block a's own G keys.
    """
    batch, blocks = anchors.shape
    device = anchors.device
    context = torch.arange(context_len, device=device)[None, None, :] < anchors[:, :, None]      # [B, A, N]
    own = torch.eye(blocks, dtype=torch.bool, device=device)                                      # [A, A]
    own = own[:, None, :, None].expand(blocks, block_size, blocks, block_size).reshape(
        blocks * block_size, blocks * block_size)
    context = context[:, :, None, :].expand(batch, blocks, block_size, context_len).reshape(
        batch, blocks * block_size, context_len)
    pad = key_len - context_len - blocks * block_size
    parts = [context, own[None].expand(batch, -1, -1)]
    if pad:
        parts.append(torch.zeros(batch, blocks * block_size, pad, dtype=torch.bool, device=device))
    return torch.cat(parts, dim=2)[:, None]


def grouped_attention(attn: DraftAttention, x: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor,
                      context_k: torch.Tensor, context_v: torch.Tensor, mask: torch.Tensor,
                      dtype: torch.dtype) -> torch.Tensor:
    """`DraftAttention.forward` for a sequence's blocks side by side.

    Args:
        attn: the layer's attention (its weights).
        x: `[B, A, G, d]` normed block hidden states.
        positions: `[B, A, G]` int64 absolute positions.
        cos_sin: the RoPE table.
        context_k, context_v: `[B, N, H_kv, D]` the sequences' context keys/values.
        mask: `grouped_mask(...)`, `[B, 1, A*G, S]` with S >= N + A*G.
        dtype: the dtype the attention runs in (bf16 under autocast; accumulation is float32).

    Returns:
        `[B, A, G, d]`.
    """
    batch, blocks, width, d = x.shape
    heads, kv_heads, head_dim = attn.num_heads, attn.num_kv_heads, attn.head_dim
    flat = x.reshape(-1, d)
    q = attn.q_norm(attn.q_proj(flat).reshape(-1, heads, head_dim))
    k = attn.k_norm(attn.k_proj(flat).reshape(-1, kv_heads, head_dim))
    v = attn.v_proj(flat).reshape(-1, kv_heads, head_dim)
    q, k = ops.rotary_embedding(positions.reshape(-1), q, k, cos_sin, True)
    queries = blocks * width
    keys = [context_k.to(dtype), k.reshape(batch, queries, kv_heads, head_dim).to(dtype)]
    values = [context_v.to(dtype), v.reshape(batch, queries, kv_heads, head_dim).to(dtype)]
    pad = mask.shape[-1] - context_k.shape[1] - queries
    if pad:
        keys.append(keys[0].new_zeros(batch, pad, kv_heads, head_dim))
        values.append(values[0].new_zeros(batch, pad, kv_heads, head_dim))
    groups = heads // kv_heads
    keys = torch.cat(keys, dim=1).repeat_interleave(groups, dim=2).transpose(1, 2)       # [B, H, S, D]
    values = torch.cat(values, dim=1).repeat_interleave(groups, dim=2).transpose(1, 2)
    q = q.reshape(batch, queries, heads, head_dim).transpose(1, 2).to(dtype)             # [B, H, A*G, D]
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=head_dim ** -0.5)
    out = out.transpose(1, 2).reshape(batch, queries, heads * head_dim)
    return attn.o_proj(out).reshape(batch, blocks, width, d)


def grouped_hidden(drafter: DSparkDrafter, features: torch.Tensor, blocks: BlockBatch,
                   dtype: torch.dtype) -> torch.Tensor:
    """The parallel backbone's hidden states of every block, one attention call per layer.

    Args:
        drafter: the drafter (its parameters are used as in `DSparkDrafter.forward`).
        features: `[B, L, m*d]` target features of the padded batch (L >= `blocks.context_len`).
        blocks: the blocks cut from the batch (`seq_index` grouped by sequence).
        dtype: the attention's dtype (see `grouped_attention`).

    Returns:
        `[R, G, d]` final-normed hidden states, row r for block r (what `DSparkDrafter.forward`
        returns for the same blocks with their per-row context).
    """
    cfg = drafter.config
    batch, context_len = features.shape[0], blocks.context_len
    device, width = features.device, cfg.block_size
    flat = features[:, :context_len].reshape(batch * context_len, -1)
    context_k, context_v = drafter.context_kv(flat, torch.arange(context_len, device=device).repeat(batch))
    shape = (context_k.shape[0], batch, context_len) + tuple(context_k.shape[2:])
    context_k, context_v = context_k.reshape(shape), context_v.reshape(shape)              # [L, B, N, H_kv, D]
    slot, count = block_slots(blocks.seq_index, batch)
    seq = blocks.seq_index
    tokens = torch.full((batch, count, width), cfg.mask_token_id, dtype=torch.int64, device=device)
    tokens[seq, slot] = blocks.block_tokens
    positions = torch.arange(width, device=device).repeat(batch, count, 1)
    positions[seq, slot] = blocks.positions
    anchors = torch.zeros(batch, count, dtype=torch.int64, device=device)   # padding blocks see no context
    anchors[seq, slot] = blocks.anchors
    # Context rows past every anchor of their sequence (a short sequence's padding) weigh 0, but a
    # non-finite one would still make NaN through the softmax (`attend` masks them): zeroed.
    last = anchors.max(dim=1).values[:, None]
    seen = (torch.arange(context_len, device=device)[None, :] < last)[None, :, :, None, None]
    context_k, context_v = context_k.where(seen, 0.0), context_v.where(seen, 0.0)
    keys = context_len + count * width
    mask = grouped_mask(anchors, context_len, width, -(-keys // KEY_ALIGN) * KEY_ALIGN)
    x = drafter.embed_tokens(tokens)
    for layer, k, v in zip(drafter.layers, context_k, context_v, strict=True):
        x = x + grouped_attention(layer.self_attn, layer.input_layernorm(x), positions, drafter.cos_sin,
                                  k, v, mask, dtype)
        x = x + layer.mlp(layer.post_attention_layernorm(x).reshape(-1, x.shape[-1])).reshape(x.shape)
    return drafter.norm(x)[seq, slot]

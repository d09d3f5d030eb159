# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Training blocks: random anchors per sequence and their teacher-forced draft blocks.

DSpark training (Cheng et al. 2026, "DSpark", section 5; DeepSpec `dspark_trainer.py`) samples
anchors s inside each sequence. The block at anchor s is `[x_s, MASK, ..., MASK]` at positions
s .. s+G-1; its context is the target features of positions 0 .. s-1; output k (1-based)
predicts the label x*_k = x_{s+k} and is scored against the target's distribution at position
s+k-1. An anchor must be followed by a reply token (s >= prompt_len - 1, s + 1 < len); label k is
supervised while s + k < len (a contiguous valid prefix). The Markov head and the confidence
head are teacher-forced: position k sees x*_{k-1} (x*_0 = x_s, the anchor).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class BlockBatch:
    """R draft blocks cut from a padded batch of B sequences of width L.

    Attributes:
        seq_index: `[R]` int64, the sequence (row of the padded batch) of each block.
        anchors: `[R]` int64 anchor positions s.
        block_tokens: `[R, G]` int64 `[x_s, MASK, ...]`.
        positions: `[R, G]` int64 `s .. s+G-1`.
        labels: `[R, G]` int64 x*_k (0 where invalid).
        valid: `[R, G]` bool, which labels are supervised.
        prev_tokens: `[R, G]` int64 teacher-forced previous tokens `[x_s, x*_1, ..., x*_{G-1}]`.
        target_positions: `[R, G]` int64 positions s+k-1 whose target logits score output k
            (clamped to L - 1 where invalid).
    """

    seq_index: torch.Tensor
    anchors: torch.Tensor
    block_tokens: torch.Tensor
    positions: torch.Tensor
    labels: torch.Tensor
    valid: torch.Tensor
    prev_tokens: torch.Tensor
    target_positions: torch.Tensor

    @property
    def context_len(self) -> int:
        """Context positions any block needs: max(s), at least 1."""
        return max(int(self.anchors.max()), 1) if self.anchors.numel() else 1


def sample_anchors(lengths: Sequence[int], prompt_lens: Sequence[int], count: int,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to `count` distinct random anchors per sequence, uniform over its valid anchors.

    Args:
        lengths: tokens of each sequence.
        prompt_lens: prompt tokens of each sequence.
        count: anchors per sequence (fewer when a sequence has fewer valid anchors).
        generator: the CPU random generator.

    Returns:
        `(seq_index [R], anchors [R])` int64, grouped by sequence.

    Raises:
        ValueError: `count` < 1 or mismatched lengths (named).
    """
    if count < 1:
        raise ValueError(f"anchors_per_sequence: must be >= 1, got {count}")
    if len(lengths) != len(prompt_lens):
        raise ValueError(f"prompt_lens: {len(prompt_lens)} entries for {len(lengths)} sequences")
    # One draw for the whole batch (a randperm per sequence cost ~0.6 ms a step on the host): each
    # sequence's valid anchors get random keys and the `count` smallest win, a uniform subset.
    first = torch.tensor([max(p - 1, 0) for p in prompt_lens], dtype=torch.int64)   # s + 1 must be a reply token
    span = (torch.tensor(list(lengths), dtype=torch.int64) - 2 - first + 1).clamp(min=0)
    width = int(span.max()) if len(span) else 0
    if width == 0:
        empty = torch.zeros(0, dtype=torch.int64)
        return empty, empty.clone()
    keys = torch.rand(len(span), width, generator=generator)
    cols = torch.arange(width)
    keys = keys.masked_fill(cols[None, :] >= span[:, None], 2.0)   # past a sequence's valid anchors
    picks = keys.topk(min(count, width), dim=1, largest=False).indices
    chosen = picks < span[:, None]
    seq_index = torch.arange(len(span))[:, None].expand_as(picks)
    return seq_index[chosen], (picks + first[:, None])[chosen]


def build_blocks(token_ids: torch.Tensor, lengths: torch.Tensor, seq_index: torch.Tensor,
                 anchors: torch.Tensor, block_size: int, mask_token_id: int) -> BlockBatch:
    """Assembles teacher-forced blocks (see the module doc).

    Args:
        token_ids: `[B, L]` int64 right-padded sequences.
        lengths: `[B]` int64 true lengths.
        seq_index, anchors: `[R]` int64 from `sample_anchors` (each anchor < its length).
        block_size: G.
        mask_token_id: the token filling the block after the anchor.

    Returns:
        A `BlockBatch` on `token_ids.device`.

    Raises:
        ValueError: an anchor outside its sequence, or `block_size` < 1 (named).
    """
    if block_size < 1:
        raise ValueError(f"block_size: must be >= 1, got {block_size}")
    device = token_ids.device
    seq_index, anchors, lengths = seq_index.to(device), anchors.to(device), lengths.to(device)
    seq_len = lengths[seq_index]
    if anchors.numel() and bool(((anchors < 0) | (anchors >= seq_len)).any()):
        raise ValueError("anchors: every anchor must lie inside its sequence")
    width = token_ids.shape[1]
    offsets = torch.arange(block_size, device=device)
    positions = anchors[:, None] + offsets[None, :]                       # s + k - 1, k = 1..G
    label_pos = positions + 1                                             # s + k
    valid = label_pos < seq_len[:, None]
    labels = token_ids[seq_index[:, None], label_pos.clamp(max=width - 1)]
    labels = torch.where(valid, labels, torch.zeros_like(labels))
    anchor_tokens = token_ids[seq_index, anchors]
    block_tokens = torch.full_like(labels, mask_token_id)
    block_tokens[:, 0] = anchor_tokens
    prev_tokens = torch.cat([anchor_tokens[:, None], labels[:, :-1]], dim=1)
    return BlockBatch(seq_index=seq_index, anchors=anchors, block_tokens=block_tokens,
                      positions=positions, labels=labels, valid=valid, prev_tokens=prev_tokens,
                      target_positions=positions.clamp(max=width - 1))


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pads token lists: `([B, L] int64, lengths [B] int64)`."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.int64)
    width = int(lengths.max()) if len(sequences) else 0
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.int64)
    for i, s in enumerate(sequences):
        ids[i, :len(s)] = torch.tensor(list(s), dtype=torch.int64)
    return ids, lengths

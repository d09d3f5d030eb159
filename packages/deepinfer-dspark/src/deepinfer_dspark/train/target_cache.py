# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""TargetCache: the frozen target's view of every training sequence, computed once.

A training step needs, for its sequences, the target's features (the `target_layer_ids`
layers' outputs) at every position and the target's logits at the blocks' positions
(`DraftTrainer.loss`). Both depend on the sequence alone, and a 370 s run on the H200 sees each
sequence about 25 times: the target's forward was 28% of a step (session 20,
`benchmarks/train_step_profile.py`: 66 of 233 ms). So the features and the target's last hidden
states (after its final norm, what its LM head reads) are kept for every sequence, one flat row
per token, and a step gathers them; the LM head then runs only at the rows the loss reads
(`logits_at`), instead of at every position of the padded batch.

Memory: tokens x (m + 1) x d values in the target's dtype (SmolLM2-135M, 4,096 sequences of about
500 tokens, m = 5: about 14 GB in bf16).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from deepinfer_dspark.train.blocks import pad_batch
from deepinfer_dspark.train.data import TrainingSequence
from deepinfer_dspark.train.features import TargetModel


class TargetCache:
    """Features and last hidden states of `sequences` under `target`, on the target's device.

    Args:
        target: the frozen target (`TargetModel`).
        sequences: the training sequences, in the order `batch` indexes them.
        batch_size: sequences per forward while filling the cache.

    Raises:
        ValueError: no sequences, `batch_size` < 1 (named), or a target whose logits are not its
            LM head on its last hidden state (a logit scale or soft-capping: train without the
            cache, `TrainConfig.cache_target`).
    """

    def __init__(self, target: TargetModel, sequences: Sequence[TrainingSequence], batch_size: int = 64) -> None:
        if not sequences:
            raise ValueError("sequences: nothing to cache")
        if batch_size < 1:
            raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
        self.target = target
        lengths = [len(s.token_ids) for s in sequences]
        self.lengths = torch.tensor(lengths, dtype=torch.int64)
        self.offsets = torch.cumsum(torch.tensor([0] + lengths[:-1], dtype=torch.int64), 0)
        features, hidden = [], []
        for start in range(0, len(sequences), batch_size):
            chunk = sequences[start:start + batch_size]
            ids, chunk_lengths = pad_batch([s.token_ids for s in chunk])
            out = target.hidden(ids.to(target.device))
            if start == 0:
                _check_lm_head(target, out.last_hidden[:, -1:], out.last_logits)
            for row, n in enumerate(chunk_lengths.tolist()):
                features.append(out.features[row, :n])
                hidden.append(out.last_hidden[row, :n])
        self.features = torch.cat(features)       # [T, m*d]
        self.last_hidden = torch.cat(hidden)      # [T, d]
        self._device_offsets = self.offsets.to(target.device)
        self._device_lengths = self.lengths.to(target.device)

    def rows(self, indices: torch.Tensor, width: int) -> torch.Tensor:
        """`[B, width]` flat row ids of the sequences `indices` (int64 on the cache's device);
        positions past a sequence's end read its last row (finite values, never supervised)."""
        indices = indices.to(self.features.device)
        positions = torch.arange(width, device=self.features.device)
        last = self._device_lengths[indices][:, None] - 1
        return self._device_offsets[indices][:, None] + torch.minimum(positions[None, :], last)

    def batch_features(self, rows: torch.Tensor) -> torch.Tensor:
        """`[B, W, m*d]` features at `rows` (from `rows`)."""
        return self.features[rows]

    def logits_at(self, rows: torch.Tensor) -> torch.Tensor:
        """The target's next-token logits `[..., V]` at flat `rows` of any shape: its LM head on
        the cached last hidden states (what the target's forward computes at those positions)."""
        return self.target.lm_head(self.last_hidden[rows])


def _check_lm_head(target: TargetModel, hidden: torch.Tensor, logits: torch.Tensor) -> None:
    """`target.lm_head(hidden)` must reproduce the target's own logits (to the dtype's rounding)."""
    mine, theirs = target.lm_head(hidden).float(), logits.float()
    scale = float(theirs.abs().max()) or 1.0
    if mine.shape != theirs.shape or not torch.allclose(mine, theirs, rtol=2e-2, atol=2e-2 * scale):
        raise ValueError("target: its logits are not its LM head on its last hidden state (a logit scale or "
                         "soft-capping?); train with cache_target=False")

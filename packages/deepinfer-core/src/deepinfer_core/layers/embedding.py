# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Token embedding table (a later vocab-parallel version would shard rows)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class VocabEmbedding(nn.Module):
    """Looks up token ids in a `[V, H]` table.

    Args:
        vocab_size: V.
        hidden_size: H.
        dtype, device: parameter placement.

    Shapes: input_ids `[T]` int64 -> `[T, H]`.
    """

    def __init__(self, vocab_size: int, hidden_size: int, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.weight = nn.Parameter(torch.empty(vocab_size, hidden_size, dtype=dtype, device=device),
                                   requires_grad=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(input_ids, self.weight)

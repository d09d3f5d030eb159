# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Output projection from hidden states to vocabulary logits."""

from __future__ import annotations

import torch
from deepinfer_kernels import ops
from torch import nn

from deepinfer_core.layers.embedding import VocabEmbedding


class LMHead(nn.Module):
    """`logits = hidden @ weight.T`, returned in float32.

    Args:
        vocab_size: V.
        hidden_size: H.
        tied: an embedding whose `[V, H]` table is reused as the head (tied word embeddings);
            None gives the head its own weight.
        dtype, device: parameter placement (ignored when tied).

    Shapes: hidden `[N, H]` -> `[N, V]` float32.
    """

    def __init__(self, vocab_size: int, hidden_size: int, tied: VocabEmbedding | None = None,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__()
        self.tied = tied is not None
        self.batch_invariant = False
        if tied is not None:
            self.weight = tied.weight  # the same Parameter object: one table in memory
        else:
            self.weight = nn.Parameter(torch.empty(vocab_size, hidden_size, dtype=dtype, device=device),
                                       requires_grad=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return ops.linear(hidden, self.weight, batch_invariant=self.batch_invariant).float()

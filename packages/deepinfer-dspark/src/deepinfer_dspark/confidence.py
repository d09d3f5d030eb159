# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DSpark's confidence head and its runtime calibration.

The head predicts, for draft position k, the probability that x_k survives verification given
that x_1..x_{k-1} were accepted (Cheng et al. 2026, "DSpark", section 3.3):

    logit_k = w^T [h_k ; W1[x_{k-1}]] + b          (`confidence_head.proj`, Linear(d + r -> 1))

or `w^T h_k + b` when the config sets `confidence_head_with_markov = False`. It reads x_{k-1},
never x_k, which keeps confidence scheduling non-anticipating.

Sequential temperature scaling (STS, same paper) rescales each position's logit by its own
fitted temperature at runtime: `c_k = sigmoid(logit_k / T_k)`, order-preserving per position.
The fit lives in `deepinfer_dspark.calibration`; temperatures default to 1 (no calibration).
"""

from __future__ import annotations

import torch
from torch import nn


class ConfidenceHead(nn.Module):
    """`logit_k = proj([h_k ; W1[x_{k-1}]])` (or `proj(h_k)` without the Markov input).

    Args:
        hidden_size: d.
        markov_rank: r when the head reads `W1[x_{k-1}]`, else 0.
        dtype, device: parameter placement.
    """

    def __init__(self, hidden_size: int, markov_rank: int = 0, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.markov_rank = markov_rank
        self.proj = nn.Linear(hidden_size + markov_rank, 1, dtype=dtype, device=device)

    def forward(self, hidden: torch.Tensor, prev_embedding: torch.Tensor | None = None
                ) -> torch.Tensor:
        """Raw confidence logits.

        Args:
            hidden: `[..., d]`, the backbone's final-normed hidden states h_k.
            prev_embedding: `[..., r]`, `W1[x_{k-1}]`; required iff the head was built with
                `markov_rank > 0`.

        Returns:
            `[...]` float32 logits.

        Raises:
            ValueError: `prev_embedding` is given when not expected or missing when expected.
        """
        if (prev_embedding is not None) != (self.markov_rank > 0):
            raise ValueError(f"prev_embedding: the head expects {self.markov_rank} Markov "
                             f"features, got {None if prev_embedding is None else 'a tensor'}")
        features = hidden if prev_embedding is None else torch.cat(
            [hidden, prev_embedding.to(hidden.dtype)], dim=-1)
        return self.proj(features).squeeze(-1).float()


def calibrated_confidence(logits: torch.Tensor, temperatures: torch.Tensor | None = None
                          ) -> torch.Tensor:
    """Applies sequential temperature scaling: `c_k = sigmoid(logit_k / T_k)`.

    Args:
        logits: `[..., G]` raw confidence logits; the last axis is the draft position k = 1..G.
        temperatures: `[>= G]` positive per-position temperatures (the first G are used), or
            None for T_k = 1.

    Returns:
        `[..., G]` float32 confidences in (0, 1).

    Raises:
        ValueError: `temperatures` is not 1-D, is shorter than G, or has a value <= 0.
    """
    logits = logits.float()
    if temperatures is None:
        return torch.sigmoid(logits)
    num_positions = logits.shape[-1]
    if temperatures.dim() != 1 or temperatures.shape[0] < num_positions:
        raise ValueError(f"temperatures: need a 1-D tensor of >= {num_positions} entries, got "
                         f"shape {tuple(temperatures.shape)}")
    temps = temperatures[:num_positions].to(device=logits.device, dtype=torch.float32)
    if not bool((temps > 0).all()):
        raise ValueError(f"temperatures: must all be > 0, got {temps.tolist()}")
    return torch.sigmoid(logits / temps)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What one request brings to a `DSparkDraftRunner.draft` round and gets back: its sampling
settings (`DraftSampling`), its place in the round (`DraftRequest`) and its draft (`DraftOutput`).
`draft_runner` re-exports the three."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DraftSampling:
    """How one request samples (the target's settings: draft and target filter alike).

    Attributes:
        temperature: >= 0; 0 is greedy (argmax, q one-hot).
        top_k: <= 0 disables.
        top_p: in (0, 1]; 1 disables.
        min_p: in [0, 1]; 0 disables.
        seed: the request's seed (int64).
        step: output index of the first draft token x_1; draft k uses `step + k`.
    """

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int = 0
    step: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"temperature: must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p: must be in (0, 1], got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p: must be in [0, 1], got {self.min_p}")
        if not -2**63 <= self.seed < 2**63:
            raise ValueError(f"seed: must fit in int64, got {self.seed}")


@dataclass(frozen=True)
class DraftRequest:
    """One request's part of a draft round.

    Attributes:
        request_id: a request previously `observe`d.
        anchor_token: x0, the last sampled (bonus/correction) token.
        anchor_position: s, x0's position; the draft context must hold positions 0 .. s-1.
        sampling: the request's sampling settings.
    """

    request_id: str
    anchor_token: int
    anchor_position: int
    sampling: DraftSampling = DraftSampling()


@dataclass(frozen=True)
class DraftOutput:
    """One request's draft.

    Attributes:
        tokens: `[γ]` int64 draft tokens x_1..x_γ.
        probs: `[γ, V]` float32; row k is exactly the distribution x_{k+1} was drawn from
            (Markov-corrected and filtered; one-hot on the argmax when temperature is 0), or None
            when every request of the round is greedy (each row would be one-hot on `tokens`;
            not building them saves `R * γ * V` floats a round).
        confidences: `[γ]` float32 calibrated c_k = sigmoid(logit_k / T_k), or None without a
            confidence head.
        confidence_logits: `[γ]` float32 raw logits, or None without a confidence head.
    """

    tokens: torch.Tensor
    probs: torch.Tensor | None
    confidences: torch.Tensor | None
    confidence_logits: torch.Tensor | None

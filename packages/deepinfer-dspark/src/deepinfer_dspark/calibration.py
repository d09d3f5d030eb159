# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sequential temperature scaling (STS) of the drafter's confidence head, and ECE.

The scheduler needs calibrated absolute survival probabilities, not just a ranking. STS
(DSpark, Cheng et al. 2026, section on confidence calibration) fits one temperature per
draft position, left to right: T_k minimises the expected calibration error of the
cumulative product prod_{i <= k} sigmoid(logit_i / T_i) against the empirical prefix
acceptance indicator [accepted length >= k], with T_1..T_{k-1} already fixed. At runtime
c_k = sigmoid(logit_k / T_k), which keeps the order within a position.

ECE (Guo et al. 2017, "On Calibration of Modern Neural Networks", section 2): n equal-width
bins over [0, 1] (bin b holds confidences in (b/n, (b+1)/n], 0 goes to bin 0);
ECE = sum_b |sum of confidences in b - sum of labels in b| / N.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import torch

_FORMAT = "deepinfer-sts-calibration"


def bin_index(confidences: torch.Tensor, n_bins: int = 15) -> torch.Tensor:
    """int64 bin of each confidence in [0, 1]: ceil(c * n) - 1, clamped to [0, n - 1]."""
    return (torch.ceil(confidences * n_bins).to(torch.int64) - 1).clamp(0, n_bins - 1)


def expected_calibration_error(confidences: torch.Tensor, labels: torch.Tensor, n_bins: int = 15) -> torch.Tensor:
    """Binned ECE of predicted probabilities against 0/1 outcomes.

    Args:
        confidences: [..., N] probabilities in [0, 1]; leading dims are independent sets.
        labels: [N] (or [..., N]) 0/1 outcomes, broadcastable to `confidences`.
        n_bins: number of equal-width bins (15, as in DSpark's STS references).

    Returns:
        float64 tensor of shape `confidences.shape[:-1]`.

    Raises:
        ValueError: empty input or n_bins < 1.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins: must be >= 1, got {n_bins}")
    conf = confidences.to(torch.float64)
    if conf.shape[-1] == 0:
        raise ValueError("confidences: need at least one sample")
    lab = torch.broadcast_to(labels.to(torch.float64), conf.shape)
    lead = conf.shape[:-1]
    flat_conf, flat_lab = conf.reshape(-1, conf.shape[-1]), lab.reshape(-1, conf.shape[-1])
    bins = bin_index(flat_conf, n_bins)
    gap = torch.zeros(flat_conf.shape[0], n_bins, dtype=torch.float64)
    gap.scatter_add_(1, bins, flat_conf - flat_lab)
    return (gap.abs().sum(dim=1) / conf.shape[-1]).reshape(lead)


def prefix_labels(accepted_len: torch.Tensor, gamma: int) -> torch.Tensor:
    """[N, gamma] float64 indicator [accepted_len >= k] for k = 1..gamma."""
    k = torch.arange(1, gamma + 1)
    return (accepted_len.unsqueeze(1) >= k).to(torch.float64)


def cumulative_ece(confidences: torch.Tensor, accepted_len: torch.Tensor, n_bins: int = 15) -> torch.Tensor:
    """Per-position ECE of the survival prod_{i <= k} c_i against [accepted_len >= k].

    Args:
        confidences: [N, gamma] conditional confidences in [0, 1].
        accepted_len: [N] int64 accepted drafts per rollout (all gamma drafts verified).

    Returns:
        [gamma] float64.
    """
    survival = torch.cumprod(confidences.to(torch.float64), dim=1)
    labels = prefix_labels(accepted_len, confidences.shape[1])
    return expected_calibration_error(survival.t(), labels.t(), n_bins)


def default_grid() -> torch.Tensor:
    """241 temperatures exp(0.025 * i), i = -120..120: log-spaced over [e^-3, e^3], with 1.0."""
    return torch.exp(torch.arange(-120, 121, dtype=torch.float64) * 0.025)


@dataclasses.dataclass(frozen=True)
class SequentialTemperatureScaling:
    """Per-position temperatures T_1..T_gamma of the confidence head.

    Attributes:
        temperatures: gamma positive floats.
    """

    temperatures: tuple[float, ...]

    def __post_init__(self):
        if not self.temperatures or any(not math.isfinite(t) or t <= 0 for t in self.temperatures):
            raise ValueError(f"temperatures: must be positive and finite, got {self.temperatures}")

    @classmethod
    def fit(cls, logits: torch.Tensor, accepted_len: torch.Tensor, grid: torch.Tensor | None = None,
            n_bins: int = 15) -> SequentialTemperatureScaling:
        """Fits T_k position by position on held-out rollouts (grid search, ties toward T = 1).

        Args:
            logits: [N, gamma] raw confidence-head logits of rollouts in which all gamma
                drafts were verified.
            accepted_len: [N] int64 in [0, gamma], accepted drafts of each rollout.
            grid: 1-D positive candidate temperatures (default `default_grid()`).
            n_bins: ECE bins.

        Returns:
            The fitted calibration.

        Raises:
            ValueError: shapes or values out of range (the message names the field).
        """
        if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.shape[0] == 0:
            raise ValueError("logits: expected a non-empty [N, gamma] tensor")
        num, gamma = logits.shape
        if accepted_len.shape != (num,) or bool(((accepted_len < 0) | (accepted_len > gamma)).any()):
            raise ValueError(f"accepted_len: expected [{num}] ints in [0, {gamma}]")
        grid = default_grid() if grid is None else grid.to(torch.float64)
        if grid.dim() != 1 or grid.numel() == 0 or bool((grid <= 0).any()):
            raise ValueError("grid: expected a non-empty 1-D tensor of positive temperatures")
        x = logits.to(torch.float64)
        labels = prefix_labels(accepted_len, gamma)
        survival = torch.ones(num, dtype=torch.float64)
        temperatures = []
        for k in range(gamma):
            candidates = survival * torch.sigmoid(x[:, k].unsqueeze(0) / grid.unsqueeze(1))  # [G, N]
            ece = expected_calibration_error(candidates, labels[:, k], n_bins)
            ties = (ece <= ece.min() + 1e-12).nonzero()[:, 0]
            best = ties[torch.argmin(grid[ties].log().abs())]
            temperatures.append(float(grid[best]))
            survival = candidates[best]
        return cls(tuple(temperatures))

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """Calibrated conditional confidences sigmoid(logit_k / T_k).

        Args:
            logits: [..., gamma] raw logits (gamma = len(temperatures)).

        Returns:
            Same shape, dtype of `logits` (float64 for integer input).

        Raises:
            ValueError: the last dimension is not gamma.
        """
        if logits.shape[-1] != len(self.temperatures):
            raise ValueError(f"logits: last dim must be {len(self.temperatures)}, got {logits.shape[-1]}")
        x = logits if logits.is_floating_point() else logits.to(torch.float64)
        t = torch.tensor(self.temperatures, dtype=x.dtype, device=x.device)
        return torch.sigmoid(x / t)

    def to_dict(self) -> dict:
        return {"format": _FORMAT, "version": 1, "temperatures": list(self.temperatures)}

    @classmethod
    def from_dict(cls, data: dict) -> SequentialTemperatureScaling:
        if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("version") != 1:
            raise ValueError(f"format: expected {_FORMAT!r} version 1")
        return cls(tuple(float(t) for t in data.get("temperatures", [])))

    def save(self, path: str | Path) -> None:
        """Writes JSON (kept next to the drafter checkpoint)."""
        Path(path).write_text(json.dumps(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SequentialTemperatureScaling:
        return cls.from_dict(json.loads(Path(path).read_text()))

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The DSpark training losses (Cheng et al. 2026, "DSpark", section 5; DeepSpec
`deepspec/modeling/dspark/loss.py` defaults).

For block position k = 1..G of a teacher-forced block (q_k the Markov-corrected draft
distribution softmax(U_k + B_k) at temperature 1, p_k the target's distribution at the same
position, x*_k the label, w_k = exp(-(k - 1) / decay) with decay 4 as in every DeepSpec config):

    L_ce   = -sum w_k log q_k(x*_k)          / sum w_k
    L_tv   =  sum w_k ||q_k - p_k||_1        / sum w_k
    L_conf =  sum w_k BCE(sigmoid(c_k), c*_k) / sum w_k,   c*_k = clamp(1 - ||q_k - p_k||_1 / 2, 0, 1), detached
    L      =  0.1 L_ce + 0.9 L_tv + 1.0 L_conf

Sums run over the valid positions of every block (labels past the end of a sequence are not
supervised); dividing by the summed weights makes each term a weighted mean, so the loss scale
does not depend on how many blocks a batch holds. c*_k = 1 - TV(q_k, p_k) is the probability
that x_k ~ q_k is accepted by the lossless verifier (sum_v min(p, q)), the quantity the
confidence head estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class LossWeights:
    """Mixing weights of the three terms and the per-position decay (DeepSpec defaults)."""

    ce: float = 0.1
    tv: float = 0.9
    conf: float = 1.0
    decay: float = 4.0

    def __post_init__(self) -> None:
        for name in ("ce", "tv", "conf"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}: loss weight must be >= 0, got {getattr(self, name)}")
        if not self.decay > 0:
            raise ValueError(f"decay: must be > 0, got {self.decay}")


@dataclass
class LossOutput:
    """The combined loss (differentiable) and detached float terms for logging.

    Attributes:
        total: scalar tensor, the weighted sum.
        ce, tv, conf: the weighted-mean terms (conf is 0.0 without a confidence head).
        acceptance: weighted mean of c*_k, the expected per-position acceptance.
        top1: weighted fraction of positions where argmax q_k == x*_k.
    """

    total: torch.Tensor
    ce: float
    tv: float
    conf: float
    acceptance: float
    top1: float


def position_weights(block_size: int, decay: float = 4.0, device: torch.device | str | None = None,
                     dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """`[G]` w_k = exp(-(k - 1) / decay), k = 1..G, in `dtype`."""
    k = torch.arange(block_size, dtype=dtype, device=device)
    return torch.exp(-k / decay)


def dspark_loss(draft_logits: torch.Tensor, target_logits: torch.Tensor, labels: torch.Tensor,
                valid: torch.Tensor, confidence_logits: torch.Tensor | None = None,
                weights: LossWeights = LossWeights()) -> LossOutput:
    """The DSpark loss of a batch of teacher-forced blocks (formulas in the module doc).

    Args:
        draft_logits: `[R, G, V]` Markov-corrected draft logits U_k + B_k (computed in float32,
            or float64 when given float64).
        target_logits: `[R, G, V]` the target's logits for the same positions.
        labels: `[R, G]` int64 x*_k (values at invalid positions are ignored).
        valid: `[R, G]` bool, which positions are supervised.
        confidence_logits: `[R, G]` raw confidence-head logits, or None (no confidence term).
        weights: term weights and position decay.

    Returns:
        A `LossOutput`; with no valid position every term is 0 (and `total` still has a graph).

    Raises:
        ValueError: shapes do not agree (names the argument).
    """
    rows, width, vocab = draft_logits.shape
    if target_logits.shape != draft_logits.shape:
        raise ValueError(f"target_logits: shape {tuple(target_logits.shape)} != draft_logits "
                         f"{tuple(draft_logits.shape)}")
    for name, t in (("labels", labels), ("valid", valid), ("confidence_logits", confidence_logits)):
        if t is not None and t.shape != (rows, width):
            raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {(rows, width)}")
    dtype = torch.promote_types(draft_logits.dtype, torch.float32)       # float32, or float64 if given
    w = position_weights(width, weights.decay, draft_logits.device, dtype)[None, :] * valid.to(dtype)
    norm = w.sum().clamp_min(1e-12)

    log_q = F.log_softmax(draft_logits.to(dtype), dim=-1)
    q = log_q.exp()
    p = F.softmax(target_logits.to(dtype), dim=-1)
    safe_labels = torch.where(valid, labels, torch.zeros_like(labels))
    nll = -log_q.gather(-1, safe_labels[..., None]).squeeze(-1)
    l1 = (q - p).abs().sum(dim=-1)
    accept = (1.0 - 0.5 * l1).clamp(0.0, 1.0).detach()

    ce = (w * nll).sum() / norm
    tv = (w * l1).sum() / norm
    total = weights.ce * ce + weights.tv * tv
    conf = torch.zeros((), dtype=dtype, device=draft_logits.device)
    if confidence_logits is not None:
        bce = F.binary_cross_entropy_with_logits(confidence_logits.to(dtype), accept, reduction="none")
        conf = (w * bce).sum() / norm
        total = total + weights.conf * conf
    top1 = (log_q.argmax(dim=-1) == labels).to(dtype)
    return LossOutput(total=total, ce=float(ce.detach()), tv=float(tv.detach()), conf=float(conf.detach()),
                      acceptance=float((w * accept).sum() / norm), top1=float((w * top1).sum() / norm))

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The DSpark training losses against a float64 hand computation (plain Python `math`).

Formulas (docs/dspark.md section 5; DeepSpec defaults): w_k = exp(-(k-1)/4);
L = 0.1 * CE + 0.9 * TV + 1.0 * BCE(c, c*), c* = clamp(1 - ||q - p||_1 / 2, 0, 1), each term a
weighted mean over the valid positions; q = softmax of the Markov-corrected logits, p the
target's softmax, both at temperature 1.
"""

from __future__ import annotations

import math

import pytest
import torch

from deepinfer_dspark.train.losses import LossWeights, dspark_loss, position_weights


def softmax(row: list[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(x - top) for x in row]
    total = sum(exps)
    return [e / total for e in exps]


def hand_loss(draft, target, labels, valid, conf, ce_w=0.1, tv_w=0.9, conf_w=1.0, decay=4.0):
    """The loss by explicit loops over Python floats."""
    sums = {"ce": 0.0, "tv": 0.0, "conf": 0.0, "w": 0.0}
    for r in range(len(draft)):
        for k in range(len(draft[r])):
            if not valid[r][k]:
                continue
            w = math.exp(-k / decay)                                  # k is 0-based: exp(-(k+1-1)/decay)
            q, p = softmax(draft[r][k]), softmax(target[r][k])
            l1 = sum(abs(a - b) for a, b in zip(q, p))
            c_star = min(1.0, max(0.0, 1.0 - 0.5 * l1))
            sig = 1.0 / (1.0 + math.exp(-conf[r][k]))
            bce = -(c_star * math.log(sig) + (1.0 - c_star) * math.log(1.0 - sig))
            sums["ce"] += w * -math.log(q[labels[r][k]])
            sums["tv"] += w * l1
            sums["conf"] += w * bce
            sums["w"] += w
    ce, tv, cf = (sums[key] / sums["w"] for key in ("ce", "tv", "conf"))
    return ce_w * ce + tv_w * tv + conf_w * cf, ce, tv, cf


def random_case(seed: int, rows: int = 3, width: int = 5, vocab: int = 7):
    gen = torch.Generator().manual_seed(seed)
    draft = torch.randn(rows, width, vocab, generator=gen, dtype=torch.float64) * 2
    target = torch.randn(rows, width, vocab, generator=gen, dtype=torch.float64) * 2
    labels = torch.randint(0, vocab, (rows, width), generator=gen)
    conf = torch.randn(rows, width, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([width, 3, 1])[:rows]                     # contiguous valid prefixes
    valid = torch.arange(width)[None, :] < lengths[:, None]
    return draft, target, labels, valid, conf


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_equals_float64_hand_computation(seed: int) -> None:
    draft, target, labels, valid, conf = random_case(seed)
    out = dspark_loss(draft, target, labels, valid, conf)
    total, ce, tv, cf = hand_loss(draft.tolist(), target.tolist(), labels.tolist(), valid.tolist(), conf.tolist())
    assert out.total.dtype == torch.float64
    assert math.isclose(float(out.total), total, rel_tol=1e-12)
    assert math.isclose(out.ce, ce, rel_tol=1e-12)
    assert math.isclose(out.tv, tv, rel_tol=1e-12)
    assert math.isclose(out.conf, cf, rel_tol=1e-12)


def test_custom_weights_and_decay() -> None:
    draft, target, labels, valid, conf = random_case(5)
    weights = LossWeights(ce=0.7, tv=0.2, conf=0.4, decay=2.0)
    out = dspark_loss(draft, target, labels, valid, conf, weights)
    total, *_ = hand_loss(draft.tolist(), target.tolist(), labels.tolist(), valid.tolist(), conf.tolist(),
                          0.7, 0.2, 0.4, 2.0)
    assert math.isclose(float(out.total), total, rel_tol=1e-12)


def test_float32_inputs_match_to_float32_precision() -> None:
    draft, target, labels, valid, conf = random_case(3)
    out = dspark_loss(draft.float(), target.float(), labels, valid, conf.float())
    total, *_ = hand_loss(draft.tolist(), target.tolist(), labels.tolist(), valid.tolist(), conf.tolist())
    assert out.total.dtype == torch.float32
    assert math.isclose(float(out.total), total, rel_tol=1e-5)


def test_position_weights() -> None:
    expected = [math.exp(-k / 4.0) for k in range(7)]
    assert position_weights(7).tolist() == pytest.approx(expected, rel=1e-6)


def test_invalid_positions_are_ignored() -> None:
    draft, target, labels, valid, conf = random_case(4)
    base = float(dspark_loss(draft, target, labels, valid, conf).total)
    noise = torch.randn(draft.shape, dtype=torch.float64) * 5
    changed = dspark_loss(torch.where(valid[..., None], draft, noise), torch.where(valid[..., None], target, -noise),
                          torch.where(valid, labels, (labels + 1) % draft.shape[-1]), valid,
                          torch.where(valid, conf, conf + 3))
    assert float(changed.total) == pytest.approx(base, rel=1e-14)


def test_confidence_target_is_detached() -> None:
    """The BCE term trains only the confidence head: no gradient reaches the draft logits."""
    draft, target, labels, valid, conf = random_case(6)
    draft.requires_grad_(True)
    conf.requires_grad_(True)
    out = dspark_loss(draft, target, labels, valid, conf, LossWeights(ce=0.0, tv=0.0, conf=1.0))
    out.total.backward()
    assert draft.grad is None or float(draft.grad.abs().max()) == 0.0
    assert float(conf.grad.abs().max()) > 0.0


def test_without_confidence_head() -> None:
    draft, target, labels, valid, _ = random_case(7)
    out = dspark_loss(draft, target, labels, valid, None)
    total, ce, tv, _ = hand_loss(draft.tolist(), target.tolist(), labels.tolist(), valid.tolist(),
                                 [[0.0] * draft.shape[1]] * draft.shape[0])
    assert out.conf == 0.0
    assert math.isclose(float(out.total), 0.1 * ce + 0.9 * tv, rel_tol=1e-12)


def test_shape_errors_name_the_argument() -> None:
    draft, target, labels, valid, conf = random_case(8)
    with pytest.raises(ValueError, match="target_logits"):
        dspark_loss(draft, target[:, :-1], labels, valid, conf)
    with pytest.raises(ValueError, match="labels"):
        dspark_loss(draft, target, labels[:, :-1], valid, conf)
    with pytest.raises(ValueError, match="confidence_logits"):
        dspark_loss(draft, target, labels, valid, conf[:1])
    with pytest.raises(ValueError, match="decay"):
        LossWeights(decay=0.0)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sequential temperature scaling on synthetic overconfident confidence logits; ECE."""

from __future__ import annotations

import pytest
import torch

from deepinfer_dspark import SequentialTemperatureScaling, cumulative_ece, expected_calibration_error

GAMMA = 4
OVERCONFIDENCE = torch.tensor([2.5, 2.0, 3.0, 1.5], dtype=torch.float64)


def rollouts(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw head logits (true logit * overconfidence) and accepted lengths drawn from the truth.

    Draft k is accepted with probability sigmoid(z_k) given drafts 1..k-1 were accepted.
    """
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, GAMMA, generator=g, dtype=torch.float64) * 1.5 + 1.0
    accept = torch.rand(n, GAMMA, generator=g, dtype=torch.float64) < torch.sigmoid(z)
    accepted_len = torch.cumprod(accept.to(torch.int64), dim=1).sum(dim=1)
    return z * OVERCONFIDENCE, accepted_len


def brute_force_ece(conf: list[float], labels: list[float], n_bins: int = 15) -> float:
    """ECE with bins (b/n, (b+1)/n] (0 in the first bin), written out with loops."""
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        members = [i for i, c in enumerate(conf) if (lo < c <= hi) or (b == 0 and c == 0.0)]
        if members:
            gap = sum(conf[i] for i in members) / len(members) - sum(labels[i] for i in members) / len(members)
            total += len(members) / len(conf) * abs(gap)
    return total


def test_ece_matches_brute_force():
    g = torch.Generator().manual_seed(0)
    conf = torch.rand(500, generator=g, dtype=torch.float64)
    conf[:5] = torch.tensor([0.0, 1.0, 1 / 15, 2 / 15, 0.5])  # bin edges
    labels = (torch.rand(500, generator=g) < 0.6).to(torch.float64)
    assert float(expected_calibration_error(conf, labels)) == pytest.approx(
        brute_force_ece(conf.tolist(), labels.tolist()), abs=1e-12)
    two = expected_calibration_error(torch.stack([conf, conf ** 2]), labels)
    assert two.shape == (2,)
    assert float(two[1]) == pytest.approx(brute_force_ece((conf ** 2).tolist(), labels.tolist()), abs=1e-12)


def test_sts_recovers_overconfidence_and_lowers_cumulative_ece():
    logits, accepted_len = rollouts(20000, seed=1)
    sts = SequentialTemperatureScaling.fit(logits, accepted_len)
    temps = torch.tensor(sts.temperatures, dtype=torch.float64)
    torch.testing.assert_close(temps, OVERCONFIDENCE, rtol=0.2, atol=0)  # ECE, not likelihood
    held_logits, held_len = rollouts(20000, seed=2)
    raw = cumulative_ece(torch.sigmoid(held_logits), held_len)
    calibrated = cumulative_ece(sts.apply(held_logits), held_len)
    assert bool((calibrated < raw).all()), (raw, calibrated)
    assert float(calibrated.max()) < 0.02 < float(raw.min())


def test_sts_preserves_order_within_each_position():
    logits, accepted_len = rollouts(5000, seed=3)
    conf = SequentialTemperatureScaling.fit(logits, accepted_len).apply(logits)
    for k in range(GAMMA):
        assert torch.equal(torch.argsort(conf[:, k], stable=True), torch.argsort(logits[:, k], stable=True))


def test_ties_go_to_temperature_one():
    # Zero logits give 0.5 at every temperature: all ECEs tie, T = 1 wins.
    logits = torch.zeros(100, 2, dtype=torch.float64)
    accepted_len = torch.randint(0, 3, (100,), generator=torch.Generator().manual_seed(4))
    assert SequentialTemperatureScaling.fit(logits, accepted_len).temperatures == (1.0, 1.0)


def test_apply_and_json_round_trip(tmp_path):
    sts = SequentialTemperatureScaling((2.0, 0.5))
    x = torch.tensor([[1.0, 1.0], [-4.0, 0.2]])
    expected = torch.sigmoid(x / torch.tensor([2.0, 0.5]))
    torch.testing.assert_close(sts.apply(x), expected)
    sts.save(tmp_path / "sts.json")
    assert SequentialTemperatureScaling.load(tmp_path / "sts.json") == sts


@pytest.mark.parametrize(("call", "field"), [
    (lambda: SequentialTemperatureScaling((1.0, 0.0)), "temperatures"),
    (lambda: SequentialTemperatureScaling((1.0,)).apply(torch.zeros(3, 2)), "logits"),
    (lambda: SequentialTemperatureScaling.fit(torch.zeros(3, 2), torch.tensor([0, 1, 3])), "accepted_len"),
    (lambda: SequentialTemperatureScaling.fit(torch.zeros(3, 2), torch.tensor([0, 1, 2]),
                                              grid=torch.tensor([1.0, -1.0])), "grid"),
    (lambda: SequentialTemperatureScaling.from_dict({"temperatures": [1.0]}), "format"),
])
def test_bad_input(call, field):
    with pytest.raises(ValueError, match=field):
        call()

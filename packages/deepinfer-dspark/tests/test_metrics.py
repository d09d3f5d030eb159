# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""SpecMetrics arithmetic against hand counts and a recomputation from raw rounds."""

from __future__ import annotations

import random

import pytest

from deepinfer_dspark import SpecMetrics, expected_calibration_error

import torch


def test_hand_counted_rounds():
    m = SpecMetrics()
    m.record(proposed=5, verified=3, accepted=2)             # emits 3
    m.record(proposed=5, verified=0, accepted=0)             # plain decode, emits 1
    m.record(proposed=5, verified=4, accepted=4)             # emits 5
    m.record(proposed=5, verified=2, accepted=1, bonus=False)  # accepted a stop token: emits 1
    assert (m.rounds, m.proposed, m.verified, m.accepted, m.bonus) == (4, 20, 9, 7, 3)
    assert m.mean_accepted_length == pytest.approx(10 / 4)
    assert m.acceptance_rate == pytest.approx(7 / 9)
    assert m.verify_rate == pytest.approx(10 / 13)
    assert m.verified_at == [3, 3, 2, 1]
    assert m.accepted_at == [3, 2, 1, 1]
    assert m.acceptance_by_position() == pytest.approx([1.0, 2 / 3, 1 / 2, 1.0])


def test_empty_metrics_are_zero():
    m = SpecMetrics()
    assert (m.mean_accepted_length, m.acceptance_rate, m.verify_rate, m.calibration_error) == (0, 0, 0, 0)
    assert m.acceptance_by_position() == []


def test_aggregate_and_calibration_error_match_recomputation():
    rng = random.Random(0)
    per_request = [SpecMetrics() for _ in range(5)]
    raw = []  # (request, proposed, verified, accepted, survivals)
    for _ in range(200):
        r = rng.randrange(5)
        proposed = rng.randrange(0, 7)
        verified = rng.randrange(0, proposed + 1)
        accepted = rng.randrange(0, verified + 1)
        survivals = sorted((rng.random() for _ in range(proposed)), reverse=True)
        per_request[r].record(proposed, verified, accepted, survivals)
        raw.append((r, proposed, verified, accepted, survivals))
    total = SpecMetrics.aggregate(per_request)
    assert total.rounds == 200
    assert total.accepted == sum(x[3] for x in raw)
    assert total.mean_accepted_length == pytest.approx(sum(x[3] + 1 for x in raw) / 200)
    for k in range(6):
        verified = sum(1 for x in raw if x[2] > k)
        accepted = sum(1 for x in raw if x[3] > k)
        assert total.verified_at[k] == verified and total.accepted_at[k] == accepted
    conf = [x[4][k] for x in raw for k in range(x[2])]
    label = [float(k < x[3]) for x in raw for k in range(x[2])]
    expected = float(expected_calibration_error(torch.tensor(conf, dtype=torch.float64), torch.tensor(label)))
    assert total.calibration_error == pytest.approx(expected, abs=1e-12)
    # merge leaves its inputs untouched
    assert sum(m.rounds for m in per_request) == 200 and per_request[0].rounds < 200


@pytest.mark.parametrize(("args", "field"), [
    ((2, 3, 0), "verified"),
    ((3, 2, 3), "accepted"),
    ((3, 2, -1), "accepted"),
])
def test_bad_counts(args, field):
    with pytest.raises(ValueError, match=field):
        SpecMetrics().record(*args)


def test_bad_survivals():
    with pytest.raises(ValueError, match="survivals"):
        SpecMetrics().record(3, 3, 1, survivals=[0.9])

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DraftCosts`: the rates the pause decisions compare, by hand on two-point profiles."""

from __future__ import annotations

import math

import pytest

from deepinfer_dspark.draft_costs import (LONGEST_PROBE_PAUSE, PROBE_OVERHEAD_STEPS, PROBE_SHARE, DraftCosts,
                                          probe_overhead)
from deepinfer_dspark.sps import SPSProfile


def test_rates_gains_losses_and_probe_pauses() -> None:
    rounds = SPSProfile([5, 50], [400.0, 100.0])    # k = 4: 1 request -> 5 tokens, 10 -> 50
    plain = SPSProfile([1, 10], [1000.0, 800.0])
    corrections = {1: 1.0, 10: 2.0}
    costs = DraftCosts(4, rounds, plain, corrections.__getitem__)
    assert costs.round_rate(1) == 400.0 and costs.round_rate(10) == 100.0
    assert costs.plain_rate(1) == 1000.0 and costs.plain_rate(10) == 10 * 800.0 * 2.0
    assert costs.gain(1, 3.0) == pytest.approx(3 * 400 / 1000)      # 1.2
    assert not costs.loses(1, 2.0) and costs.loses(1, 1.5)          # 3 x 400 > 1000; 2.5 x 400 = 1000
    assert costs.loses(10, 4.0)                                     # 50 x 100 < 16,000
    # A round of gain 0.6 at 1 request lost 1000 / 400 x 0.4 = 1 plain step, and the next probe
    # (after the pause) its overhead, larger at few requests (`probe_overhead`: 6 plain steps at 1,
    # 2.4 at 10): paused (1 + 6) / PROBE_SHARE.
    assert probe_overhead(1) == PROBE_OVERHEAD_STEPS + 4.0 == 6.0 and probe_overhead(10) == pytest.approx(2.4)
    assert costs.probe_pause(1, 0.6) == round((1 + probe_overhead(1)) / PROBE_SHARE)
    assert costs.probe_pause(1, 1.0) == math.ceil(probe_overhead(1) / PROBE_SHARE)   # the overhead alone
    assert costs.probe_pause(1, 1.0, overhead=0.5) == math.ceil(0.5 / PROBE_SHARE)
    assert costs.probe_pause(10, 0.0) == math.ceil((16_000 / 10 / 100 + probe_overhead(10)) / PROBE_SHARE)
    assert costs.gain_factor(1) == pytest.approx(0.4) and costs.gain_factor(10) == pytest.approx(1000 / 16_000)
    assert costs.gain(10, 10 * 3.0) == pytest.approx(3.0 * costs.gain_factor(10))
    crawling = DraftCosts(4, SPSProfile([5, 50], [400.0, 1.0]), plain, corrections.__getitem__)
    assert crawling.probe_pause(10, 0.0) == LONGEST_PROBE_PAUSE      # 1,600 steps lost: capped
    for gain in (math.nan, -math.inf):                                 # never an exception
        assert costs.probe_pause(1, gain) == LONGEST_PROBE_PAUSE

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.min_gain`: a hurdle the expected gain of drafting must clear. It scales
plain decoding's side of every comparison (`DraftCosts.plain_rate`), so a load whose full
acceptance clears break-even but not the hurdle is ruled out (`cannot_pay`) and goes dormant."""

from __future__ import annotations

import math

import pytest

from deepinfer_dspark.draft_costs import DraftCosts
from deepinfer_dspark.factories import _dspark_settings
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

ROUNDS = SPSProfile([5, 50], [400.0, 100.0])    # k = 4: 1 request -> 5 tokens, 10 -> 50
PLAIN = SPSProfile([1, 10], [1000.0, 800.0])


def test_the_hurdle_scales_every_comparison() -> None:
    even, hurdle = (DraftCosts(4, ROUNDS, PLAIN, lambda b: 1.0, m) for m in (1.0, 1.25))
    assert hurdle.plain_rate(1) == pytest.approx(1.25 * even.plain_rate(1))
    assert hurdle.gain(1, 3.0) == pytest.approx(even.gain(1, 3.0) / 1.25)       # 1.2 -> 0.96
    assert not even.loses(1, 2.0) and hurdle.loses(1, 2.0)                    # 3 x 400 = 1.2 x 1000 < 1.25 x 1000
    assert not hurdle.loses(1, 2.2)                                           # 3.2 x 400 = 1.28 x 1000
    assert hurdle.gain_factor(1) == pytest.approx(even.gain_factor(1) / 1.25)
    assert hurdle.probe_pause(1, 0.5) > even.probe_pause(1, 0.5)              # a probe loses more, in plain steps
    for bad in (0.99, math.nan, math.inf, True, "1.2"):
        with pytest.raises(ValueError, match="^speculative_config.min_gain"):
            DraftCosts(4, ROUNDS, PLAIN, lambda b: 1.0, bad)


def test_a_load_that_clears_break_even_but_not_the_hurdle_is_ruled_out(fake_runner) -> None:
    """Full acceptance at 1 request: 5 tokens x 400 rounds/s = 2 x plain decoding's 1000 tokens/s."""
    def proposer(min_gain: float) -> DSparkProposer:
        return DSparkProposer(fake_runner(4, 0.9), 4, ROUNDS, decode=PLAIN, min_gain=min_gain)
    assert not proposer(1.0).cannot_pay(1) and not proposer(1.99).cannot_pay(1)
    assert proposer(2.01).cannot_pay(1)
    assert not proposer(2.01).retired   # (retirement reads the profiles alone: lossless, no hurdle)


def test_the_config_key(tmp_path) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": ROUNDS}
    assert _dspark_settings({**base, "decode_profile": PLAIN})["min_gain"] == 1.0
    assert _dspark_settings({**base, "decode_profile": PLAIN, "min_gain": 1.2})["min_gain"] == 1.2
    assert _dspark_settings({**base, "decode_profile": PLAIN, "min_gain": 2})["min_gain"] == 2.0
    with pytest.raises(ValueError, match="^speculative_config.min_gain: .* needs decode_profile"):
        _dspark_settings({**base, "min_gain": 1.2})
    with pytest.raises(ValueError, match="^speculative_config.min_gain: only used with scheduling='confidence'"):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": 4,
                          "scheduling": "fixed", "min_gain": 1.2})
    for bad in (0.5, 11, float("nan"), float("inf"), True, "1.2", [1.2]):
        with pytest.raises(ValueError, match="^speculative_config.min_gain"):
            _dspark_settings({**base, "decode_profile": PLAIN, "min_gain": bad})


def test_the_hurdle_applies_above_bound_only(fake_runner) -> None:
    """Up to `bound_only` requests the ledgers pause nothing and the bound alone rules: the hurdle is
    left out there (session 63), and holds above it."""
    even, above = DraftCosts(4, ROUNDS, PLAIN, lambda b: 1.0), DraftCosts(4, ROUNDS, PLAIN, lambda b: 1.0, 1.25, 1)
    assert above.plain_rate(1) == pytest.approx(even.plain_rate(1))
    assert above.plain_rate(2) == pytest.approx(1.25 * even.plain_rate(2))

    def proposer(min_gain: float, bound_only: int) -> DSparkProposer:
        return DSparkProposer(fake_runner(4, 0.9), 4, ROUNDS, decode=PLAIN, min_gain=min_gain, bound_only=bound_only)
    assert proposer(2.01, 0).cannot_pay(1) and not proposer(2.01, 1).cannot_pay(1)
    assert not proposer(1.0, 1).cannot_pay(2) and proposer(2.01, 1).cannot_pay(2)   # 10 x ~367 / (2 x ~978): 1.88

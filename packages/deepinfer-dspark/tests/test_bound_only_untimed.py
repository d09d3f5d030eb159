# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`bound_only_untimed` (`speculative_config`, on by default): up to `bound_only` requests the drafted
rounds are priced on the profiles even with `measure_round_times` (`StepTiming._rounds_timed`), above
it at their measured time as before; the flush costs follow the same split. (A lone request's
loop through slow rounds: `test_measured_rates_engines.py`.)"""

from __future__ import annotations

import pytest
from deepinfer_dspark.factories import UNTIMED_DEFAULT, _dspark_settings
from deepinfer_dspark.measured_rates import ROUND_SAMPLES, SPEC, STRETCH
from deepinfer_dspark.draft_costs import probe_overhead
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.step_timing import PLAIN_SAMPLES
from deepinfer_dspark.sps import SPSProfile

SPS = SPSProfile([1, 2, 3, 4, 5, 16, 64], [1000.0, 600.0, 466.7, 400.0, 360.0, 150.0, 50.0])
DECODE = SPSProfile([1, 4, 16, 64], [1000.0, 980.0, 900.0, 700.0])
K = 4


def make(fake_runner, untimed: bool, bound_only: int = 1) -> DSparkProposer:
    return DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_round_times=True,
                          bound_only=bound_only, bound_only_untimed=untimed)


@pytest.mark.parametrize("untimed", [False, True])
def test_the_correction_is_read_only_above_bound_only(fake_runner, untimed) -> None:
    """Rounds measured at 3x their price at 1, 2 and 3 requests: with `bound_only` 2 and
    `bound_only_untimed` the corrections at 1 and 2 read 1 and the cost model is the profiles';
    at 3 (bucket 4) the measurement counts; without it every bucket's measurement counts."""
    p = make(fake_runner, untimed, bound_only=2)
    for batch in (1, 2, 3):
        for _ in range(ROUND_SAMPLES):
            p.rates.add(SPEC, batch, 3.0)
    for batch in (1, 2):
        assert p._correction(batch) == (1.0 if untimed else pytest.approx(3.0))
        assert p.costs.plain_rate(batch) == pytest.approx(batch * DECODE.at(batch) * (1.0 if untimed else 3.0))
    assert p._correction(3) == pytest.approx(3.0)


@pytest.mark.parametrize("untimed", [False, True])
def test_flush_costs_follow_the_same_split(fake_runner, monkeypatch, untimed) -> None:
    """Timed flushes of 50-90 ms price a probe at 1 request (and the pairs kept there) only where the
    rounds at 1 are timed; at 2 requests (above `bound_only` 1) they always do."""
    p = make(fake_runner, untimed)
    read = []
    extra = p.flush_costs.extra
    monkeypatch.setattr(p.flush_costs, "extra", lambda batch: read.append(batch) or extra(batch))
    for batch in (1, 2):
        for flushed, span, pairs in ((False, 0.001, 0), (True, 0.05, 8), (True, 0.09, 16), (True, 0.05, 8)):
            p.flush_costs.record(batch, span, flushed, pairs)
    assert p.flush_costs.extra(1) > 0.04 and p.flush_costs.per_pair() > 0
    read.clear()
    assert (p._probe_overhead(1) == probe_overhead(1) if untimed else p._probe_overhead(1) >= probe_overhead(1))
    assert read == ([] if untimed else [1])
    assert (p._keep_cost(1) == 0.0) is untimed
    p._probe_overhead(2)
    assert read[-1] == 2 and p._keep_cost(2) > 0.0


def test_the_config_key(tmp_path, fake_runner) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPS, "decode_profile": DECODE}
    assert UNTIMED_DEFAULT is True and _dspark_settings(base)["bound_only_untimed"] is True
    assert _dspark_settings({**base, "bound_only_untimed": False})["bound_only_untimed"] is False
    for bad in (1, "yes", 0.0):
        with pytest.raises(ValueError, match="^speculative_config.bound_only_untimed"):
            _dspark_settings({**base, "bound_only_untimed": bad})
    with pytest.raises(ValueError, match="^speculative_config.bound_only_untimed: only used with scheduling="):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K,
                          "scheduling": "fixed", "bound_only_untimed": True})


@pytest.mark.parametrize("untimed", [False, True])
def test_plain_timing_goes_unread_where_the_rounds_are_untimed(fake_runner, untimed) -> None:
    """With `measure_plain_steps` too: plain steps measured at half their profile's time scale the
    comparison at 1 request, and a drafting bucket near break-even there gets plain re-timing
    runs, only where the rounds at 1 are timed; at 2 (above `bound_only` 1) both always hold."""
    p = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_round_times=True,
                       measure_plain_steps=True, bound_only=1, bound_only_untimed=untimed)
    for batch in (1, 2):
        for _ in range(PLAIN_SAMPLES):
            p.rates.add(STRETCH, batch, 0.5)
        p.pauses.judge(batch, 1.1)   # a judged gain below `RETIME_GAIN`, unpaused
        p.rates.count(SPEC, batch, p._retime_every)   # drafted rounds without a plain run
    assert p._correction(1) == (1.0 if untimed else pytest.approx(2.0))
    assert p._plain_run_due(1) is not untimed
    assert p._correction(2) == pytest.approx(2.0) and p._plain_run_due(2)

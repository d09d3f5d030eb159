# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`measure_plain_steps`' plain re-timing runs (session 47): a bucket that drafts on has no
stretch to time, so a decode profile read slow would price its rounds too cheap for good; a run
of `RUN` plain steps, asked one by one, times them as the rounds are timed (PLAIN samples). On a
fake clock with the engine's call order (`idle_rounds`, then `idle_round` or `propose`)."""

from __future__ import annotations

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.measured_rates import MIN_PERIOD, PLAIN, RUN, SPEC, STRETCH, MeasuredRates
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.step_timing import PLAIN_SAMPLES, RETIME_GAIN

SPS = SPSProfile([1, 2, 3, 4, 5, 16, 64], [1000.0, 600.0, 466.7, 400.0, 360.0, 150.0, 50.0])
DECODE = SPSProfile([1, 4, 16, 64], [1000.0, 980.0, 900.0, 700.0])   # the plain steps' true rates
SLOW = SPSProfile(DECODE.batch_tokens, [rate / 1.2 for rate in DECODE.steps_per_s])   # read 20% slow
K = 4


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _engine(proposer: DSparkProposer, steps: int) -> list[bool]:
    """`steps` engine steps of one request; each takes its true time (the round profile, the true
    decode profile) on the proposer's clock. True where the step drafted; also records whether a
    plain re-timing run was in progress before each step (`proposer.timing`)."""
    clock, drafted, proposer.timing = proposer.rates.clock, [], []
    for _ in range(steps):
        proposer.timing.append(proposer._timing_plain())
        if proposer.idle_rounds() > 0:
            assert proposer.quiet_rounds(1) == 0 or not proposer._timing_plain()   # asked step by step
            proposer.idle_round(1)
            drafted.append(False)
        else:
            request = DraftRequest("r0", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40)
            drafted.append(bool(proposer.propose([request])[0].token_ids))
        clock.now += 1.0 / (SPS.at(1 + K) if drafted[-1] else DECODE.at(1))
        proposer.rates.observed(True)   # (as `observe_step` reports a step without prefill)
    return drafted


def _proposer(fake_runner, confidence: float, **kw) -> DSparkProposer:
    proposer = DSparkProposer(fake_runner(K, confidence), K, SPS, decode=SLOW, max_probe_every=64,
                              measure_round_times=True, **kw)
    proposer.rates = MeasuredRates(clock=Clock())
    proposer.runner.held["r0"] = 9   # its context is whole: it can draft (the request holds 10 tokens)
    return proposer


def test_measured_rates_count_a_plain_run_down_and_a_stretch_sample_makes_none_due() -> None:
    rates = MeasuredRates(clock=Clock())
    rates.count(SPEC, 8, MIN_PERIOD)
    assert rates.due(PLAIN, 8, MIN_PERIOD) and rates.plain_left == 0
    rates.started(PLAIN, 8)
    assert rates.plain_left == RUN and rates.run_left == 0 and not rates.due(PLAIN, 8, MIN_PERIOD)
    rates.count(PLAIN, 8, RUN - 1)
    assert rates.plain_left == 1
    rates.count(PLAIN, 8)
    assert rates.plain_left == 0
    rates.count(SPEC, 8, MIN_PERIOD)
    assert rates.due(PLAIN, 8, MIN_PERIOD)
    rates.add(STRETCH, 8, 0.9)   # plain steps timed over a stretch there: no run needed
    assert not rates.due(PLAIN, 8, MIN_PERIOD)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_bucket_drafting_on_a_slow_read_profile_retimes_its_plain_steps(fake_runner, overlap) -> None:
    """Confidence 0.75 a draft at one request: 3.05 tokens a round at 360 rounds/s, a gain of 1.10
    against the true plain steps and 1.32 against the profile read 20% slow (below `RETIME_GAIN`):
    the engine drafts on, so after `MIN_PERIOD` drafted rounds a run of `RUN` plain steps is asked
    one by one; two such runs give `PLAIN_SAMPLES` samples, and the plain side then reads the
    true plain steps (1 / 1.2 of the profile), so the rounds' comparison is 1.2x dearer. The same
    with each round judged during the next (`overlap_bookkeeping`, the engine's default)."""
    proposer = _proposer(fake_runner, 0.75, measure_plain_steps=True, overlap_bookkeeping=overlap)
    drafted = _engine(proposer, MIN_PERIOD + RUN + 64 + RUN + 2)
    assert 1.0 < proposer.pauses.gain(1) < RETIME_GAIN
    first = drafted.index(False)
    assert first == MIN_PERIOD and drafted[first:first + RUN] == [False] * RUN and drafted[first + RUN]
    assert proposer.timing[first + 1:first + RUN] == [True] * (RUN - 1)
    second = first + RUN + 64                         # the next run: after max_probe_every (64) rounds
    assert drafted[second:second + RUN] == [False] * RUN and sum(not d for d in drafted) == 2 * RUN
    assert proposer.rates.samples[(PLAIN, 1)] == 2 * (RUN - 2)   # (a run's first and last steps are switches)
    assert len(proposer.rates.windows[(PLAIN, 1)]) >= PLAIN_SAMPLES
    assert proposer._plain_correction(1) == pytest.approx(1 / 1.2)
    assert proposer._correction(1) == pytest.approx(1.2)   # the rounds timed as priced (1.0) over the plain side


@pytest.mark.parametrize("case", ["winning", "not measured"])
def test_no_plain_run_where_it_could_not_change_the_decision_or_is_not_asked_for(fake_runner, case) -> None:
    """A bucket judged at 1.77 (confidence 0.95) is not re-timed (a plain side read 35% slow
    could not turn it into a loss); without `measure_plain_steps` nothing is re-timed."""
    proposer = (_proposer(fake_runner, 0.95, measure_plain_steps=True) if case == "winning"
                else _proposer(fake_runner, 0.75))
    drafted = _engine(proposer, 200)
    assert all(drafted) and proposer.rates.plain_left == 0
    assert proposer._correction(1) == pytest.approx(1.0)

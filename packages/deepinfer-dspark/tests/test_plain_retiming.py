# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`measure_plain_steps`' plain re-timing runs (session 47): a bucket that drafts on has no
stretch to time, so a decode profile read slow would price its rounds too cheap for good; a run
of `RUN` plain steps, asked one by one, times them as the rounds are timed (RETIMED samples). On
a fake clock with the engine's call order (`idle_rounds`, then `idle_round` or `propose`)."""

from __future__ import annotations

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.measured_rates import MIN_PERIOD, PLAIN, RETIMED, RUN, SPEC, STRETCH, MeasuredRates
from deepinfer_dspark.pause_ledger import ledger_bucket
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
    assert rates.due(RETIMED, 8, MIN_PERIOD) and rates.plain_left == 0
    rates.started(RETIMED, 8)
    assert rates.plain_left == RUN and rates.run_left == 0 and not rates.due(RETIMED, 8, MIN_PERIOD)
    rates.count(PLAIN, 8, RUN - 1)
    assert rates.plain_left == 1
    rates.count(PLAIN, 8)
    assert rates.plain_left == 0
    rates.started(PLAIN, 8)   # (`measure_step_times`' plain runs: held by the pause alone)
    assert rates.plain_left == 0
    rates.count(SPEC, 8, MIN_PERIOD)
    assert rates.due(RETIMED, 8, MIN_PERIOD)
    rates.add(STRETCH, 8, 0.9)   # plain steps timed over a stretch there: no run needed
    assert not rates.due(RETIMED, 8, MIN_PERIOD)


def test_the_plain_side_reads_the_kind_sampled_last(fake_runner) -> None:
    """Neither plain estimate ages, so the one sampled last is read (review of session 47: an old
    run's estimate read before fresh stretches' hid them for good); PLAIN's own per-step samples
    (any step reported without drafts, prompt-lookup rounds too) are never read."""
    proposer = _proposer(fake_runner, 0.75, measure_plain_steps=True)
    for _ in range(PLAIN_SAMPLES):
        proposer.rates.add(PLAIN, 1, 3.0)
    assert proposer._plain_correction(1) == 1.0
    for _ in range(PLAIN_SAMPLES):
        proposer.rates.add(RETIMED, 1, 1.0)
    assert proposer._plain_correction(1) == 1.0
    for i in range(PLAIN_SAMPLES):
        proposer.rates.add(STRETCH, 1, 0.5)
        assert proposer._plain_correction(1) == (0.5 if i == PLAIN_SAMPLES - 1 else 1.0)
    proposer.rates.add(RETIMED, 1, 0.8)   # a newer run: its window's median (1.0, 1.0, 1.0, 0.8)
    assert proposer._plain_correction(1) == pytest.approx(1.0)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_bucket_drafting_on_a_slow_read_profile_retimes_its_plain_steps(fake_runner, overlap) -> None:
    """Confidence 0.75 a draft at one request: 3.05 tokens a round at 360 rounds/s, a gain of 1.10
    against the true plain steps and 1.32 against the profile read 20% slow (below `RETIME_GAIN`):
    the engine drafts on, so after `MIN_PERIOD` drafted rounds a run of `RUN` plain steps is asked
    one by one; a run gives `RUN - 2` samples, so a second follows `MIN_PERIOD` rounds later; with
    `PLAIN_SAMPLES` the plain side reads the true plain steps (1 / 1.2 of the profile), the
    rounds' comparison is 1.2x dearer, and the next run waits `_retime_every` rounds. The same with
    each round judged during the next (`overlap_bookkeeping`, the engine's default)."""
    proposer = _proposer(fake_runner, 0.75, measure_plain_steps=True, overlap_bookkeeping=overlap)
    drafted = _engine(proposer, 2 * (MIN_PERIOD + RUN) + 64)   # (the third run would start next)
    assert 1.0 < proposer.pauses.gain(1) < RETIME_GAIN
    first = drafted.index(False)
    assert first == MIN_PERIOD and drafted[first:first + RUN] == [False] * RUN and drafted[first + RUN]
    assert proposer.timing[first + 1:first + RUN] == [True] * (RUN - 1)
    second = first + RUN + MIN_PERIOD                 # one run's samples are not read yet
    assert drafted[second:second + RUN] == [False] * RUN and sum(not d for d in drafted) == 2 * RUN
    assert proposer.rates.samples[(RETIMED, 1)] == 2 * (RUN - 2)   # (a run's first and last steps are switches)
    assert (PLAIN, 1) not in proposer.rates.samples   # (declared RETIMED, not PLAIN)
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


def test_no_lookup_round_inside_a_plain_run(fake_runner) -> None:
    """`LookupAssist` drafts no lookup round while DSpark re-times its plain steps (`retiming`):
    its rounds would be reported as paused steps (review of session 47: PLAIN's window read
    lookup rounds 1.67 plain steps long); before and after the run it does."""
    inner = _proposer(fake_runner, 0.75, measure_plain_steps=True)
    lookup = LookupAssist(inner, 2, 1)
    lookup.classes.sums = [[0.9 * 4, 4.0] for _ in range(3)]   # loops accepted: lookup rounds pay
    inner.pauses.pause(1, 10_000)   # DSpark paused at 1 request, features kept
    live = [1, 2, 3, 4] * 4
    lookup.track("r0", live)

    def step() -> bool:
        if lookup.idle_rounds() > 0:
            lookup.idle_round(1)
            live.append(live[-1] % 4 + 1)
            return False
        drafts = lookup.propose([DraftRequest("r0", list(live), K, 0.0, 0, 1.0, 0.0, 0, 400)])[0].token_ids
        for _ in range(len(drafts) + 1):   # the loop goes on: every draft accepted, and the bonus token
            live.append(live[-1] % 4 + 1)
        if drafts:
            lookup.commit("r0", len(live))
        return bool(drafts)

    before = [step() for _ in range(8)]
    inner.rates.started(RETIMED, 1)
    during = []
    while inner.retiming and len(during) < 2 * RUN:   # (each step counted by DSpark's `idle_round`)
        during.append(step())
    after = [step() for _ in range(8)]
    assert any(before) and any(after) and len(during) == RUN and not any(during)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_plain_run_never_undoes_a_loss_that_rules_the_bucket_out(fake_runner, overlap) -> None:
    """A round whose judgement settles a loss (the features then declined) starts no plain run
    (review of session 47: the run's pause dropped the bucket from `_ruled_out`, so the features
    were kept and flushed through the loss's pause); with `overlap_bookkeeping` the judgement
    lands after the run started, and the run's steps are still asked one by one (no dormant
    stretch mid-run), then the bucket stays ruled out."""
    proposer = DSparkProposer(fake_runner(K, 0.05), K, SPS, decode=SLOW, max_probe_every=64,
                              measure_round_times=True, measure_plain_steps=True, overlap_bookkeeping=overlap)
    proposer.rates = MeasuredRates(clock=Clock())
    requests = [DraftRequest(r, list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40) for r in ("a", "b")]
    for _ in range(20):   # a settled average just above 1 at 2 requests ...
        proposer.pauses.judge(2, 1.01)
    if overlap:   # a first round judged at once, then one in its run (judged late)
        proposer.runner.held.update(a=9, b=9)
        proposer.propose(requests)
        proposer.pauses.pause(2, 0)
    proposer.rates.count(SPEC, 2, MIN_PERIOD)   # ... MIN_PERIOD drafted rounds without plain timing
    proposer.runner.held.update(a=9, b=9)
    proposer.propose(requests)   # a losing round: the average drops to <= 1, settled
    if not overlap:
        assert proposer.rates.plain_left == 0 and proposer.pauses.left(2) > RUN
    else:
        assert proposer.rates.plain_left == RUN and proposer._late is not None
        assert proposer.idle_rounds() > 0
        proposer.idle_round(2)   # the late judgement lands: the bucket is ruled out
        assert proposer.retiming and proposer.dormant_rounds(2) == 0 and proposer.quiet_rounds(2) == 0
        for _ in range(RUN - 1):
            proposer.idle_round(2)
        assert not proposer.retiming
    assert proposer.pauses.gain(2) <= 1 and ledger_bucket(2) in proposer._ruled_out
    assert not proposer.wants_features() and proposer.dormant_rounds(2) > 0


def test_no_plain_run_without_measure_round_times(fake_runner) -> None:
    """The runs' steps are timed by `measure_round_times` (the engine's default): without it
    nothing is recorded, so no run starts."""
    proposer = DSparkProposer(fake_runner(K, 0.75), K, SPS, decode=SLOW, max_probe_every=64, measure_plain_steps=True)
    proposer.rates = MeasuredRates(clock=Clock())
    proposer.runner.held["r0"] = 9
    assert all(_engine(proposer, 120)) and proposer.rates.plain_left == 0


@pytest.mark.parametrize("in_run", [True, False])
def test_a_batch_shrinking_inside_a_run_is_judged_as_it_runs(fake_runner, in_run) -> None:
    """With a run's bucket ruled out by a late judgement, a batch that shrinks to a bucket not
    ruled out keeps its features, inside the run as outside it (second review of session 47:
    `dormant_rounds` answered the run before recording the batch, so `wants_features` judged the
    old bucket and gapped the requests left)."""
    proposer = DSparkProposer(fake_runner(K, 0.05), K, SPS, decode=SLOW, max_probe_every=64,
                              measure_round_times=True, measure_plain_steps=True, overlap_bookkeeping=True)
    proposer.rates = MeasuredRates(clock=Clock())
    requests = [DraftRequest(r, list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40) for r in ("a", "b")]
    for _ in range(20):
        proposer.pauses.judge(2, 1.01)
    proposer.runner.held.update(a=9, b=9)
    proposer.propose(requests)
    proposer.pauses.pause(2, 0)
    proposer.rates.count(SPEC, 2, MIN_PERIOD)
    proposer.runner.held.update(a=9, b=9)
    proposer.propose(requests)
    assert proposer.rates.plain_left == RUN and proposer.idle_rounds() > 0
    proposer.idle_round(2)   # the late judgement: bucket 2 ruled out
    assert ledger_bucket(2) in proposer._ruled_out and proposer.retiming
    if not in_run:
        proposer.rates.plain_left = 0
    assert ledger_bucket(1) not in proposer._ruled_out   # one request left (finished or preempted)
    assert proposer.dormant_rounds(1) == 0 and proposer.wants_features()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DSparkProposer` with `measure_step_times` under the call orders of the two engine loops, on a
fake clock: the synchronous loop (observe, then propose, after every step) and the asynchronous
one on a GPU (a step without drafts is launched before the previous one is read; the proposer is
asked at once while paused, else only after the in-flight step is drained). Every step takes its
profile's time times a factor; the decisions must follow the true costs in both loops, and a slow
spell must not switch drafting off (or on) for good.

Thresholds at B = 1, k = 4, confidences 0.95 under the profiles below: drafting loses when drafted
rounds take at least about 1.63x their profile's time (plain steps on profile).
"""

from __future__ import annotations


import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.measured_rates import SPEC, MeasuredRates
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

SPS = SPSProfile([1, 2, 3, 4, 5, 16, 64], [1000.0, 600.0, 466.7, 400.0, 360.0, 150.0, 50.0])
DECODE = SPSProfile([1, 4, 16, 64], [1000.0, 980.0, 900.0, 700.0])
K = 4


class Loop:
    """One request decoding forever; `step(spec, plain)` runs an engine step whose device time is
    its profile's times `spec` (drafted) or `plain` (not drafted)."""

    def __init__(self, runner, asynchronous: bool, max_probe_every: int = 64, rounds_only: bool = False,
                 short: SPSProfile | None = None) -> None:
        self.proposer = DSparkProposer(runner, K, SPS, decode=DECODE, max_probe_every=max_probe_every,
                                       measure_step_times=not rounds_only, measure_round_times=rounds_only,
                                       short_sps=short)
        self.now = 0.0
        self.proposer.rates = MeasuredRates(clock=lambda: self.now)
        self.asynchronous, self.inflight_end, self.propose_due = asynchronous, None, False
        self.tokens, self.drafts, self.drafted = [1, 2, 3], [], []
        self.proposer.observe_step(["a"], [0], [3], [0], torch.zeros(3, 1))   # the prefill

    def _ask(self) -> None:
        request = [DraftRequest("a", self.tokens, K, 0.0, 0, 1.0, 0.0, 0, len(self.tokens) - 1)]
        if self.proposer.idle_rounds() > 0:
            self.proposer.idle_round(1)
            self.drafts = []
        else:
            self.drafts = self.proposer.propose(request)[0].token_ids

    def _commit(self) -> tuple[float, list]:
        drafted = bool(self.drafts)
        seconds = 1 / SPS.at(1 + len(self.drafts)) if drafted else 1 / DECODE.at(1)
        new = list(self.drafts) + [5]
        observation = (["a"], [len(self.tokens) - 1], [len(new)], [0], torch.zeros(len(new), 1))
        self.tokens.extend(new)
        self.drafted.append(drafted)
        self.drafts = []
        return seconds, observation

    def _drain(self) -> None:
        if self.inflight_end is not None:
            self.now, self.inflight_end = max(self.now, self.inflight_end), None

    def step(self, spec: float = 1.0, plain: float = 1.0) -> None:
        if not self.asynchronous:
            drafted = bool(self.drafts)
            seconds, observation = self._commit()
            self.now += seconds * (spec if drafted else plain)
            self.proposer.observe_step(*observation)
            self._ask()
            return
        if self.propose_due:
            self.propose_due = False
            self._drain()
            self._ask()
        if self.drafts:                          # a verification step runs synchronously
            self._drain()
            seconds, observation = self._commit()
            self.now += seconds * spec
            self.proposer.observe_step(*observation)
            self._ask()
            return
        seconds, observation = self._commit()    # launched behind the step in flight
        begin = max(self.now, self.inflight_end or self.now)
        previous, self.inflight_end = self.inflight_end, begin + seconds * plain
        if previous is not None:
            self.now = max(self.now, previous)   # reads the previous step
        self.proposer.observe_step(*observation)
        if self.proposer.idle_rounds() > 0:
            self._ask()
        else:
            self.propose_due = True

    def drafted_share(self, last: int) -> float:
        return sum(self.drafted[-last:]) / last


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("spec,drafts", [(1.0, True), (1.4, True), (1.9, False), (3.0, False)])
def test_decisions_follow_the_true_costs_in_both_loops(fake_runner, asynchronous, spec, drafts) -> None:
    loop = Loop(fake_runner(K, 0.95), asynchronous)
    for _ in range(3000):
        loop.step(spec=spec)
    share = loop.drafted_share(2000)
    assert (share > 0.9) if drafts else (share < 0.1), share
    assert loop.proposer.rates.ratio(1) == pytest.approx(spec, rel=0.02)
    # Every sample kept is a true step time: none of the intervals next to a switch (in the
    # asynchronous loop one of them also holds the drain of the step in flight, the next one
    # almost nothing).
    for (kind, _), window in loop.proposer.rates.windows.items():
        assert all(v == pytest.approx(spec if kind == SPEC else 1.0) for v in window), (kind, list(window))


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("spell", ["rounds", "plain"])
def test_a_slow_spell_is_forgotten(fake_runner, asynchronous, spell) -> None:
    """Rounds 10x slow for a while (drafting off meanwhile), or plain steps 3x slow (drafting on
    meanwhile although rounds truly take 2x): within a few `max_probe_every` afterwards the
    decisions are those of the true costs again."""
    loop = Loop(fake_runner(K, 0.95), asynchronous, max_probe_every=64)
    slow, after = ({"spec": 10.0}, 1.0) if spell == "rounds" else ({"spec": 2.0, "plain": 3.0}, 2.0)
    for _ in range(1000):
        loop.step(**slow)
    for _ in range(64 * 6):
        loop.step(spec=after)
    share = loop.drafted_share(100)
    assert (share > 0.9) if after == 1.0 else (share < 0.1), share


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("spec,plain,drafts", [(1.0, 1.0, True), (1.4, 1.0, True), (1.9, 1.0, False),
                                               (3.0, 1.0, False), (1.9, 1.3, False)])
def test_rounds_only_timing_follows_the_rounds_true_cost(fake_runner, asynchronous, spec, plain, drafts) -> None:
    """`measure_round_times`: the rounds are priced at their measured time, plain steps at their
    profile (a slower plain step is not seen: 1.9x rounds against 1.3x plain steps still pause,
    where `measure_step_times` would weigh them); only runs of drafted rounds are samples, and
    the features are still declined (no re-timing runs)."""
    loop = Loop(fake_runner(K, 0.95), asynchronous, rounds_only=True)
    assert loop.proposer.decline_features and not loop.proposer.measure_step_times
    for _ in range(3000):
        loop.step(spec=spec, plain=plain)
    share = loop.drafted_share(2000)
    assert (share > 0.9) if drafts else (share < 0.1), share
    if drafts:   # timed all along
        assert loop.proposer._correction(1) == pytest.approx(spec, rel=0.02)
    else:        # paused: the estimate ages toward 1 between probes (`MeasuredRates.relax`), never past it
        assert 1.0 < loop.proposer._correction(1) <= spec * 1.02
    window = list(loop.proposer.rates.windows[(SPEC, 1)])
    assert window[-1] == pytest.approx(spec), window   # the newest sample: a true round time
    assert all(1.0 < v <= spec * 1.001 for v in window), window   # older ones possibly aged toward 1 (`relax`)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_rounds_only_timing_forgets_a_slow_spell(fake_runner, asynchronous) -> None:
    """Rounds 10x slow for a while switch drafting off; without samples the estimate's deviation
    from 1 halves every `max_probe_every` paused rounds (`MeasuredRates.relax`; until session 36 it
    was dropped at once), so the profile decides again after a few periods: drafting resumes."""
    loop = Loop(fake_runner(K, 0.95), asynchronous, max_probe_every=64, rounds_only=True)
    for _ in range(1000):
        loop.step(spec=10.0)
    assert loop.drafted_share(500) < 0.1
    assert loop.proposer._correction(1) < 10.0   # aged already
    for _ in range(64 * 12):
        loop.step(spec=1.0)
    assert loop.drafted_share(100) > 0.9
    assert loop.proposer._correction(1) == pytest.approx(1.0, rel=0.02)


def test_a_dormant_or_quiet_stretch_is_no_sample(fake_runner) -> None:
    """The engine asks nothing during a stretch: the interval from the round before it to the
    next call spans many steps and must not be timed as one round."""
    loop = Loop(fake_runner(K, 0.95), asynchronous=False, rounds_only=True)
    proposer = loop.proposer
    for _ in range(40):
        loop.step(spec=1.0)
    assert proposer.rates.windows[(SPEC, 1)] and all(v == pytest.approx(1.0) for v in proposer.rates.windows[(SPEC, 1)])
    for passed in (proposer.dormant_passed, proposer.quiet_passed):
        loop.now += 0.5                       # 500 plain steps' time, no call in between
        passed(1, 500)
        for _ in range(6):
            loop.step(spec=1.0)
        assert all(v == pytest.approx(1.0) for v in proposer.rates.windows[(SPEC, 1)]), passed


class EngineOrder:
    """`measure_round_times` under the synchronous engine's whole call order (core's
    `DormantSteps` asks, `wants_features` before a step without drafts, `observe_step` only when
    the features were captured, then `idle_round` or `propose`): `n` requests decoding forever."""

    def __init__(self, runner, n: int = 1) -> None:
        from deepinfer_core.engine.dormant_steps import DormantSteps

        self.proposer = DSparkProposer(runner, K, SPS, decode=DECODE, max_probe_every=64, measure_round_times=True)
        self.now = 0.0
        self.proposer.rates = MeasuredRates(clock=lambda: self.now)
        self.dormant = DormantSteps(self.proposer)
        self.ids = [f"r{i}" for i in range(n)]
        self.tokens = {r: [1, 2, 3, 4] for r in self.ids}
        self.drafts: dict = {}
        self.drafted: list[bool] = []
        self.proposer.observe_step(self.ids, [0] * n, [3] * n, [3 * i for i in range(n)], torch.zeros(3 * n, 1))
        self._ask()

    def _ask(self) -> None:
        if self.proposer.idle_rounds() > 0:
            self.proposer.idle_round(len(self.ids))
            self.drafts = {}
            return
        asks = [DraftRequest(r, self.tokens[r], K, 0.0, 0, 1.0, 0.0, 0, len(self.tokens[r]) - 3) for r in self.ids]
        self.drafts = {r: d.token_ids for r, d in zip(self.ids, self.proposer.propose(asks)) if d.token_ids}

    def step(self, spec: float = 1.0) -> None:
        drafts, dormant = self.drafts, False
        if drafts:
            self.dormant.settle()
            captured = True
        else:
            dormant = self.dormant.step(len(self.ids))
            captured = (dormant and self.dormant.features) or (not dormant and self.proposer.wants_features())
        tokens = len(self.ids) + sum(len(d) for d in drafts.values())
        self.now += spec / SPS.at(tokens) if drafts else 1 / DECODE.at(len(self.ids))
        firsts, counts = [], []
        for r in self.ids:
            new = list(drafts.get(r, [])) + [5]
            firsts.append(len(self.tokens[r]) - 1)
            counts.append(len(new))
            self.tokens[r] += new
        self.drafted.append(bool(drafts))
        self.drafts = {}
        if captured:
            self.proposer.observe_step(list(self.ids), firsts, counts, [sum(counts[:i]) for i in range(len(counts))],
                                       torch.zeros(sum(counts), 1))
        if dormant:
            self.dormant.ran(len(self.ids))
            return
        self._ask()


@pytest.mark.parametrize("spike_at", [0, 1, 2, 5])
def test_one_slow_round_never_rules_a_load_out(fake_runner, spike_at) -> None:
    """A single 10x round among the first samples (a host spike) must not price drafting out,
    decline the features and leave the running request without a drafter for good."""
    loop = EngineOrder(fake_runner(K, 0.95))
    for i in range(1500):
        loop.step(spec=10.0 if i == spike_at else 1.0)
    assert sum(loop.drafted[-1000:]) > 900 and not loop.proposer.feed.gapped
    assert loop.proposer._correction(1) == pytest.approx(1.0)


def test_rounds_measured_slow_pause_drafting_in_the_engine_order(fake_runner) -> None:
    loop = EngineOrder(fake_runner(K, 0.95))
    for _ in range(1500):
        loop.step(spec=3.0)
    assert sum(loop.drafted[-1000:]) < 100


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_short_round_is_timed_against_its_own_price(fake_runner, asynchronous) -> None:
    """With the k = 1 profile the pause policy prices a round by the drafts it verifies; a round
    verifying 1 draft (confidences 0.99, then 0.05) taking 1.5x that price must read 1.5, not
    1.5x over the full round's price (which would count its shortness twice)."""
    short = SPSProfile([2, 8], [SPS.at(2), 300.0])   # a 1-draft round of 1 request: SPS's 2-token rate
    loop = Loop(fake_runner(K, [0.99, 0.05, 0.05, 0.05]), asynchronous, rounds_only=True, short=short)
    for _ in range(400):
        loop.step(spec=1.5)
    window = list(loop.proposer.rates.windows[(SPEC, 1)])
    assert len(window) >= 3 and window[-1] == pytest.approx(1.5, rel=0.02), window
    assert all(1.0 < v <= 1.5 * 1.02 for v in window), window   # older ones possibly aged (`relax`)
    assert sum(loop.drafted[-200:]) < 20          # then priced right: 2 tokens in 1.5x a 2-token round lose


def test_without_the_short_profile_every_whole_round_is_a_sample(fake_runner) -> None:
    """Without the k = 1 profile the pause policy prices every round as the full one, whatever it
    verifies, so each round drafted for every running request is timed against that price: rounds
    verifying 3 of 4 drafts (360 / 400 of the full round's time here) read 0.9, and the proposer's
    correction reads it. Until session 36 only rounds verifying all k drafts for every request were
    samples: a confidence engine, which rarely verifies them all, never measured a round (on the H200
    at 8 requests its rounds ran 1.11-1.14x the price for 16 calls, uncorrected)."""
    from deepinfer_dspark.measured_rates import PART

    loop = Loop(fake_runner(K, [0.99, 0.99, 0.99, 0.05]), False, rounds_only=True)
    for _ in range(400):
        loop.step(spec=1.0)
    rates = loop.proposer.rates
    assert rates.samples.get((SPEC, 1), 0) > 100 and rates.samples.get((PART, 1), 0) == 0
    assert rates.correction(SPEC, 1) == pytest.approx(SPS.at(5) / SPS.at(4), rel=0.02)
    assert loop.proposer._correction(1) == pytest.approx(SPS.at(5) / SPS.at(4), rel=0.02)
    assert loop.drafted_share(200) > 0.9


@pytest.mark.parametrize("asynchronous", [False, True])
def test_rounds_that_verify_fewer_drafts_are_priced_at_their_measured_time(fake_runner, asynchronous) -> None:
    """Rounds verifying 3 of 4 drafts that take 2x their time: each sample reads 2 x 0.9 of the
    full round's price, and drafting (which wins at the profile's price) pauses. (While paused the
    estimate is dropped after `max_probe_every` rounds, so the next probe is judged anew.)"""
    loop = Loop(fake_runner(K, [0.99, 0.99, 0.99, 0.05]), asynchronous, rounds_only=True)
    for _ in range(1500):
        loop.step(spec=2.0)
    assert loop.proposer.rates.samples.get((SPEC, 1), 0) >= 3
    measured = 2.0 * SPS.at(5) / SPS.at(4)
    window = list(loop.proposer.rates.windows[(SPEC, 1)])
    assert window[-1] == pytest.approx(measured, rel=0.02), window
    assert all(1.0 < v <= measured * 1.02 for v in window), window   # older ones possibly aged (`relax`)
    assert loop.drafted_share(1000) < 0.1


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("untimed", [False, True])
def test_a_lone_request_drafts_on_through_slow_rounds_when_untimed(fake_runner, asynchronous, untimed) -> None:
    """One request whose rounds take 3x their profile's time (plain steps on theirs; the loops of
    `test_measured_rates_engines`): timed, the measured cost rules drafting out (even every draft
    accepted could not pay); untimed at `bound_only` 1, the profiles price the rounds and it drafts
    on. Untimed, no sample is taken either (session 55: unread at bucket 1, the timing work went)."""
    loop = Loop(fake_runner(K, 0.95), asynchronous, rounds_only=True)
    loop.proposer.bound_only, loop.proposer.bound_only_untimed = 1, untimed
    for _ in range(2000):
        loop.step(spec=3.0)
    share = loop.drafted_share(1000)
    assert (share > 0.9) if untimed else (share < 0.1), share
    if untimed:
        assert loop.proposer.rates.samples.get((SPEC, 1), 0) == 0 and loop.proposer.rates.correction(SPEC, 1) == 1.0
    else:
        assert loop.proposer.rates.correction(SPEC, 1) > 1.0

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`measure_plain_steps`: plain steps timed over dormant and quiet stretches, from one stretch ask
to the next (`MeasuredRates.stretch_asked`), on a fake clock: the samples, what drops them, and
the proposer's comparison with plain decoding under core's own stretch bookkeeping
(`DormantSteps`), with stretches as long as DSpark declares and as short as `LookupAssist` caps them."""

from __future__ import annotations

import pytest
import torch
from deepinfer_core.engine.dormant_steps import DormantSteps

from deepinfer_dspark.factories import _dspark_settings
from deepinfer_dspark.measured_rates import PLAIN, RETIMED, SPEC, STRETCH, MeasuredRates
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.step_timing import PLAIN_SAMPLES

SPS = SPSProfile([1, 2, 3, 4, 5, 16, 64], [1000.0, 600.0, 466.7, 400.0, 360.0, 150.0, 50.0])
DECODE = SPSProfile([1, 4, 16, 64], [1000.0, 980.0, 900.0, 700.0])
K = 4


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _opened(rates: MeasuredRates, clock: Clock, batch: int) -> None:
    """A first stretch at `batch` (no sample: no report before it) and the ask after it."""
    rates.stretch_asked(batch)
    clock.now += 0.002
    rates.stretch_ran(batch, 0.002)
    rates.stretch_asked(batch)


def test_a_stretch_is_one_sample_of_the_steps_reported_between_two_asks() -> None:
    clock = Clock()
    rates = MeasuredRates(clock=clock)
    _opened(rates, clock, 8)
    assert rates.samples == {}                   # the first ask follows no report: never a sample
    clock.now += 12 * 0.003                      # 12 steps of 3 ms ...
    rates.stretch_ran(8, 12 * 0.002)             # ... which the profile puts at 2 ms
    rates.stretch_asked(8)
    assert rates.correction(STRETCH, 8) == pytest.approx(1.5) and rates.samples == {(STRETCH, 8): 1}
    assert rates.correction(PLAIN, 8) == 1.0     # (PLAIN holds the per-step samples only)
    rates.stretch_asked(7)                       # an ask with no step reported since: no sample
    assert rates.samples == {(STRETCH, 8): 1}
    clock.now += 0.004                           # a stretch cut short: its steps at 7, one at 5 (same bucket)
    rates.stretch_ran(7, 0.002)
    rates.stretch_ran(5, 0.002)
    rates.stretch_asked(5)
    assert rates.samples == {(STRETCH, 8): 2} and rates.windows[(STRETCH, 8)][-1] == pytest.approx(1.0)
    clock.now += 0.004                           # the batch ends; the engine idles 5 s before the next
    rates.stretch_ran(5, 0.002)                  # call's first ask: the sample ends at the last report
    clock.now += 5.0
    rates.stretch_asked(5)
    assert rates.samples == {(STRETCH, 8): 3} and rates.windows[(STRETCH, 8)][-1] == pytest.approx(2.0)


@pytest.mark.parametrize("case", ["start", "bucket", "batch end", "join", "after start", "prefill", "no request"])
def test_what_drops_a_stretch_sample(case) -> None:
    clock = Clock()
    rates = MeasuredRates(clock=clock)
    _opened(rates, clock, 6)
    if case == "after start":                   # an ask right after a step asked about: with asynchronous
        rates.start()                           # scheduling the device may be idle, a step short
        rates.stretch_asked(6)
    elif case == "join":                        # more requests than the last report: a prefill in its first step
        rates.stretch_asked(7)
    elif case == "no request":
        rates.stretch_asked(0)
    clock.now += 0.01
    if case == "prefill":                       # a quiet step with a prefill chunk
        rates.observed(False)
    rates.stretch_ran({"bucket": 4, "batch end": 0}.get(case, 6), 0.002)
    if case == "start":                         # a step asked about in between
        rates.start()
    rates.stretch_asked(6)
    assert rates.samples == {}, case
    clock.now += 0.01                           # the next clean stretch is a sample again
    rates.stretch_ran(6, 0.005)
    rates.stretch_asked(6)
    if case in ("start", "bucket", "batch end"):   # (one more: the stretch after them began unclean)
        clock.now += 0.01
        rates.stretch_ran(6, 0.005)
        rates.stretch_asked(6)
    assert rates.samples == {(STRETCH, 8): 1} and rates.correction(STRETCH, 8) == pytest.approx(2.0), case


def _proposer(fake_runner, confidence, **kw) -> DSparkProposer:
    proposer = DSparkProposer(fake_runner(K, confidence), K, SPS, decode=DECODE, max_probe_every=64, **kw)
    proposer.rates = MeasuredRates(clock=Clock())
    return proposer


@pytest.mark.parametrize("quiet", [False, True])
def test_the_plain_correction_divides_the_drafted_side(fake_runner, quiet) -> None:
    """Plain steps measured at half their profile's time make every round twice as dear against
    them: `_correction` reads 2 once `PLAIN_SAMPLES` stretches are in, times the rounds' own with
    `measure_round_times`; a plain re-timing run's samples, once as many and newer, take the
    stretches' place; without `measure_plain_steps` the stretches are not timed."""
    for kw in ({}, {"measure_round_times": True}):
        proposer = _proposer(fake_runner, 0.95, measure_plain_steps=True, **kw)
        clock = proposer.rates.clock
        for i in range(PLAIN_SAMPLES + 3):   # (a stretch is a sample at the next ask; the first is none)
            assert proposer._correction(1) == (1.0 if i <= PLAIN_SAMPLES + 1 else pytest.approx(2.0)), i
            (proposer.quiet_rounds if quiet else proposer.dormant_rounds)(1)
            clock.now += 10 * 0.5 / DECODE.at(1)
            (proposer.quiet_passed if quiet else proposer.dormant_passed)(1, 10)
        for _ in range(3):
            proposer.rates.add(SPEC, 1, 1.5)      # rounds measured 1.5x their price (three samples)
        assert proposer._correction(1) == pytest.approx(3.0 if kw else 2.0)
        for _ in range(PLAIN_SAMPLES):            # per-step plain samples (`measure_round_times`): not read
            proposer.rates.add(PLAIN, 1, 3.0)
        assert proposer._correction(1) == pytest.approx(3.0 if kw else 2.0)
        for _ in range(PLAIN_SAMPLES):            # a plain re-timing run's (session 47), newer than the
            proposer.rates.add(RETIMED, 1, 3.0)   # stretches': read instead of theirs
        assert proposer._correction(1) == pytest.approx(1.5 / 3.0 if kw else 1.0 / 3.0)
    plain = _proposer(fake_runner, 0.95)
    plain.dormant_rounds(1)
    plain.rates.clock.now += 1.0
    plain.dormant_passed(1, 10)
    plain.dormant_rounds(1)
    assert plain.rates.samples == {} and plain._correction(1) == 1.0
    with pytest.raises(ValueError, match="^measure_plain_steps: cannot be true with measure_step_times"):
        _proposer(fake_runner, 0.95, measure_plain_steps=True, measure_step_times=True)


def test_cheap_plain_steps_rule_out_a_load_the_profiles_would_draft(fake_runner) -> None:
    """At B = 1 every draft accepted pays under the profiles (k = 4: 5 tokens for 360 against
    1000 steps/s, 1.8x); with plain steps measured at half their profile's time it cannot
    (`cannot_pay`)."""
    proposer = _proposer(fake_runner, 0.95, measure_plain_steps=True)
    assert not proposer.cannot_pay(1)
    for _ in range(PLAIN_SAMPLES + 3):
        proposer.dormant_rounds(1)
        proposer.rates.clock.now += 20 * 0.5 / DECODE.at(1)
        proposer.dormant_passed(1, 20)
    assert proposer.cannot_pay(1)


class Engine:
    """Core's stretch bookkeeping (`DormantSteps`) over `n` requests that never draft (the
    proposer's load is ruled out: the confidence is 0); each plain step takes `plain` times its
    profile's time. `cap`: stretches at most this long (as `LookupAssist` caps them)."""

    def __init__(self, proposer: DSparkProposer, n: int, plain: float, cap: int | None = None) -> None:
        self.proposer, self.n, self.plain = proposer, n, plain
        if cap is not None:
            ask = proposer.dormant_rounds
            proposer.dormant_rounds = lambda num_requests: min(ask(num_requests), cap)
        self.dormant = DormantSteps(proposer)
        self.clock = proposer.rates.clock
        self.ids = [f"r{i}" for i in range(n)]
        self.tokens = {r: [1, 2, 3, 4] for r in self.ids}

    def step(self) -> None:
        dormant = self.dormant.step(self.n)
        captured = (dormant and self.dormant.features) or (not dormant and self.proposer.wants_features())
        self.clock.now += self.plain / DECODE.at(self.n)
        if captured:
            self.proposer.observe_step(list(self.ids), [len(self.tokens[r]) - 1 for r in self.ids], [1] * self.n,
                                       list(range(self.n)), torch.zeros(self.n, 1))
        for r in self.ids:
            self.tokens[r].append(5)
        if dormant:
            self.dormant.ran(self.n)
            return
        if self.proposer.idle_rounds() > 0:
            self.proposer.idle_round(self.n)
        else:
            from deepinfer_core.interfaces import DraftRequest
            self.proposer.propose([DraftRequest(r, self.tokens[r], K, 0.0, 0, 1.0, 0.0, 0, len(self.tokens[r]) - 1)
                                   for r in self.ids])


@pytest.mark.parametrize("cap", [None, 1, 3])
@pytest.mark.parametrize("plain", [0.6, 1.7])
def test_stretches_in_the_engine_order_measure_the_plain_steps(fake_runner, cap, plain) -> None:
    """A load ruled out runs dormant stretches (as long as declared, or capped at 1 or 3 steps):
    the plain estimate at its bucket is the plain steps' true factor, whatever the caps."""
    proposer = _proposer(fake_runner, 0.0, measure_plain_steps=True)
    engine = Engine(proposer, n=16, plain=plain, cap=cap)
    for _ in range(600):
        engine.step()
    assert engine.dormant.steps > 400
    assert proposer.rates.samples.get((STRETCH, 16), 0) >= PLAIN_SAMPLES
    assert proposer.rates.correction(STRETCH, 16) == pytest.approx(plain, rel=1e-6)


def test_the_config_key(tmp_path) -> None:
    """`speculative_config.measure_plain_steps`: needs decode_profile, not with measure_step_times."""
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPS}
    assert _dspark_settings({**base, "decode_profile": DECODE, "measure_plain_steps": True})["measure_plain_steps"]
    assert not _dspark_settings({**base, "decode_profile": DECODE})["measure_plain_steps"]
    with pytest.raises(ValueError, match="^speculative_config.measure_plain_steps: .* needs decode_profile"):
        _dspark_settings({**base, "measure_plain_steps": True})
    with pytest.raises(ValueError, match="^speculative_config.measure_plain_steps: cannot be true with "
                                         "measure_step_times"):
        _dspark_settings({**base, "decode_profile": DECODE, "measure_plain_steps": True, "measure_step_times": True})
    with pytest.raises(ValueError, match="^speculative_config.measure_plain_steps"):
        _dspark_settings({**base, "decode_profile": DECODE, "measure_plain_steps": "yes"})

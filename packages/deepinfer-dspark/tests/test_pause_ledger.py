# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PauseLedger` (per-bucket pauses, backoffs, smoothed gains) and the pause policy it gives
`DSparkProposer`: a pause decided at one load never holds at another and is remembered when the
load comes back; one round predicted to lose among rounds predicted to win does not stop drafting.
"""

from __future__ import annotations

import math
import types

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.acceptance_ratio import PRIOR, WINDOW, AcceptanceRatio
from deepinfer_dspark.draft_costs import PROBE_SHARE
from deepinfer_dspark.draft_runner import DraftOutput
from deepinfer_dspark.full_acceptance import AGE_ROUNDS, FullAcceptance
from deepinfer_dspark.pause_ledger import SMOOTH, PauseLedger, ledger_bucket
from deepinfer_dspark.pause_policy import MIN_MEASURED_REQUESTS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# One request: a round of K drafts runs at half a plain step's rate, so it wins when the expected
# accepted length is above 1 (confidence 0.95: gain 2.26; 0.3: gain 0.71). 64 requests: plain
# decoding emits 44.8k tokens/s; a round of 320 tokens at 150 rounds/s could only beat it with
# every draft accepted (48k), so drafting is not ruled out up front but every real round loses.
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 150.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def test_buckets_are_independent() -> None:
    assert [ledger_bucket(b) for b in (0, 1, 2, 3, 4, 5, 7, 9, 13, 17, 33, 49, 65, 97, 200)] == \
        [1, 1, 2, 3, 4, 6, 8, 12, 16, 24, 48, 64, 96, 128, 256]
    ledger = PauseLedger(probe_every=2, max_probe_every=16)
    ledger.lost(64)
    assert ledger.left(64) == ledger.left(49) == 2 and ledger.left(48) == 0 and ledger.left(1) == 0
    assert not ledger.skip(1) and not ledger.skip(40)             # other buckets: not paused
    assert ledger.skip(50) and ledger.left(64) == 1               # 50 is in the bucket of 64
    assert ledger.skip(64) and not ledger.skip(64)
    ledger.pause(3, 5)
    assert ledger.left(3) == 5 and ledger.left(4) == 0 and ledger.left(64) == 0


def test_backoff_doubles_caps_and_resets_per_bucket() -> None:
    ledger = PauseLedger(probe_every=2, max_probe_every=16)
    pauses = []
    for _ in range(6):
        ledger.lost(8)
        pauses.append(ledger.left(8))
    assert pauses == [2, 4, 8, 16, 16, 16]
    ledger.lost(1)
    assert ledger.left(1) == 2                                    # its own backoff
    ledger.won(8)
    ledger.lost(8)
    assert ledger.left(8) == 2
    flat = PauseLedger(probe_every=3, max_probe_every=16)
    for _ in range(3):
        flat.lost(2, double=False)
        assert flat.left(2) == 3


def test_smoothed_gain() -> None:
    ledger = PauseLedger(probe_every=2, max_probe_every=16)
    assert ledger.gain(1) is None
    assert ledger.judge(1, 0.8)                                   # the first round decides alone
    assert ledger.gain(1) == 0.8
    assert not ledger.judge(1, 1.5)                               # the first rounds: their mean
    assert ledger.gain(1) == pytest.approx(1.15)
    ledger = PauseLedger(probe_every=2, max_probe_every=16)
    for _ in range(round(1 / SMOOTH)):                           # past the first rounds' mean
        assert not ledger.judge(1, 1.5)
    assert not ledger.judge(1, 0.5)                               # one loss among wins
    assert ledger.gain(1) == pytest.approx(1.5 + SMOOTH * (0.5 - 1.5))
    assert ledger.gain(64) is None                                # per bucket
    losses = [ledger.judge(1, 0.5) for _ in range(round(1 / SMOOTH))]
    assert not losses[0] and losses[-1]                           # a lasting loss takes over


class FakeRunner:
    """Drafts K tokens per request; each call's confidences are the next of `levels` (cycled)."""

    def __init__(self, levels: list[float], block_size: int = K) -> None:
        self.drafter = types.SimpleNamespace(config=types.SimpleNamespace(block_size=block_size, target_layer_ids=[1]),
                                             dtype=torch.float32)
        self.levels, self.calls = levels, 0

    def num_positions(self, request_id: str) -> int:
        return 9

    def draft(self, requests, k):
        level = self.levels[self.calls % len(self.levels)]
        self.calls += 1
        return [DraftOutput(torch.full((k,), 7), None, torch.full((k,), level), None) for _ in requests]

    def remove(self, request_id: str) -> None:
        pass


def _round(proposer: DSparkProposer, batch: int) -> bool:
    """One engine round of `batch` requests (as the engine calls the proposer); True if drafted."""
    if proposer.idle_rounds() > 0:
        proposer.idle_round(batch)
        return False
    requests = [DraftRequest(f"r{i}", list(range(10)), proposer.num_tokens, 0.0, 0, 1.0, 0.0, 0, 40)
                for i in range(batch)]
    return any(d.token_ids for d in proposer.propose(requests))


def test_one_losing_round_among_winning_ones_does_not_pause() -> None:
    """Alone, rounds alternate between gain 2.26 and 0.71 (mean 1.48): drafting goes on."""
    proposer = DSparkProposer(FakeRunner([0.95, 0.3]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    drafted = [_round(proposer, 1) for _ in range(200)]
    assert sum(drafted[20:]) >= 0.95 * 180, sum(drafted[20:])
    # A first round predicted to lose pauses for what keeps its loss within PROBE_SHARE of the
    # pause (here longer than probe_every); the next one, predicted to win, resumes drafting.
    proposer = DSparkProposer(FakeRunner([0.3] + [0.95] * 7), K, SPS, decode=DECODE, probe_every=8,
                              max_probe_every=64)
    drafted = [_round(proposer, 1)]
    gain = proposer.pauses.gain(1)                                # the first round's: ~0.71
    pause = proposer.costs.probe_pause(1, gain, 0.0)              # a young bucket: no overhead
    lost_steps = DECODE.at(1) / SPS.at(1 + K) * (1 - gain)        # plain steps the round lost
    assert gain < 1 and pause == math.ceil(lost_steps / PROBE_SHARE) > 8
    drafted += [_round(proposer, 1) for _ in range(99)]
    assert drafted[:pause + 2] == [True] + [False] * pause + [True] and sum(drafted) == 100 - pause
    # Every round predicted to lose: drafting pauses, the pauses growing to the cap.
    losing = DSparkProposer(FakeRunner([0.3]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    drafted = [_round(losing, 1) for _ in range(400)]
    assert sum(drafted) <= 2 + 400 // 64, sum(drafted)           # pauses of 29, 29, 32, then 64


def test_a_pause_is_kept_per_load_across_batches() -> None:
    """Chat batches: 16 rounds at 64 requests (drafting loses), then 16 rounds at 1 request
    (drafting wins), 24 times. Once learnt, drafting at 64 is a rare probe and at 1 runs on: the
    pause at 64 neither holds at 1 nor is forgotten by going there."""
    proposer = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    heavy, light = [], []
    for cycle in range(24):
        heavy.append(sum(_round(proposer, 64) for _ in range(16)))
        light.append(sum(_round(proposer, 1) for _ in range(16)))
    assert sum(heavy[8:]) <= 5, heavy                             # a probe every 64 rounds at 64
    assert sum(light[8:]) >= 0.9 * 16 * 16, light


class RandomRunner(FakeRunner):
    """Fresh random confidences (some exactly 0 or 1) for every request of every call."""

    def __init__(self, seed: int) -> None:
        super().__init__([0.0])
        self.gen = torch.Generator().manual_seed(seed)

    def draft(self, requests, k):
        conf = torch.rand(len(requests), k, generator=self.gen)
        conf[conf < 0.05] = 0.0
        conf[conf > 0.95] = 1.0
        return [DraftOutput(torch.full((k,), 7), None, conf[i], None) for i in range(len(requests))]


def test_small_rounds_schedule_in_python_as_the_tensor_path(monkeypatch) -> None:
    """Rounds of up to SMALL_SCHEDULE candidates are scheduled and judged with Python floats: the
    same verified lengths and the same pause decisions as the tensor path, request rooms included."""
    import deepinfer_dspark.scheduler as scheduler

    def run(small: bool) -> list:
        monkeypatch.setattr(scheduler, "SMALL_SCHEDULE", 64 if small else 0)   # the round's path and Algorithm 1's
        proposer = DSparkProposer(RandomRunner(3), K, SPSProfile([1, 4, 16, 64], [900.0, 800.0, 600.0, 150.0]),
                                  decode=SPSProfile([1, 16], [700.0, 650.0]), probe_every=2, max_probe_every=4)
        seen = []
        for step in range(300):
            batch = 1 + step % 16
            requests = [DraftRequest(f"r{i}", list(range(10)), 1 + (i + step) % (K + 1), 0.0, 0, 1.0, 0.0, 0, 40)
                        for i in range(batch)]
            if proposer.idle_rounds() > 0:
                proposer.idle_round(batch)
                seen.append(None)
            else:
                seen.append([len(d.token_ids) for d in proposer.propose(requests)])
        return seen

    small, tensor = run(True), run(False)
    assert small == tensor
    assert sum(s is None for s in small) > 10 and sum(s is not None and sum(s) > 0 for s in small) > 30
    nan = DSparkProposer(FakeRunner([float("nan")]), K, SPS, decode=DECODE)
    for limit in (64, 0):
        monkeypatch.setattr(scheduler, "SMALL_SCHEDULE", limit)
        with pytest.raises(ValueError, match="^confidences: values must lie in"):
            nan.propose([DraftRequest("r", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40)])


# Profiles measured on the H200 (SmolLM2-135M-Instruct, chat prompts, k = 7; benchmarks/results/
# h200-2026-11-30f/run6-quick-drafter-ledger): plain steps by requests, rounds by B * 8 tokens.
H200_DECODE = SPSProfile([1, 2, 4, 8, 16, 32, 64, 128, 256], [838, 803, 761, 692, 558, 460, 457, 265, 94])
H200_ROUNDS = SPSProfile([8, 16, 32, 64, 128, 256, 512, 1024, 2048], [291, 223, 199, 178, 159, 133, 79, 21, 15])


def test_pausing_weighs_a_round_of_all_its_requests() -> None:
    """At 256 requests a drafted round (15 rounds/s measured) loses 3x to plain decoding even at
    confidence 0.6; the profile read at the round's verified tokens alone (~550: the rate of a
    round of 64-128 requests) would call it a win. At 1 request, confidence 0.7 (3.1 tokens a
    round at 291 rounds/s against 838 plain steps/s) wins and drafting runs on."""
    heavy = DSparkProposer(FakeRunner([0.6], block_size=7), 7, H200_ROUNDS, decode=H200_DECODE)
    assert not heavy.cannot_pay(256) and heavy.costs.round_rate(256) == 15
    drafted = [_round(heavy, 256) for _ in range(300)]
    assert sum(drafted) <= 8, sum(drafted)
    assert heavy.pauses.gain(256) < 0.5
    light = DSparkProposer(FakeRunner([0.7], block_size=7), 7, H200_ROUNDS, decode=H200_DECODE)
    drafted = [_round(light, 1) for _ in range(300)]
    assert sum(drafted) == 300 and light.pauses.gain(1) > 1


def test_close_calls_and_recovery() -> None:
    """Rounds that verify nothing among winning ones, rounds of random confidence with a mean
    gain well above 1, and a losing spell followed by a winning one."""
    zeros = DSparkProposer(FakeRunner([0.95, 0.95, 0.95, 0.0]), K, SPS, decode=DECODE)
    for _ in range(200):
        _round(zeros, 1)
    assert zeros.skipped_rounds == 0 and zeros.runner.calls == 200   # the average wins: no pause
    gen = torch.Generator().manual_seed(0)
    levels = (0.3 + 0.65 * torch.rand(400, generator=gen)).tolist()   # gains 0.71 .. 2.1, mean ~1.3
    noisy = DSparkProposer(FakeRunner(levels), K, SPS, decode=DECODE)
    assert sum(_round(noisy, 1) for _ in range(400)) >= 0.9 * 400
    runner = FakeRunner([0.3])
    spell = DSparkProposer(runner, K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    assert sum(_round(spell, 1) for _ in range(300)) <= 8         # losing: rare probes
    runner.levels = [0.95]
    drafted = [_round(spell, 1) for _ in range(300)]
    assert sum(drafted[64 + 16:]) == 300 - 64 - 16, drafted       # back within one longest pause


def test_confidences_past_a_requests_room_are_ignored(monkeypatch) -> None:
    """A value outside [0, 1] past a request's room (drafts it may not verify) is ignored by both
    scheduling paths; within the room it is refused by name."""
    import deepinfer_dspark.scheduler as scheduler

    for limit in (64, 0):
        monkeypatch.setattr(scheduler, "SMALL_SCHEDULE", limit)
        proposer = DSparkProposer(FakeRunner([0.9]), K, SPS, decode=DECODE)
        proposer.runner.draft = lambda requests, k: [
            DraftOutput(torch.full((k,), 7), None, torch.tensor([0.9, 0.9, float("nan"), 2.0]), None)
            for _ in requests]
        roomy = [DraftRequest("r", list(range(10)), 2, 0.0, 0, 1.0, 0.0, 0, 40)]
        assert [len(d.token_ids) for d in proposer.propose(roomy)] == [2]
        with pytest.raises(ValueError, match="^confidences: values must lie in"):
            proposer.propose([DraftRequest("r", list(range(10)), 3, 0.0, 0, 1.0, 0.0, 0, 40)])


def _verified_round(proposer: DSparkProposer, batch: int, accepted: int) -> bool:
    """`_round`, then the engine's commits after verification: each drafted request accepted
    `accepted` drafts (at most its verified ones). True if drafted."""
    if proposer.idle_rounds() > 0:
        proposer.idle_round(batch)
        return False
    requests = [DraftRequest(f"r{i}", list(range(10)), proposer.num_tokens, 0.0, 0, 1.0, 0.0, 0, 40)
                for i in range(batch)]
    drafts = proposer.propose(requests)
    for r, d in zip(requests, drafts):
        if d.token_ids:
            proposer.commit(r.request_id, len(r.token_ids) + 1 + min(accepted, len(d.token_ids)))
    return any(d.token_ids for d in drafts)


def test_acceptance_ratio_unit() -> None:
    ratio = AcceptanceRatio(4)
    assert ratio.ratio(1) == 1.0 and ratio.full.mean() is None
    assert PRIOR == 1.0   # the values below are written out for it

    def shrunk(realized, predicted):   # realized / predicted, shrunk towards 1 by one predicted draft
        return (realized + 1.0) / (predicted + 1.0)

    thin = AcceptanceRatio(4)
    thin.begin(1, [("a", 10, 4, [0.5, 0.0, 0.0, 0.0])])
    thin.commit("a", 11)           # nothing accepted of 0.5 predicted: 1 / 1.5, not 0
    thin.close()
    assert thin.ratio(1) == pytest.approx(2 / 3)
    for _ in range(40 * AGE_ROUNDS):
        thin.tick()                # stale evidence: the ratio returns to the calibration's 1
    assert thin.ratio(1) == pytest.approx(1.0, abs=1e-6)

    half = [0.5, 0.0, 0.0, 0.0]
    ratio.begin(3, [("a", 10, 4, half), ("b", 20, 4, half), ("c", 5, 0, [0.2, 0.0, 0.0, 0.0])])
    ratio.commit("a", 14)          # 3 accepted + the bonus token
    ratio.commit("b", 30)          # more than verified: clipped to 4
    ratio.commit("c", 6)           # verified nothing: no commit counts (its survivals do)
    ratio.commit("zzz", 99)        # not in the round
    ratio.close()
    assert ratio.ratio(3) == pytest.approx(shrunk(7, 1.0)) and ratio.rounds == 1
    assert ratio.ratio(64) == ratio.ratio(3)       # a bucket without rounds: all buckets' ratio
    assert ratio.full.requests == pytest.approx(2.0)   # the two that verified: evidence
    ratio.begin(3, [("a", 14, 4, [1.0] * 4)])
    ratio.drop("a")                # left before its commit: counts nowhere
    ratio.begin(3, [("a", 14, 4, [1.0] * 4)])
    ratio.commit("a", 14)          # nothing grew (a stop): 0 accepted, clipped at 0
    ratio.close()
    kept = 1 - 1 / WINDOW          # decayed sums, per request: predicted 1 then 4, realized 7 then 0
    bucket3 = shrunk(7 * kept, kept + 4)
    assert ratio.rounds == 2 and ratio.ratio(3) == pytest.approx(bucket3)
    ratio.begin(64, [("x", 10, 4, [1.0, 1.0, 0.0, 0.0])])
    ratio.commit("x", 12)          # 1 of 2 predicted at bucket 64
    ratio.close()
    assert ratio.ratio(64) == pytest.approx(shrunk(1, 2.0)) and ratio.ratio(3) == pytest.approx(bucket3)
    ratio.begin(2, [("y", 10, 1, [1e-310, 0.0, 0.0, 0.0])])
    ratio.commit("y", 12)          # a prediction next to 0: the prior keeps the ratio finite
    ratio.close()
    assert ratio.ratio(2) == pytest.approx(2.0) and math.isfinite(ratio.full.mean())
    many = AcceptanceRatio(4)      # with evidence the ratio tends to realized / predicted
    for i in range(2000):
        many.begin(1, [(f"r{i}", 10, 4, [0.5, 0.25, 0.0, 0.0])])
        many.commit(f"r{i}", 12)   # 1 accepted of 0.75 predicted
    many.close()
    assert 1 / 0.75 > many.ratio(1) > 0.99 / 0.75   # within 1% over ~WINDOW requests (shrunk towards 1)
    strong = AcceptanceRatio(4)    # `prior`: more pseudo-evidence at 1 (session 43's candidate: 8)
    strong.prior = 8.0
    strong.begin(1, [("a", 10, 4, [0.9, 0.8, 0.7, 0.6])])
    strong.commit("a", 11)         # nothing accepted of 3.0 predicted: 8 / 11, where the default reads 1 / 4
    strong.close()
    assert strong.ratio(1) == pytest.approx(8 / 11)


def test_full_acceptance_per_position_and_aging() -> None:
    """Positions verified only by some requests take their realized ratio from those; the terms
    never grow along the block; evidence fades with engine rounds, widening the upper bound."""
    full = FullAcceptance(3)
    for _ in range(40):   # lone requests verify all 3 drafts: s = (0.5, 0.25, 0.125), 2 accepted
        full.add([0.5, 0.25, 0.125], 3, 2)
    for _ in range(40):   # heavy loads verify 1: s_0 = 0.5, the first draft always accepted
        full.add([0.5, 0.25, 0.125], 1, 1)
    # r_j = (1 + accepted at j) / (1 + predicted at j): r_0 = 81 / 41, r_1 = 41 / 11, r_2 = 1 / 6;
    # terms r_j * mean(s_j), each <= 1 and <= the one before.
    t0 = min(1.0, 81 / 41 * 0.5)
    t1 = min(t0, 41 / 11 * 0.25)
    t2 = min(t1, 1 / 6 * 0.125)
    assert full.mean() == pytest.approx(t0 + t1 + t2)
    assert full.requests == pytest.approx(80.0)
    narrow = full.upper()
    for _ in range(AGE_ROUNDS):
        full.tick()
    assert full.requests == pytest.approx(80.0 / math.e) and full.most == pytest.approx(80.0)
    assert full.mean() < t0 + t1 + t2 and full.upper() > narrow   # older: shrunk more, wider
    unverified = FullAcceptance(2)
    unverified.add([0.9, 0.8], 0, None)                       # nothing realized: predictions stand,
    assert unverified.mean() == pytest.approx(0.9 + 0.8)      # with no evidence behind them
    assert unverified.requests == 0 and unverified.upper() is None


def test_realized_acceptance_overrules_miscalibrated_confidences() -> None:
    """Confidences of 0.3 predict a losing round at 1 request (gain 0.71), but the target accepts
    3 of 4 drafts every round (gain ~2): drafting runs on. Confidences of 0.95 predict a win, but
    nothing is ever accepted: drafting pauses, ever longer. Without commits (an engine that never
    verifies) the predictions alone decide, as before."""
    optimist = DSparkProposer(FakeRunner([0.3]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    drafted = [_verified_round(optimist, 1, 3) for _ in range(300)]
    assert all(drafted[-200:]) and sum(drafted) >= 0.8 * 300, sum(drafted)
    assert optimist.acceptance.ratio(1) > 5 and optimist.pauses.gain(1) > 1
    pessimist = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    drafted = [_verified_round(pessimist, 1, 0) for _ in range(400)]
    assert sum(drafted) <= 32 and sum(drafted[200:]) <= 200 // 64 + 1, sum(drafted)   # ~13 rounds
    assert pessimist.acceptance.ratio(1) < 0.1
    silent = DSparkProposer(FakeRunner([0.3]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    assert sum(_round(silent, 1) for _ in range(300)) <= 4 + 300 // 64


def test_loads_judged_from_the_acceptance_measured_elsewhere() -> None:
    """Drafting wins alone (3 of 4 drafts accepted); at 64 requests even that acceptance with every
    draft verified loses (64 x 4 tokens at 150 rounds/s < 64 x 700 plain), so once
    `MIN_MEASURED_REQUESTS` drafted requests have measured it, rounds at 64 are judged without
    drafting: the drafter never runs there, where the ledger alone probes. As the measurements
    age without new ones, the bound widens and a round at 64 drafts again."""

    def drafter_calls_at_64(proposer: DSparkProposer, rounds: int, alone: int = 80) -> int:
        for _ in range(alone):
            _verified_round(proposer, 1, 3)
        before = proposer.runner.calls
        for _ in range(rounds):
            _verified_round(proposer, 64, 3)
        return proposer.runner.calls - before

    bounded = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    assert drafter_calls_at_64(bounded, 300) == 0
    assert bounded.drafted_rounds == bounded.runner.calls and bounded.skipped_rounds >= 300 - 1
    assert bounded.expected_loss(64) and not bounded.expected_loss(1)
    assert bounded.acceptance.full.mean() == pytest.approx(3.0, abs=0.01)
    back = [_verified_round(bounded, 1, 3) for _ in range(16)]    # alone again, drafting runs on (after
    assert all(back[1:]), back                                    # the one round the engine asks at 64)
    unmeasured = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    unmeasured.acceptance.commit = lambda request_id, num_tokens: 0   # no realized acceptance
    assert drafter_calls_at_64(unmeasured, 300) >= 3                    # the ledger's probes
    aged = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    assert 1 <= drafter_calls_at_64(aged, 6 * AGE_ROUNDS) <= 6 * AGE_ROUNDS // 64


def test_aging_below_the_threshold_widens_the_bound_without_switching_it_off() -> None:
    """`MIN_MEASURED_REQUESTS` holds back `expected_loss` until the evidence has once reached it;
    as it then ages below it (no drafting at heavy loads), the bound rules on, widening. (Before
    session 17 the rule switched off there: on the H200, 54 decayed requests at 64 kept the
    features and flushed them in 20-75 ms steps.)"""
    proposer = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    for _ in range(80):   # 2 of 4 drafts accepted: alone a win, at 64 a loss even at the bound
        _verified_round(proposer, 1, 2)
    full = proposer.acceptance.full
    assert full.requests >= MIN_MEASURED_REQUESTS and not proposer.cannot_pay(64) and proposer.expected_loss(64)
    narrow = full.upper()
    for _ in range(int(1.7 * AGE_ROUNDS)):   # 80 requests decay to ~15
        proposer.acceptance.tick()
    assert full.requests < MIN_MEASURED_REQUESTS <= full.most and full.upper() > narrow
    assert proposer.expected_loss(64)
    young = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    for _ in range(MIN_MEASURED_REQUESTS // 2):
        _verified_round(young, 1, 2)
    assert not young.expected_loss(64)   # never enough evidence yet


def test_drafting_that_realizes_a_loss_pauses_though_an_upper_bound_would_call_it_a_win() -> None:
    """Alone, a round of K verified drafts costs two plain steps (gain = tokens / 2). The target
    accepts 1 draft in 9 of 10 rounds and none in the tenth: 1.9 tokens a round, gain 0.95, a
    loss. The pause policy weighs rounds at the realized acceptance ratio (shrunk towards 1 only
    by `PRIOR`), so drafting pauses ever longer. (With the upper confidence bound used before
    session 14, realized + 2 standard deviations, the same rounds were weighed at a gain above 1
    and drafted on: the H200's 1-request loss of that session.)"""
    proposer = DSparkProposer(FakeRunner([0.5]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    drafted, calls = [], 0
    for _ in range(3000):
        accepted = 0 if calls % 10 == 9 else 1
        drafted.append(_verified_round(proposer, 1, accepted))
        calls += drafted[-1]
    assert sum(drafted[1000:]) <= 2000 // 16, sum(drafted[1000:])   # long pauses: a probe now and then
    assert proposer.pauses.gain(1) < 1.0
    assert proposer.acceptance.ratio(1) < 1.05   # realized 0.9 / 0.94 = 0.96, stale evidence shrinks towards 1


def test_min_replies_waits_for_that_many_replies() -> None:
    """`PausePolicy.min_replies`: the upper bound rules a load out only once body rounds of that
    many distinct requests were committed (one reply's rounds are correlated evidence)."""
    def rounds(proposer: DSparkProposer, replies: int) -> None:
        for _ in range(replies):
            for _ in range(20):   # 2 of 4 drafts accepted: alone a win, at 64 a loss even at the bound
                _verified_round(proposer, 1, 2)
            proposer.remove("r0")   # the reply ends (the next one reuses the id: counted again)

    eager = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    waiting = DSparkProposer(FakeRunner([0.95]), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    waiting.min_replies = 4
    for proposer in (eager, waiting):
        rounds(proposer, 1)
    assert eager.acceptance.replies == waiting.acceptance.replies == 1
    assert eager.expected_loss(64) and not waiting.expected_loss(64)
    rounds(waiting, 2)
    assert waiting.acceptance.replies == 3 and not waiting.expected_loss(64)
    rounds(waiting, 1)
    assert waiting.acceptance.replies == 4 and waiting.expected_loss(64)

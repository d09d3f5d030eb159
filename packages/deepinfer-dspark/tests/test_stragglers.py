# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What a draining batch's last request keeps of a round's gain (`Stragglers`; session 40 on the
H200: 8 requests whose rounds read a gain of 1.08 took 1.18x plain decoding's time a call)."""

from __future__ import annotations

import itertools
import random

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.stragglers import MIN_ROUNDS, MIN_SAMPLE, Stragglers, _expected_drains, running_counts

FLAT = (lambda b: 0.001, lambda b: 0.003)   # plain steps 1 ms, rounds 3 ms at any batch


def finished(stragglers: Stragglers, rid: str, per_round: int, output: int = 128, prompt: int = 10) -> None:
    """A request that emitted `per_round` tokens in each drafted round up to `output` tokens."""
    out = 0
    while out < output:
        gained = min(per_round, output - out)
        stragglers.begin([(rid, prompt + out, out, per_round - 1)])
        stragglers.commit(rid, prompt + out + gained)
        out += gained
    stragglers.finish(rid)


def test_one_speed_and_one_length_keep_the_whole_gain() -> None:
    stragglers = Stragglers(*FLAT)
    for i in range(MIN_SAMPLE - 1):
        finished(stragglers, f"r{i}", 4)
    assert stragglers.factor(8, ) == 1.0                          # too few requests yet
    finished(stragglers, "last", 4)
    assert len(stragglers) == MIN_SAMPLE
    assert stragglers.factor(8, ) == pytest.approx(1.0)
    assert stragglers.factor(1, ) == 1.0


def test_half_slow_requests_leave_a_batch_of_8_the_slow_ones_rate() -> None:
    """Half the requests emit 2 tokens a round, half 4, all 128 tokens: the mean reads 2.67 a
    round, but a batch of 8 holds a slow one unless all 8 are fast (2^-8), so the call's rounds
    are 64 (32 then): 0.753 of the gain at equal costs; at 2 requests 0.75 * 64 + 0.25 * 32."""
    stragglers = Stragglers(*FLAT)
    for i in range(2 * MIN_SAMPLE):
        finished(stragglers, f"r{i}", 2 if i % 2 else 4)
    mean = 2 * 128 / (64 + 32)
    rounds8 = 64 * (1 - 2 ** -8) + 32 * 2 ** -8
    assert stragglers.factor(8, ) == pytest.approx(128 / rounds8 / mean, abs=0.01)
    assert stragglers.factor(2, ) == pytest.approx(128 / (0.75 * 64 + 0.25 * 32) / mean, abs=0.03)
    # Rounds of one request cost a third less: the slow request's last 32 rounds run alone.
    cheaper = Stragglers(lambda b: 0.001, lambda b: 0.002 if b == 1 else 0.003)
    cheaper._sample = stragglers._sample
    assert cheaper.factor(2) > stragglers.factor(2) + 0.02


def drain(needs: list[float], cost: list[float]) -> float:
    """One drawn batch's seconds, written out: after the j-th request (ascending) finishes the rest
    run at len(needs) - j requests."""
    total, done, left = 0.0, 0.0, len(needs)
    for need in sorted(needs):
        total += (need - done) * cost[left]
        done, left = need, left - 1
    return total


def test_drain_charges_each_stretch_at_the_requests_left() -> None:
    assert drain([1.0, 3.0], [0.0, 1.0, 2.0]) == 1.0 * 2.0 + 2.0 * 1.0
    assert drain([2.0, 2.0, 2.0], [0.0, 9.0, 9.0, 5.0]) == 2.0 * 5.0


@pytest.mark.parametrize("seed", range(4))
def test_the_expected_drain_is_the_mean_over_every_batch_drawn(seed: int) -> None:
    """`_expected_drains` against the mean of `drain` over all size^batch ordered draws (fresh
    random needs with ties and costs on every run; two rows, each with its own costs)."""
    rng = random.Random(seed)
    size, batch = rng.choice([(3, 4), (5, 3), (4, 5)])
    rows = [sorted(rng.choice([rng.uniform(1, 100), 50.0]) for _ in range(size)) for _ in range(2)]
    costs = [[rng.uniform(-5.0, 5.0)] + [rng.uniform(0.5, 3.0) for _ in range(batch)] for _ in range(2)]   # [0] unread
    exact = [sum(drain(list(drawn), cost) for drawn in itertools.product(needs, repeat=batch)) / size ** batch
             for needs, cost in zip(rows, costs)]
    assert _expected_drains(rows, costs, running_counts(size, batch)) == pytest.approx(exact, rel=1e-9)


def test_the_factor_is_the_ratio_of_the_expected_drains_over_every_draw() -> None:
    """`factor` end to end against enumeration: a sample of MIN_SAMPLE (length, rounds needed)
    pairs with ties, plain steps and rounds whose cost grows with the requests running."""
    rng = random.Random(7)
    sample = [(length, length / rng.choice([2.0, 4.0, rng.uniform(1.5, 5.0)]))
              for length in (rng.choice([128, 128, rng.randint(20, 128)]) for _ in range(MIN_SAMPLE))]
    plain, drafted = (lambda b: 0.001 + 0.00002 * b), (lambda b: 0.003 + 0.0001 * b)
    stragglers = Stragglers(plain, drafted)
    stragglers._sample.extend(sample)
    batch = 4
    steps, rounds = [0.0] + [plain(b) for b in range(1, 5)], [0.0] + [drafted(b) for b in range(1, 5)]
    draws = list(itertools.product(sample, repeat=batch))
    plain_s = sum(drain([length for length, _ in d], steps) for d in draws)
    drafted_s = sum(drain([need for _, need in d], rounds) for d in draws)
    mean = sum(length for length, _ in sample) / sum(need for _, need in sample)
    expected = min(1.0, plain_s / drafted_s / (mean * steps[batch] / rounds[batch]))
    assert expected < 0.99   # (the case is not the cap's)
    assert stragglers.factor(batch) == pytest.approx(expected, rel=1e-9)


def test_the_binomial_table_is_kept_while_the_sample_size_holds() -> None:
    stragglers = Stragglers(*FLAT)
    for i in range(MIN_SAMPLE):
        finished(stragglers, f"r{i}", 2 + i % 3)
    stragglers.factor(8)
    table = stragglers._running[(MIN_SAMPLE, 8)]
    stragglers._factors.clear()
    stragglers.factor(8)
    assert stragglers._running[(MIN_SAMPLE, 8)] is table          # reused
    finished(stragglers, "one-more", 4)
    stragglers._factors.clear()
    stragglers.factor(8)
    assert set(stragglers._running) == {(MIN_SAMPLE + 1, 8)}      # the old size's tables dropped


def test_running_counts_are_binomial_rows() -> None:
    counts = running_counts(4, 3)
    assert counts.shape == (4, 4)
    assert counts.sum(dim=1).tolist() == pytest.approx([1.0] * 4)
    assert counts[0].tolist() == pytest.approx([0.0, 0.0, 0.0, 1.0])           # every item: all 3 draws
    assert counts[3].tolist() == pytest.approx([27 / 64, 27 / 64, 9 / 64, 1 / 64])   # share 1/4


def test_short_lives_and_foreign_commits_count_nothing() -> None:
    """A request with fewer than `MIN_ROUNDS` drafted rounds, a commit of another step (beyond the
    round's reach, or of a request not drafted for) and a request dropped mid-round join nothing."""
    stragglers = Stragglers(*FLAT)
    finished(stragglers, "short", 4, output=4 * (MIN_ROUNDS - 1))
    stragglers.begin([("a", 10, 0, 3)])
    stragglers.commit("a", 10 + 5)                                      # 5 > 3 verified + 1
    stragglers.commit("b", 11)
    stragglers.finish("a")
    assert len(stragglers) == 0
    finished(stragglers, "long", 4, output=4 * MIN_ROUNDS)
    assert len(stragglers) == 1


K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
SPEC = SPSProfile([5, 10, 20, 40], [500.0, 450.0, 400.0, 330.0])


def test_a_draining_proposer_judges_its_rounds_by_the_straggler(fake_runner) -> None:
    """The same round read by a proposer told the engine drains (and with a sample whose slow half
    sets each call) and by one not told: the ledger's gain scales by the factor, and only while
    draining. Rounds whose gain reads above 1 lose once the straggler prices them."""
    def judged(draining: bool) -> DSparkProposer:
        proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE, judge_stragglers=True)
        for i in range(2 * MIN_SAMPLE):
            finished(proposer.stragglers, f"old{i}", 1 if i % 2 else 5)
        proposer.draining(draining)
        for i in range(8):
            proposer.runner.held[f"r{i}"] = 9
        requests = [DraftRequest(f"r{i}", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40) for i in range(8)]
        assert any(d.token_ids for d in proposer.propose(requests))
        return proposer
    plain, draining = judged(False), judged(True)
    factor = draining.stragglers.factor(8)
    assert 0.5 < factor < 0.8
    assert plain.pauses.gain(8) > 1.0 and plain.pauses.left(8) == 0
    assert draining.pauses.gain(8) == pytest.approx(plain.pauses.gain(8) * factor)
    assert draining.pauses.gain(8) <= 1.0 and draining.pauses.left(8) > 0
    assert draining.pauses.rounds(8) == 1 < SETTLED_ROUNDS


def test_prompt_lookup_passes_draining_and_its_requests_on(fake_runner) -> None:
    inner = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE, judge_stragglers=True)
    assist = LookupAssist(inner, 2)
    assist.track("a", [1, 2, 3])
    assert not inner.stragglers.waiting(1) and inner.stragglers.waiting(0)   # ... and its requests
    assist.draining(True)
    assert inner.draining_batch
    assist.draining(False)
    assert not inner.draining_batch


def test_a_draining_batch_is_ruled_out_by_its_stragglers_acceptance(fake_runner) -> None:
    """`expected_loss` with the same acceptance bound: not ruled out at 8 requests for the mean
    request, ruled out while draining, the bound's tokens a round scaled by the factor."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE, judge_stragglers=True)
    for i in range(2 * MIN_SAMPLE):
        finished(proposer.stragglers, f"old{i}", 1 if i % 2 else 5)
    proposer.acceptance.full.most = 100.0
    proposer.acceptance.body_requests = 100
    proposer.acceptance.full.upper = lambda z=2.0: 2.5
    assert not proposer.costs.loses(8, 2.5) and not proposer.expected_loss(8)
    proposer.draining(True)
    factor = proposer.stragglers.factor(8)
    assert proposer.costs.loses(8, 3.5 * factor - 1.0) and proposer.expected_loss(8)
    assert not proposer.expected_loss(1)                                # one request: no straggler


def test_stragglers_are_judged_only_when_asked(fake_runner, tmp_path) -> None:
    """The proposer judges the mean request unless asked (`judge_stragglers`); the engine's factory
    asks by default since session 49 (`STRAGGLERS_DEFAULT`, H200: +2.3 points at 8 requests), and
    reads the key as a bool."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE)
    proposer.draining(True)
    assert not proposer.draining_batch
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": SPEC, "decode_profile": DECODE}
    assert dspark_factory.validate(base)["judge_stragglers"] is True
    assert dspark_factory.validate({**base, "judge_stragglers": False})["judge_stragglers"] is False
    assert dspark_factory.validate({**base, "judge_stragglers": True})["judge_stragglers"] is True
    with pytest.raises(ValueError, match="speculative_config.judge_stragglers"):
        dspark_factory.validate({**base, "judge_stragglers": "yes"})
    with pytest.raises(ValueError, match="speculative_config.judge_stragglers"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "judge_stragglers": True})


def run_rounds(proposer: DSparkProposer, views: dict[str, list[int]], gains: dict[str, int], rounds: int) -> None:
    """`rounds` drafted rounds of the requests in `views`, each request gaining `gains` tokens a
    round (committed as the engine commits them)."""
    for _ in range(rounds):
        for rid, view in views.items():
            proposer.runner.held[rid] = len(view) - 1
        requests = [DraftRequest(rid, view, K, 0.0, 0, 1.0, 0.0, 0, len(view) - 10) for rid, view in views.items()]
        assert all(d.token_ids for d in proposer.propose(requests))
        for rid, view in views.items():
            view.extend([7] * gains[rid])
            proposer.commit(rid, len(view))


@pytest.mark.parametrize("judged", [True, False])
def test_a_proposer_fills_its_sample_from_its_own_rounds(fake_runner, judged) -> None:
    """Through `track`, `propose`, `commit` and `remove`: a request's rounds and tokens, its last
    round (the engine commits none after a request's last step) and its plain steps after the
    rounds, read from its live list. Nothing is counted unless `judge_stragglers`."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE, judge_stragglers=judged)
    views = {"slow": list(range(10)), "fast": list(range(10))}
    for rid, view in views.items():
        proposer.track(rid, view)
    run_rounds(proposer, views, {"slow": 2, "fast": 1 + K}, MIN_ROUNDS)
    views["fast"].extend([7] * 3)                      # 3 plain steps after its last round
    proposer.remove("fast")
    proposer.runner.held["slow"] = len(views["slow"]) - 1
    slow = DraftRequest("slow", views["slow"], K, 0.0, 0, 1.0, 0.0, 0, len(views["slow"]) - 10)
    assert proposer.propose([slow])[0].token_ids
    views["slow"].extend([7] * 3)                      # its last round: never committed
    proposer.remove("slow")
    if not judged:
        assert len(proposer.stragglers) == 0
        return
    fast_out, slow_out = MIN_ROUNDS * (1 + K) + 3, MIN_ROUNDS * 2 + 3
    assert list(proposer.stragglers._sample) == [(fast_out, fast_out / (1 + K)),
                                                 (slow_out, slow_out * (MIN_ROUNDS + 1) / slow_out)]


def test_no_straggler_while_requests_wait(fake_runner) -> None:
    """A batch whose freed slots other requests take is not drained: the factor holds only once
    no tracked request waits."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE, judge_stragglers=True)
    for i in range(2 * MIN_SAMPLE):
        finished(proposer.stragglers, f"old{i}", 1 if i % 2 else 5)
    proposer.draining(True)
    for i in range(9):
        proposer.track(f"r{i}", list(range(10)))
    assert proposer._straggler_factor(8) == 1.0                        # one of 9 waits
    proposer.remove("r8")
    assert proposer._straggler_factor(8) == proposer.stragglers.factor(8) < 0.8


def test_the_factors_are_drawn_again_once_the_sample_grew_by_an_eighth() -> None:
    stragglers = Stragglers(*FLAT)
    for i in range(2 * MIN_SAMPLE):
        finished(stragglers, f"a{i}", 4)
    assert stragglers.factor(8) == pytest.approx(1.0)
    finished(stragglers, "slow0", 1)
    assert stragglers.factor(8) == pytest.approx(1.0)                  # 1 of 2 needed (17 // 8)
    finished(stragglers, "slow1", 1)
    assert stragglers.factor(8) < 0.9

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`run_noise`: what the slowest of a drained batch's requests keeps of a drafted run's gain,
and `speculative_config.run_noise`, which scales a draining batch's judged rounds by it."""

from __future__ import annotations

import math
import random
import statistics

import pytest
import torch

from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.run_noise import MIN_REQUEST_ROUNDS, RoundSpread, expected_max_normal, run_factor
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.straggler_judgement import RUN_NOISE_ROUNDS
from deepinfer_dspark.stragglers import Stragglers

K = 7


def spread_of(values) -> RoundSpread:
    out = RoundSpread()
    for v in values:
        out.add(v)
    return out


def round_tokens(rng: random.Random, accept: float = 0.74) -> int:
    """A request's tokens in a round of K drafts, each accepted with `accept` until one is not."""
    n = 0
    while n < K and rng.random() < accept:
        n += 1
    return n + 1


def exact_spread(accept: float = 0.74) -> RoundSpread:
    """A spread holding `round_tokens`' exact mean and deviation (as if measured over 10^6 rounds)."""
    probs = [accept ** a * (1 - accept) for a in range(K)] + [accept ** K]   # accepted drafts 0..K
    mean = sum((a + 1) * q for a, q in enumerate(probs))
    var = sum((a + 1 - mean) ** 2 * q for a, q in enumerate(probs))
    out = RoundSpread()
    out.count, out.mean, out._m2 = 10 ** 6, mean, var * (10 ** 6 - 1)
    return out


def test_expected_max_normal_matches_the_order_statistics() -> None:
    """Closed forms for 1-3 draws, and a fresh Monte Carlo estimate for 8 and 64."""
    assert expected_max_normal(1) == pytest.approx(0.0, abs=1e-4)
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-4)
    assert expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-4)
    gen = torch.Generator().manual_seed(random.randrange(2**31))
    for m in (8, 64):
        draws = torch.randn(200_000, m, generator=gen, dtype=torch.float64).amax(dim=1).mean().item()
        assert expected_max_normal(m) == pytest.approx(draws, abs=0.01)
    with pytest.raises(ValueError, match="m: must be >= 1"):
        expected_max_normal(0)


def test_round_spread_is_the_sample_mean_and_deviation() -> None:
    rng = random.Random()
    values = [round_tokens(rng) for _ in range(rng.randrange(50, 500))]
    spread = spread_of(values)
    assert spread.count == len(values)
    assert spread.mean == pytest.approx(statistics.mean(values))
    assert spread.std == pytest.approx(statistics.stdev(values))
    assert spread_of([3]).std == 0.0


def test_run_factor_is_one_where_nothing_straggles() -> None:
    spread = spread_of([1, 8] * MIN_REQUEST_ROUNDS)
    assert run_factor(1, 4.0, spread, 0, 4) == 1.0                          # one request: its own mean
    assert run_factor(8, 4.0, spread_of([1, 8] * (MIN_REQUEST_ROUNDS // 2)), 0, 4) < 1.0
    assert run_factor(8, 4.0, spread_of([1, 8] * (MIN_REQUEST_ROUNDS // 2) + [1]), 0, 4) < 1.0
    too_few = spread_of(([1, 8] * MIN_REQUEST_ROUNDS)[:MIN_REQUEST_ROUNDS - 1])
    assert run_factor(8, 4.0, too_few, 0, 4) == 1.0   # one request-round short of the threshold
    assert run_factor(8, 1.0, spread, 0, 4) == 1.0                          # nothing but bonus tokens
    assert run_factor(8, 4.0, spread_of([4] * MIN_REQUEST_ROUNDS), 0, 4) == 1.0     # no spread
    assert run_factor(8, 4.0, spread, 0, 4) < 1.0


def test_run_factor_shrinks_with_the_batch_and_grows_with_the_run() -> None:
    spread = spread_of([round_tokens(random.Random(s)) for s in range(400)])
    t = spread.mean
    by_batch = [run_factor(b, t, spread, 0, 8) for b in (2, 4, 8, 32)]
    assert by_batch == sorted(by_batch, reverse=True) and len(set(by_batch)) == 4
    by_rounds = [run_factor(8, t, spread, 0, r) for r in (2, 4, 8, 32)]
    assert by_rounds == sorted(by_rounds) and len(set(by_rounds)) == 4
    assert run_factor(8, t, spread, 24, 8) > run_factor(8, t, spread, 0, 8)   # later rounds straggle less
    assert run_factor(256, t, spread, 0, 1) == pytest.approx(1.0 / t)          # at least the bonus token
    # two requests after 16 rounds each, 9 more: e_2 s (sqrt(25) - sqrt(16)) / 9 tokens short of t a round
    assert run_factor(2, t, spread, 16, 9) == pytest.approx(1.0 - spread.std / (9 * math.sqrt(math.pi) * t), abs=1e-4)


@pytest.mark.parametrize("batch, rounds, low", [(8, 4, 0.07), (8, 8, 0.035), (8, 32, 0.02), (4, 8, 0.025)])
def test_run_factor_predicts_the_slowest_request(batch: int, rounds: int, low: float) -> None:
    """Simulated runs: B requests drawing their tokens round by round; the fewest tokens any holds
    after R rounds, over R times the mean round, against the factor at the draws' exact mean and
    deviation. The normal approximation of a sum of R rounds reads low over few rounds (the sums
    are skewed: 0.52 against 0.55 at 8 requests and 4 rounds), so the factor sits within `low`
    below the realized share and at most 0.015 above it."""
    rng = random.Random()
    spread = exact_spread()
    kept = []
    for _ in range(5000):
        kept.append(min(sum(round_tokens(rng) for _ in range(rounds)) for _ in range(batch)))
    realized = statistics.mean(kept) / (rounds * spread.mean)
    assert realized - low <= run_factor(batch, spread.mean, spread, 0, rounds) <= realized + 0.015


def test_stragglers_take_the_fewest_drafted_rounds_of_the_run() -> None:
    """`Stragglers.run_factor` counts each request's drafted rounds from its commits: a request
    that has drafted nothing yet makes the run a fresh one."""
    s = Stragglers(lambda b: 1.0, lambda b: 2.0)
    rng = random.Random()
    lengths = {"a": 10, "b": 10}
    s.track("a", [1] * 10)
    s.track("b", [1] * 10)
    for _ in range(40):   # 40 rounds of "a" alone: the spread fills, "b" has none
        gained = round_tokens(rng)
        s.begin([("a", lengths["a"], 0, K)])
        lengths["a"] += gained
        s.commit("a", lengths["a"])
    assert s.spread.count == 40
    fresh = s.run_factor(8, {"a", "b"}, 8, s.spread.mean)
    assert fresh == pytest.approx(run_factor(8, s.spread.mean, s.spread, 0, 8))
    assert s.run_factor(8, {"a"}, 8, s.spread.mean) == pytest.approx(run_factor(8, s.spread.mean, s.spread, 40, 8))
    assert s.run_factor(8, {"a"}, 8, s.spread.mean) > fresh
    s.begin([("a", lengths["a"], 0, K)])
    s.commit("a", lengths["a"] + K + 5)   # outside the round's reach: not a round, not in the spread
    assert s.spread.count == 40


def test_a_finished_request_no_longer_counts_in_the_run() -> None:
    """A round judged late (`overlap_bookkeeping`) may name a request that has finished since: the
    fewest drafted rounds are taken over the requests still tracked, not read as a fresh one."""
    s = Stragglers(lambda b: 1.0, lambda b: 2.0)
    rng = random.Random()
    views = {rid: [1] * 10 for rid in "ab"}
    for rid in "ab":
        s.track(rid, views[rid])
    for n in range(30):
        for rid in "ab" if n < 29 else "a":   # "b" one round behind
            s.begin([(rid, len(views[rid]), 0, K)])
            views[rid].extend([1] * round_tokens(rng))
            s.commit(rid, len(views[rid]))
    t = s.spread.mean
    assert s.run_factor(2, {"a", "b"}, 8, t) == pytest.approx(run_factor(2, t, s.spread, 29, 8))
    s.finish("b")
    assert s.run_factor(2, {"a", "b"}, 8, t) == pytest.approx(run_factor(2, t, s.spread, 30, 8))


def proposer(fake_runner, noise: bool) -> DSparkProposer:
    p = DSparkProposer(fake_runner(4, 0.9), 4, SPSProfile([5, 40], [500.0, 200.0]),
                       decode=SPSProfile([1, 8], [1000.0, 1000.0]), judge_stragglers=True)
    p.run_noise = noise
    p.draining(True)
    spread = [round_tokens(random.Random(s)) for s in range(64)]
    for v in spread:
        p.stragglers.spread.add(v)
    return p


def test_a_draining_round_carries_its_run_noise(fake_runner) -> None:
    """With `run_noise`, a draining batch's round (opening or body) is judged by what the slowest
    request keeps of a run of `RUN_NOISE_ROUNDS`, or by the sample's factor where that is smaller;
    without it, without the round's requests, or while requests wait (the batch is refilled), the
    factor stays the sample's (1.0 here: no finished requests)."""
    judged = {}
    ids = frozenset("abcd")
    for noise in (False, True):
        p = proposer(fake_runner, noise)
        for rid in "abcd":
            p.stragglers.track(rid, [1] * 10)
        p._plan_pause(2.0, [4] * 4, 4, opening=True, ids=ids)
        judged[noise] = (p.judged_straggler, p.judged[4])
        if not noise:
            continue
        for opening in (True, False):
            tokens = (4 + min(2.0 * p.acceptance.ratio(4, opening), 16.0)) / 4
            want = p.stragglers.run_factor(4, ids, RUN_NOISE_ROUNDS, tokens)
            p._plan_pause(2.0, [4] * 4, 4, opening=opening, ids=ids)
            assert p.judged_straggler == pytest.approx(want) and want < 1.0
        p._plan_pause(2.0, [4] * 4, 4, ids=None)   # the round's requests unknown: no run noise
        assert p.judged_straggler == 1.0
        p.stragglers.factor = lambda batch: 0.97   # a sample's factor: the smaller one is taken
        p._plan_pause(2.0, [4] * 4, 4, ids=ids)
        assert p.judged_straggler == pytest.approx(want)
        p.stragglers.factor = lambda batch: 0.3
        p._plan_pause(2.0, [4] * 4, 4, ids=ids)
        assert p.judged_straggler == 0.3
        p.stragglers.track("e", [1] * 10)   # a fifth request waits for a slot: refilled, not drained
        p._plan_pause(2.0, [4] * 4, 4, opening=True, ids=ids)
        assert p.judged_straggler == 1.0
    assert judged[False][0] == 1.0
    assert judged[True][0] < 1.0 and judged[True][1] < judged[False][1]   # the gain it scaled


def test_the_run_noise_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.run_noise` (session 70's candidate): off by default, set on the proposer
    under the prompt-lookup wrapper, checked as a bool and confidence-only; `confidence-run-noise`
    asks for it."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).run_noise is False
    assert kit.dspark_proposer(target, {**spec, "run_noise": True}).run_noise is True
    kit.rejects_bool_key(target, drafter, "run_noise")
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-run-noise"]["run_noise"] is True
    assert "run_noise" not in configs["confidence"]
    assert "confidence-run-noise" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)

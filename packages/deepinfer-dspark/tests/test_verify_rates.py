# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""VerifyRates: the round rate Algorithm 1 reads, interpolated in the verified tokens between a
round verifying 1 draft per request and one verifying k (the H200's rounds of 1 request cost
2.8 ms verifying 1 and 3.5 ms verifying 7, BENCHMARKS.md session 12)."""

from __future__ import annotations

import random

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.scheduler import row_survivals, schedule_prefixes, schedule_rows
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.verify_rates import RoundRate, VerifyRates

# The H200 profiles of session 12 (run 3), rounded: k = 7 rounds (batch tokens 8 B) and k = 1.
LONG = SPSProfile([8, 16, 32, 64, 128, 256], [290.0, 278.0, 326.0, 243.0, 198.0, 155.0])
SHORT = SPSProfile([2, 4, 8, 16, 32, 64], [355.0, 340.0, 380.0, 300.0, 250.0, 200.0])


def test_without_the_short_profile_the_rate_is_the_long_profile() -> None:
    rates = VerifyRates(LONG, 7)
    assert rates.for_batch(1) is LONG and rates.for_batch(64) is LONG
    assert VerifyRates(LONG, 1, SHORT).for_batch(8) is LONG   # k = 1: nothing to interpolate


@pytest.mark.parametrize("batch", [1, 3, 8, 40])
def test_exact_at_both_measured_rounds_linear_between_held_below(batch: int) -> None:
    rate = VerifyRates(LONG, 7, SHORT).for_batch(batch)
    short, long = SHORT.at(2 * batch), LONG.at(8 * batch)
    assert rate.at(2 * batch) == pytest.approx(short, rel=1e-12)
    assert rate.at(8 * batch) == pytest.approx(long, rel=1e-12)
    for t in range(batch, 2 * batch + 1):   # drafting is paid whatever is verified
        assert rate.at(t) == pytest.approx(short, rel=1e-12)
    times = [1 / rate.at(t) for t in range(2 * batch, 8 * batch + 1)]
    steps = [b - a for a, b in zip(times, times[1:])]
    assert max(steps) - min(steps) < 1e-12 and min(steps) >= 0   # linear in time, never faster with more
    gen = torch.Generator().manual_seed(batch)
    tokens = torch.randint(batch, 9 * batch, (50,), generator=gen)
    expected = torch.tensor([rate.at(int(t)) for t in tokens], dtype=torch.float64)
    assert torch.allclose(rate(tokens), expected, rtol=1e-12, atol=0)


def test_a_short_round_slower_than_the_long_one_gives_a_flat_rate() -> None:
    rate = RoundRate(4, short_time=0.004, long_time=0.003, num_tokens=7)
    assert rate.slope == 0 and rate.at(8) == rate.at(32) == pytest.approx(250.0)


def brute_force(row: list[float], rate) -> int:
    """The prefix length maximising (1 + accepted) * rate(1 + length) for one request."""
    theta = [(1 + sum(row[:n])) * rate(1 + n) for n in range(len(row) + 1)]
    return max(range(len(theta)), key=lambda n: (theta[n], -n))


def test_one_request_verifies_fewer_drafts_and_matches_brute_force() -> None:
    """On the single k = 7 profile (flat from 2 to 8 tokens) one request verifies all its drafts;
    with the k = 1 round measured 20% faster it stops where the brute force does."""
    rng = random.Random(0)
    fewer = 0
    for _ in range(200):
        conf = sorted((rng.uniform(0.3, 0.95) for _ in range(7)), reverse=True)
        row = row_survivals(conf, 7)
        rate = VerifyRates(LONG, 7, SHORT).for_batch(1)
        chosen = schedule_rows([row], rate.at)[0]
        assert chosen == brute_force(row, rate.at)
        assert schedule_rows([row], LONG.at)[0] == 7
        fewer += chosen < 7
    assert fewer > 100


def test_tensor_and_list_paths_agree_on_large_rounds() -> None:
    """Rounds above `SMALL_SCHEDULE` candidates go through the tensor path with the same rate.
    At 20 requests the single profile read at the verified token count (40-160) gives the rates of
    full rounds of 5-20 requests, steeper than the cost of verifying more in one round of 20:
    with both profiles more drafts are verified."""
    gen = torch.Generator().manual_seed(5)
    conf = torch.rand(20, 7, generator=gen, dtype=torch.float64) * 0.7 + 0.3
    survival = torch.cumprod(conf, dim=1)
    rate = VerifyRates(LONG, 7, SHORT).for_batch(20)
    tensor = schedule_prefixes(survival, rate).tolist()
    assert tensor == schedule_rows(survival.tolist(), rate.at)
    assert sum(tensor) > sum(schedule_prefixes(survival, LONG).tolist())


def test_the_proposer_reads_the_short_profile(fake_runner) -> None:
    confidences = [0.9, 0.7, 0.6, 0.5, 0.5, 0.4, 0.4]
    lengths = {}
    for name, short in (("long", None), ("both", SHORT)):
        proposer = DSparkProposer(fake_runner(7, confidences), 7, LONG, short_sps=short)
        proposer.observe_step(["a"], [0], [10], [0], torch.zeros(10, 1))
        drafts = proposer.propose([DraftRequest("a", [1] * 11, 7, 0.0, 0, 1.0, 0.0, 0, 40)])
        lengths[name] = len(drafts[0].token_ids)
    row = row_survivals(confidences, 7)
    assert lengths == {"long": 7, "both": brute_force(row, VerifyRates(LONG, 7, SHORT).for_batch(1).at)}
    assert lengths["both"] < 7


def test_the_pause_decision_prices_the_round_it_chose(fake_runner) -> None:
    """One request. On the k = 7 profile alone it verifies all 7 drafts and the full round
    (3.45 ms) loses to plain decoding at 950 steps/s: drafting pauses. With the k = 1 profile it
    verifies 4, the round is priced at its own 5 tokens (about 3.1 ms), wins, and drafting goes on."""
    confidences = [0.9, 0.7, 0.6, 0.5, 0.5, 0.4, 0.4]
    decode = SPSProfile([1, 8], [950.0, 900.0])
    idle = {}
    for name, short in (("long", None), ("both", SHORT)):
        proposer = DSparkProposer(fake_runner(7, confidences), 7, LONG, decode=decode, short_sps=short)
        proposer.observe_step(["a"], [0], [10], [0], torch.zeros(10, 1))
        proposer.propose([DraftRequest("a", [1] * 11, 7, 0.0, 0, 1.0, 0.0, 0, 40)])
        lengths, tau = proposer.lengths, 1 + sum(row_survivals(confidences, 7)[:proposer.lengths[0]])
        assert proposer.acceptance.ratio(1) >= 1   # no evidence yet: tau is the predicted one
        rate = LONG.at(8) if short is None else VerifyRates(LONG, 7, SHORT).for_batch(1).at(1 + lengths[0])
        assert (tau * rate <= 950.0) == (name == "long"), (name, lengths, tau * rate)
        idle[name] = proposer.idle_rounds()
    assert idle["long"] > 0 and idle["both"] == 0


def test_full_round_pricing_verifies_every_draft(fake_runner) -> None:
    """`full_round` (`prefix_pricing`): every round of B requests at the full round's rate, so
    Algorithm 1 verifies all drafts where the single profile (read at the verified tokens, the
    rate of a full round of fewer requests) verifies short prefixes at 8 requests."""
    rates = VerifyRates(LONG, 7, full_round=True)
    for batch in (1, 8, 32):
        rate = rates.for_batch(batch)
        assert rate.at(batch) == rate.at(8 * batch) == pytest.approx(LONG.at(8 * batch), rel=1e-12)
    with pytest.raises(ValueError, match="full_round"):
        VerifyRates(LONG, 7, SHORT, full_round=True)
    confidences = [0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4]
    verified = {}
    for full in (False, True):
        proposer = DSparkProposer(fake_runner(7, confidences), 7, LONG, full_round=full)
        ids = [f"r{i}" for i in range(8)]
        proposer.observe_step(ids, [0] * 8, [10] * 8, [10 * i for i in range(8)], torch.zeros(80, 1))
        proposer.propose([DraftRequest(r, [1] * 11, 7, 0.0, 0, 1.0, 0.0, 0, 40) for r in ids])
        verified[full] = sum(proposer.lengths)
    assert verified[True] == 56 and verified[False] < 56, verified


def test_prefix_pricing_is_a_checked_key(folders, kit) -> None:
    target, drafter = folders
    base = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": LONG}
    with pytest.raises(ValueError, match="speculative_config.prefix_pricing: expected 'profile' or 'full_round'"):
        kit.build(target, {**base, "prefix_pricing": "flat"})
    with pytest.raises(ValueError, match="speculative_config.prefix_pricing: only used with scheduling='confidence'"):
        kit.build(target, {**base, "scheduling": "fixed", "sps_profile": None, "prefix_pricing": "full_round"})
    with pytest.raises(ValueError, match="speculative_config.prefix_pricing: 'full_round'.*sps_profile_k1"):
        kit.build(target, {**base, "sps_profile_k1": SHORT, "prefix_pricing": "full_round"})
    batch = kit.prompts(3, seed=2)
    llm = kit.build(target, {**base, "prefix_pricing": "full_round"})
    assert kit.greedy(llm, batch) == kit.greedy(kit.build(target), batch)   # lossless
    assert llm.engine.speculative.proposer.verify_rates.full_round

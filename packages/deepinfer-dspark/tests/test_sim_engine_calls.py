# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/sim_engine_calls.py`: the pause policy driven by the engine's own call sequence
(core's `DormantSteps`, `wants_features`, `idle_rounds`, `propose`)."""

from __future__ import annotations

import random
import types

import pytest
from deepinfer_core.engine.dormant_steps import DormantSteps

from deepinfer_dspark.draft_costs import PROBE_SHARE
from deepinfer_dspark.full_acceptance import AGE_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

# k = 7: a round of 8 tokens at 400/s against 1000 plain steps/s pays alone with ~1.5 accepted
# drafts; from 4 requests (32 tokens at 100/s against 950 steps/s) it never can.
SPEC = SPSProfile([8, 32], [400.0, 100.0])
DECODE = SPSProfile([1, 4], [1000.0, 950.0])

# An H100's profiles, session 61 (benchmarks/results/h200-2026-12-04i/run2-table/out-h100-s61-low, rounded): plain
# steps a second by requests, k = 7 rounds a second by requests x 8 tokens.
H100_DECODE = SPSProfile([1, 2, 4, 8, 16, 32], [983.1, 971.1, 983.2, 917.9, 888.5, 879.5])
H100_ROUNDS = SPSProfile([8, 16, 32, 64, 128, 256], [390.8, 348.7, 349.5, 298.7, 239.4, 184.2])


@pytest.fixture
def sim(benchmark_script):
    return benchmark_script("sim_engine_calls")


def args(**kw):
    base = dict(k=7, plan=[(1, 3), (4, 3)], equal=True, capture=0.02, flush=1.5, sync=0.9, hard=None)
    return types.SimpleNamespace(**{**base, **kw})


def test_a_run_is_reproducible_and_a_load_that_cannot_pay_stays_dormant(sim) -> None:
    first = sim.simulate(args(), DECODE, SPEC, 0.9, seed=0)
    assert first == sim.simulate(args(), DECODE, SPEC, 0.9, seed=0)
    assert first[1][0] > 1.2 and first[1][1] > 1.2          # a confident drafter pays alone
    assert first[4][1] < 0.5 and first[4][0] > 0.99          # at 4 drafting cannot pay: plain decoding's time
    proposer = DSparkProposer(sim.sim.FakeRunner(7, 0.9, random.Random(0), sim.EARLY), 7, SPEC, decode=DECODE)
    clock = sim.Clock(DECODE, SPEC, 7, 0.02, 1.5, 0.9)
    marks = sim.run_batch(proposer, DormantSteps(proposer), [128] * 4, [f"r{i}" for i in range(4)],
                          random.Random(0), clock)
    assert len(marks) == 128 and "D" not in marks and marks.count("z") > 100, marks   # dormant stretches


def test_drafted_rounds_and_syncs_are_charged(sim) -> None:
    clock = sim.Clock(DECODE, SPEC, 7, 0.5, 2.0, 1.0)
    clock.plain(1, captured=True, synced=False)
    assert clock.seconds == pytest.approx(1.5 / 1000)
    clock.drafted(1)                                          # after a plain step: the flush
    assert clock.seconds == pytest.approx(1.5 / 1000 + 1 / 400 + 2.0 / 1000)
    clock.plain(1, captured=False, synced=False)              # after a drafted round: a sync
    assert clock.seconds == pytest.approx(1.5 / 1000 + 1 / 400 + 2.0 / 1000 + 2.0 / 1000)
    assert clock.extra == pytest.approx({"capture": 0.5 / 1000, "sync": 1.0 / 1000, "flush": 2.0 / 1000})


def test_a_flush_per_pair_charges_the_pairs_captured_since_the_last_round_or_drop(sim) -> None:
    """`--flush-per-pair`: a flush costs more with each (request, step) pair captured since the last
    drafted round; an uncaptured step (declined, dormant) drops the buffer (session 39)."""
    clock = sim.Clock(DECODE, SPEC, 7, 0.0, 1.0, 0.0, flush_per_pair=0.25)
    for _ in range(3):
        clock.plain(4, captured=True, synced=False)            # 12 pairs buffered
    before = clock.seconds
    clock.drafted(4)
    assert clock.extra["flush"] == pytest.approx((1.0 + 0.25 * 12) / 950)
    assert clock.seconds - before == pytest.approx(1 / 100 + (1.0 + 0.25 * 12) / 950)
    clock.plain(4, captured=True, synced=False)                # 4 pairs, then dropped by an uncaptured step
    clock.plain(4, captured=False, synced=False)
    clock.plain(4, captured=True, synced=False)                # 4 pairs left for the next flush
    flushed = clock.extra["flush"]
    clock.drafted(4)
    assert clock.extra["flush"] - flushed == pytest.approx((1.0 + 0.25 * 4) / 950)


def test_the_proposers_flush_costs_read_what_the_clock_charges(sim) -> None:
    """`ModelledFlushCosts`: a drafted round's span is its profile's round (times `--round-cost`)
    plus, after buffered features, `--flush` and `--flush-per-pair` plain steps for the pairs the
    proposer flushed, so `per_pair` reads the per-pair charge (the host's clock would read ~0)."""
    costs = sim.ModelledFlushCosts(DECODE, SPEC, 7, 1.0, 0.25, round_cost=2.0)
    costs.add(4, 123.0, False)
    costs.add(4, 123.0, True, 12)
    assert costs.extra(4) == pytest.approx((1.0 + 0.25 * 12) / 950)
    assert costs.per_pair() is None
    costs.add(4, 123.0, True, 40)
    assert costs.per_pair() is None                            # (the first flush is left out as cold)
    costs.add(4, 123.0, True, 90)
    assert costs.per_pair() == pytest.approx(0.25 / 950)
    assert costs._spans[(False, 4)][0] == pytest.approx(2.0 / 100)


def test_round_cost_charges_drafted_rounds_above_the_profile_the_proposer_reads(sim) -> None:
    """`--round-cost`: rounds dearer than the profile lower the policy's and fixed-k's ratios;
    plain steps and the flush are charged as before."""
    clock = sim.Clock(DECODE, SPEC, 7, 0.5, 2.0, 1.0, round_cost=1.5)
    clock.drafted(1)
    assert clock.seconds == pytest.approx(1.5 / 400 + 2.0 / 1000)
    fair, dear = (sim.simulate(args(round_cost=cost), DECODE, SPEC, 0.9, seed=0) for cost in (1.0, 1.5))
    assert dear[1][1] == pytest.approx(fair[1][1] / 1.5)     # fixed-k: every step a round
    assert dear[1][0] < fair[1][0]                           # the policy drafts at 1 and pays more there


def test_measured_round_times_recover_rounds_dearer_than_the_profile(sim) -> None:
    """`--measure-rounds`: with rounds 2.5x their profile a confident drafter's proposer, blind,
    drafts on at 0.81x plain decoding; timing its runs of rounds it pauses (0.93x: probes and
    transitions; 0.928 since session 36's aging estimate, 0.931 when it was dropped at once); with
    rounds on their profile the timing changes nothing."""
    blind, timed = (sim.simulate(args(round_cost=2.5, measure_rounds=m, equal=False, plan=[(1, 12)]), DECODE, SPEC,
                                 0.9, seed=0) for m in (False, True))
    assert blind[1][0] < 0.85 < 0.92 < timed[1][0], (blind, timed)
    priced = sim.simulate(args(round_cost=2.5, priced=True, equal=False, plan=[(1, 12)]), DECODE, SPEC, 0.9, seed=0)
    assert priced[1][0] > blind[1][0] + 0.1 and priced[1][1] == blind[1][1]   # fixed-k: charged alike
    fair = sim.simulate(args(measure_rounds=False), DECODE, SPEC, 0.9, seed=0)
    assert sim.simulate(args(measure_rounds=True), DECODE, SPEC, 0.9, seed=0) == fair


def test_the_breakdown_adds_up_to_the_ratio(sim) -> None:
    """`--breakdown`: the overheads' and the rounds' shares of plain decoding's time add up to
    the policy's time over it."""
    out = sim.simulate(args(), DECODE, SPEC, 0.9, seed=0)
    for ratio, _, shares in out.values():
        assert set(shares) == {"capture", "sync", "flush", "rounds"}
        assert 1.0 + sum(shares.values()) == pytest.approx(1.0 / ratio)
    assert out[1][2]["rounds"] < 0 < out[1][2]["flush"]      # at 1 drafting pays, after its transitions


def test_a_batch_whose_requests_all_have_gaps_stays_dormant(sim) -> None:
    """Four requests whose contexts have gaps (declined earlier) at a load where drafting may pay:
    one `propose` finds nothing ready, then the batch is dormant to its end. Before session 20
    it captured features it could not use to its end, with a sync every 32 steps ('k', 's')."""
    proposer = DSparkProposer(sim.sim.FakeRunner(7, 0.9, random.Random(0), sim.EARLY), 7, SPEC,
                              decode=SPSProfile([1, 4], [1000.0, 200.0]))   # 4 requests: drafting may pay
    assert not proposer.cannot_pay(4)
    ids = [f"g{i}" for i in range(4)]
    proposer._last_batch = 4
    proposer._pause_for(1, 4, ruled_out=True)   # the prefill's features are declined: gaps
    marks = sim.run_batch(proposer, DormantSteps(proposer), [128] * 4, ids, random.Random(0),
                          sim.Clock(DECODE, SPEC, 7, 0.02, 1.5, 0.9))
    assert len(marks) == 128 and marks.count("z") >= 126 and "D" not in marks, marks   # a step or two to find out


def test_hard_replies_accept_below_their_confidences(sim) -> None:
    """`--hard SHARE FACTOR`: with every reply accepting nothing (factor 0) a drafter confident
    enough to pay alone pays nothing: the policy, which then pauses, runs near plain decoding's
    time, not above it; half the replies at factor 0.5 land in between."""
    free = sim.simulate(args(plan=[(1, 6)]), DECODE, SPEC, 0.9, seed=0)[1][0]
    none = sim.simulate(args(plan=[(1, 6)], hard=(1.0, 0.0)), DECODE, SPEC, 0.9, seed=0)[1][0]
    half = sim.simulate(args(plan=[(1, 6)], hard=(0.5, 0.5)), DECODE, SPEC, 0.9, seed=0)[1][0]
    assert free > 1.2 and none < 1.0 and none < half < free, (free, half, none)


def test_fixed_k_replies_are_as_hard_as_the_policys(sim) -> None:
    """Fixed-k's time is charged on the same hard replies as the policy's (until session 42 it
    ignored `--hard`, so every cell compared the policy on hard replies with fixed-k on easy
    ones): all replies at factor 0 leave fixed-k one token a round, below plain decoding; the
    policy pauses, near plain decoding's time."""
    free = sim.simulate(args(plan=[(1, 6)]), DECODE, SPEC, 0.9, seed=0)[1]
    none = sim.simulate(args(plan=[(1, 6)], hard=(1.0, 0.0)), DECODE, SPEC, 0.9, seed=0)[1]
    assert free[1] > 1.2 and none[1] == pytest.approx(400 / 1000)   # a round of 8 tokens for 1
    assert none[0] > 0.9 > none[1]
    work = [[40, 60]]
    assert sim.sim.fixed_seconds(SPEC, 7, 0.9, work, 3, hard=[[0.5, 1.0]]) > \
        sim.sim.fixed_seconds(SPEC, 7, 0.9, work, 3, hard=[[1.0, 1.0]]) == sim.sim.fixed_seconds(SPEC, 7, 0.9, work, 3)


def test_early_sets_the_openings_confidence_and_acceptance(sim) -> None:
    """`--early TOKENS P` (default 30 0.5, session 19's drafter); TOKENS 0: openings like the rest
    of a reply (session 41's K = 3 drafter on the H200). Fixed-k gains where openings accept as
    much as the rest."""
    assert sim._early(types.SimpleNamespace()) == sim.EARLY == (30, 0.5)
    assert sim._early(types.SimpleNamespace(early=(0.0, 0.0))) is None
    assert sim._early(types.SimpleNamespace(early=(16.0, 0.4))) == (16, 0.4)
    weak, even = (sim.simulate(args(plan=[(1, 6)], early=early), DECODE, SPEC, 0.8, seed=0)[1]
                  for early in ((30.0, 0.5), (0.0, 0.0)))
    assert even[1] > weak[1] + 0.05


def test_a_closed_loop_keeps_the_slots_full(sim) -> None:
    """`--closed`: each concurrency's requests run as one stream, C at a time; plain decoding's
    time counts full slots until the queue empties (`stream_seconds`), and every request runs."""
    lengths = [5, 3, 4, 2]
    # two slots: steps 1-3 run the 5 and the 3 (the 3 ends), steps 4-5 the 5 and the 4 (the 5
    # ends), steps 6-7 the 4 and the 2: seven steps of two, none alone.
    assert sim.stream_seconds(DECODE, lengths, 2) == pytest.approx(7 / DECODE.at(2))
    assert sim.stream_seconds(DECODE, lengths, 4) == pytest.approx(2 / DECODE.at(4) + 1 / DECODE.at(3)
                                                                    + 1 / DECODE.at(2) + 1 / DECODE.at(1))
    proposer = DSparkProposer(sim.sim.FakeRunner(7, 0.9, random.Random(0), sim.EARLY), 7, SPEC, decode=DECODE)
    clock = sim.Clock(DECODE, SPEC, 7, 0.02, 1.5, 0.9)
    marks = sim.run_batch(proposer, DormantSteps(proposer), [40, 40], ["a", "b"], random.Random(0), clock,
                          queue=[("c", 40), ("d", 40), ("e", 40)])
    assert 2 * 40 <= len(marks) * 2 and len(marks) < 5 * 40   # 200 tokens through 2 slots, some drafted
    out = sim.simulate(args(plan=[(1, 4)], closed=True), DECODE, SPEC, 0.9, seed=0)
    assert out[1][0] > 1.1 and out[1][1] != out[1][1]   # a confident drafter pays alone; fixed-k: NaN


def test_looping_replies_accept_from_their_loop_on(sim) -> None:
    """`--loops SHARE FROM TO`: a reply in a loop accepts around 0.95 from its start, so fixed-k
    and the fake drafter's confidences both see it; without the option nothing changes."""
    runner = sim.sim.FakeRunner(7, 0.3, random.Random(0))
    runner.loops["a"] = 40
    assert runner._level(39, "a") == 0.3 and runner._level(40, "a") == 0.95 and runner._level(80, "b") == 0.3
    work = [[128], [128]]
    plain = sim.sim.fixed_seconds(SPEC, 7, 0.3, work, 0, None, True)
    looped = sim.sim.fixed_seconds(SPEC, 7, 0.3, work, 0, None, True, [[None], [40]])
    assert looped < 0.8 * plain, (looped, plain)
    assert sim.sim.fixed_seconds(SPEC, 7, 0.3, work, 0, None, True, [[None], [None]]) == plain
    base = sim.simulate(args(plan=[(1, 6)], p=0.3), DECODE, SPEC, 0.3, seed=0)[1]
    assert sim.simulate(args(plan=[(1, 6)], loops=(0.0, 40, 80)), DECODE, SPEC, 0.3, seed=0)[1] == base
    everyone = sim.simulate(args(plan=[(1, 6)], loops=(1.0, 40, 40)), DECODE, SPEC, 0.3, seed=0)[1]
    assert everyone[1] > base[1] * 1.2 and everyone[0] > base[0], (base, everyone)


def test_lookup_drafts_where_dspark_pauses_and_its_rounds_are_charged(sim) -> None:
    """`--lookup N`: with a drafter that loses (confidence 0.3, paused) and every reply looping
    from token 40, `LookupAssist` drafts the loops by prompt lookup (L rounds in the trace) and
    the run beats the one without it; a lookup round is charged the plain step at batch +
    drafts plus `RoundCosts.round` 1-request steps (after a plain step: the dearer start of a
    run), the plain step after it `RoundCosts.saving` less."""
    from deepinfer_dspark.round_costs import H200_ROUND_COSTS as costs

    clock = sim.Clock(DECODE, SPEC, 7, 0.02, 1.5, 0.9)
    clock.looked_up(1, 7)
    round_seconds = clock.seconds
    assert round_seconds == pytest.approx(1 / DECODE.at(8) + costs.round(1, False) / DECODE.at(1))
    clock.looked_up(1, 7)   # extends the run: no wait
    assert clock.seconds - round_seconds == pytest.approx(1 / DECODE.at(8) + costs.round(1, True) / DECODE.at(1))
    run_seconds = clock.seconds
    clock.plain(1, False, False)
    assert clock.seconds - run_seconds == pytest.approx((1 - costs.saving(1)) / DECODE.at(1))
    loops = (1.0, 40, 40)
    without = sim.simulate(args(plan=[(1, 6)], loops=loops), DECODE, SPEC, 0.3, seed=0)[1][0]
    with_lookup = sim.simulate(args(plan=[(1, 6)], loops=loops, lookup=2), DECODE, SPEC, 0.3, seed=0, trace=2)
    assert with_lookup[1][0] > without * 1.1, (without, with_lookup[1][0])


def test_settled_requests_reaches_the_proposer(sim) -> None:
    """`--settled-requests` (session 44): with hard replies at 1 request, where losses settle, a
    proposer that needs 64 drafted requests behind a settled average runs another schedule."""
    hard = dict(plan=[(1, 12)], hard=(0.5, 0.3), equal=False)   # (seed 3: the replies' lengths since session 47)
    plain = sim.simulate(args(**hard), DECODE, SPEC, 0.75, seed=3)
    late = sim.simulate(args(**hard, settled_requests=64), DECODE, SPEC, 0.75, seed=3)
    assert plain == sim.simulate(args(**hard, settled_requests=0), DECODE, SPEC, 0.75, seed=3)
    assert late[1][0] != plain[1][0] and late[1][1] == plain[1][1]   # the policy moved; fixed-k did not


def test_bound_only_reaches_the_proposer(sim) -> None:
    """`--bound-only` (session 45): with hard replies at 1 request, a proposer whose ledgers pause
    nothing there drafts more rounds than the default of the simulation (0)."""
    hard = dict(plan=[(1, 12)], hard=(0.5, 0.3), equal=False)
    paused = sim.simulate(args(**hard), DECODE, SPEC, 0.75, seed=1)
    assert paused == sim.simulate(args(**hard, bound_only=0), DECODE, SPEC, 0.75, seed=1)
    lone = sim.simulate(args(**hard, bound_only=1), DECODE, SPEC, 0.75, seed=1)
    assert lone[1][0] != paused[1][0] and lone[1][1] == paused[1][1]   # the policy moved; fixed-k did not


def test_drained_rules_out_a_load_whose_drafted_batches_lose(sim) -> None:
    """`--drained` (session 64): rounds dearer than the profile the proposer reads (`--round-cost`,
    blind to it) make its drafted batches at 2 requests lose; the ledger rules drafting out there
    after `MIN_BATCHES` of them and the policy's ratio rises; fixed-k is charged alike. With
    rounds on their profile it changes nothing that loses less than `UNCALIBRATED` allows."""
    blind = sim.simulate(args(round_cost=2.0, plan=[(2, 16)]), DECODE, SPEC, 0.9, seed=0)
    ruled = sim.simulate(args(round_cost=2.0, plan=[(2, 16)], drained=True), DECODE, SPEC, 0.9, seed=0)
    assert ruled[2][0] > blind[2][0] + 0.01 and ruled[2][1] == blind[2][1], (blind, ruled)
    winning = dict(plan=[(1, 6), (2, 6)], equal=False)
    assert sim.simulate(args(**winning, drained=True), DECODE, SPEC, 0.95, seed=0) == \
        sim.simulate(args(**winning), DECODE, SPEC, 0.95, seed=0)



def test_probe_share_reaches_the_proposer(sim) -> None:
    """`--probe-share` (session 65): where rounds dearer than the profile the proposer reads make
    drafting lose (2 requests), a smaller share pauses longer after each losing probe, so the
    policy loses less there; fixed-k is charged alike; absent, the default share's run."""
    losing = dict(round_cost=2.0, plan=[(2, 24)])
    default = sim.simulate(args(**losing), DECODE, SPEC, 0.9, seed=0)
    assert default == sim.simulate(args(**losing, probe_share=PROBE_SHARE), DECODE, SPEC, 0.9, seed=0)
    rare = sim.simulate(args(**losing, probe_share=0.002), DECODE, SPEC, 0.9, seed=0)
    assert rare[2][0] > default[2][0] + 0.005 and rare[2][1] == default[2][1], (default, rare)
    with pytest.raises(ValueError, match="speculative_config.probe_share"):
        sim.simulate(args(**losing, probe_share=0.0), DECODE, SPEC, 0.9, seed=0)


def test_age_rounds_reaches_the_proposer(sim) -> None:
    """`--age-rounds` (session 65): the measured acceptance's aging moves the policy where the bound
    decides (2 requests after 1); the default's age given explicitly is the default's run; fixed-k
    is charged alike."""
    mixed = dict(plan=[(1, 4), (2, 16)], equal=False)
    default = sim.simulate(args(**mixed), DECODE, SPEC, 0.8, seed=0)
    assert default == sim.simulate(args(**mixed, age_rounds=AGE_ROUNDS), DECODE, SPEC, 0.8, seed=0)
    slow = sim.simulate(args(**mixed, age_rounds=100_000), DECODE, SPEC, 0.8, seed=0)
    assert slow[2][0] != default[2][0] and slow[2][1] == default[2][1], (default, slow)
    with pytest.raises(ValueError, match="speculative_config.acceptance_age_rounds"):
        sim.simulate(args(**mixed, age_rounds=0), DECODE, SPEC, 0.8, seed=0)


def test_max_probe_every_reaches_the_proposer(sim) -> None:
    """`--max-probe-every` (session 66): where drafting loses (2 requests, rounds dearer than the
    profile the proposer reads), a shorter longest backoff probes more often and loses more; the
    factory's 256 given explicitly is the default's run; fixed-k is charged alike."""
    losing = dict(round_cost=2.0, plan=[(2, 24)])
    default = sim.simulate(args(**losing), DECODE, SPEC, 0.9, seed=0)
    assert default == sim.simulate(args(**losing, max_probe_every=256), DECODE, SPEC, 0.9, seed=0)
    eager = sim.simulate(args(**losing, max_probe_every=8), DECODE, SPEC, 0.9, seed=0)
    assert eager[2][0] < default[2][0] and eager[2][1] == default[2][1], (default, eager)


def test_probe_every_reaches_the_proposer(sim) -> None:
    """`--probe-every` (session 75): where drafting loses, first pauses twice as long probe less
    often and lose less; the factory's 8 given explicitly is the default's run; fixed-k is charged
    alike."""
    losing = dict(round_cost=2.0, plan=[(2, 24)])
    default = sim.simulate(args(**losing), DECODE, SPEC, 0.9, seed=0)
    assert default == sim.simulate(args(**losing, probe_every=8), DECODE, SPEC, 0.9, seed=0)
    patient = sim.simulate(args(**losing, probe_every=64), DECODE, SPEC, 0.9, seed=0)
    assert patient[2][0] > default[2][0] and patient[2][1] == default[2][1], (default, patient)


def test_capped_replies_reach_the_limit_at_their_share(benchmark_script) -> None:
    """`--capped SHARE`: about that share of the replies is 128 tokens, the others 18-127; `--equal`
    gives 128 throughout and the default draws 30-128 (the lengths every policy of a run shares)."""
    sim = benchmark_script("sim_engine_calls")
    capped = sim.reply_lengths(types.SimpleNamespace(equal=False, capped=0.7), random.Random(5), 4000)
    at_limit = sum(n == 128 for n in capped) / len(capped)
    assert 0.67 < at_limit < 0.73 and min(capped) >= 18 and max(capped) == 128
    assert min(n for n in capped if n < 128) < 30   # below the default range's floor
    assert sim.reply_lengths(types.SimpleNamespace(equal=True, capped=None), random.Random(5), 5) == [128] * 5
    plain = sim.reply_lengths(types.SimpleNamespace(equal=False), random.Random(5), 2000)
    assert min(plain) >= 30 and sum(n == 128 for n in plain) / len(plain) < 0.05


def at_eight(sim, p: float, flag: str) -> tuple[dict, dict]:
    """Session 67's flags at 8 requests on an H100's profiles, seed 1: the default's run, checked to
    equal the run with `flag` False given explicitly, and the run with `flag` True."""
    eight = dict(plan=[(8, 48)], equal=False, capped=0.7, round_cost=1.1, bound_only=1, young_runs=True,
                 stragglers=True)
    default = sim.simulate(args(**eight), H100_DECODE, H100_ROUNDS, p, seed=1)
    assert default == sim.simulate(args(**eight, **{flag: False}), H100_DECODE, H100_ROUNDS, p, seed=1)
    return default, sim.simulate(args(**eight, **{flag: True}), H100_DECODE, H100_ROUNDS, p, seed=1)


def test_opening_runs_reaches_the_proposer(sim) -> None:
    """`--opening-runs` (session 76): at 8 requests, where the body loses, openings priced with their
    run's transition move the policy's time; fixed-k is charged alike."""
    default, runs = at_eight(sim, 0.7, "opening_runs")
    assert runs[8][0] != default[8][0] and runs[8][1] == default[8][1], (default, runs)


def test_resume_bound_reaches_the_proposer(sim) -> None:
    """`--resume-bound` (session 77): at 8 requests and p 0.75, where the default loses, the bound that
    pays a resumption runs nearer plain decoding; fixed-k is charged alike."""
    default, resumed = at_eight(sim, 0.75, "resume_bound")
    assert default[8][0] < resumed[8][0] < 1.0 and resumed[8][1] == default[8][1], (default, resumed)


def test_frontier_reaches_the_proposer(sim) -> None:
    """`--frontier` (session 80): at 8 requests and p 0.75, where the default loses, the straggler factor
    capped by the least advanced request's measured share runs nearer plain decoding; fixed-k is charged
    alike."""
    default, front = at_eight(sim, 0.75, "frontier")
    assert default[8][0] < front[8][0] and front[8][1] == default[8][1], (default, front)

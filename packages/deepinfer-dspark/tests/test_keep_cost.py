# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What keeping the target features costs a paused step (`FlushCosts.per_pair`, `_keep_cost`),
and the young bucket that declines them where that exceeds what drafting could gain
(`_dear_to_keep`, session 40: flushes of 700-3,000 pairs at 32 requests on the H200)."""

from __future__ import annotations

import statistics

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_costs import PROBE_SHARE
from deepinfer_dspark.feature_keeping import CAPTURE_SHARE
from deepinfer_dspark.flush_costs import SLOPE_FLUSHES, FlushCosts
from deepinfer_dspark.pause_policy import NOTHING_READY_PAUSE, SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])   # plain steps: 1 ms up to 8 requests
# A full round's gain per emitted token per request is 0.30 at 4 requests: with confidences 0.7 a
# round loses there (~0.83), and a request would need ~2.3 accepted drafts for a full round to win.
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])


def test_per_pair_is_the_slope_over_the_pairs_not_the_fixed_part_nor_a_cold_flush() -> None:
    """Flushes costing 2 ms plus 15 us a pair, on top of a 3 ms round: 15 us, though 2 ms / 700
    pairs would add 2.9 us to a ratio. The process's first flush (60 ms, cold) is left out, and a
    late cold one does not move the median."""
    costs = FlushCosts()
    assert costs.per_pair() is None
    costs.record(32, 0.003, False)
    costs.record(32, 0.060, True, 3000)                               # the first: cold, left out
    costs.record(32, 0.003 + 0.002 + 15e-6 * 700, True, 700)
    assert costs.per_pair() is None                                   # one flush: no slope
    costs.record(32, 0.003 + 0.002 + 15e-6 * 700, True, 700)
    assert costs.per_pair() is None                                   # the same pair count twice
    costs.record(32, 0.003 + 0.002 + 15e-6 * 1500, True, 1500)
    assert costs.per_pair() == pytest.approx(15e-6)                   # two points: cold one not among them
    costs.record(32, 0.090, True, 1000)                               # a late slow one
    for pairs in (2200, 3000):
        costs.record(32, 0.003 + 0.002 + 15e-6 * pairs, True, pairs)
    assert costs.per_pair() == pytest.approx(15e-6)
    assert (0.002 + 15e-6 * 700) / 700 > 17e-6                        # what a ratio would read


def test_per_pair_is_capped_by_the_ratio_and_kept_without_spread() -> None:
    """A slope above every flush's extra seconds per pair is capped at their median ratio (an
    upper bound); a window whose pair counts all agree keeps the slope it had."""
    costs = FlushCosts()
    costs.record(8, 0.001, False)
    costs.record(8, 0.001, True, 5)                                   # cold, left out
    costs.record(8, 0.001 + 0.0001, True, 100)                        # 1 us a pair
    costs.record(8, 0.001 + 0.0004, True, 101)                        # slope 300 us, ratio 4 us
    assert costs.per_pair() == pytest.approx(statistics.median([1e-6, 0.0004 / 101]))
    known = costs.per_pair()
    for _ in range(SLOPE_FLUSHES):
        costs.record(8, 0.002, True, 64)                              # steady load: one pair count
    assert costs.per_pair() == known
    costs.record(8, 0.002, True, float("inf"))                        # no sample
    assert costs.per_pair() == known


def test_per_pair_subtracts_each_buckets_round_and_forgets_old_flushes() -> None:
    """Flushes at 8 and 32 requests, each over its own bucket's round without a flush (1 and 3 ms):
    one slope. Only the last `SLOPE_FLUSHES` flushes count; it is never negative."""
    costs = FlushCosts()
    costs.record(8, 0.001, False)
    costs.record(32, 0.003, False)
    costs.record(8, 0.5, True, 7)                                     # cold, left out
    costs.record(8, 0.001 + 10e-6 * 400, True, 400)
    costs.record(32, 0.003 + 10e-6 * 2000, True, 2000)
    assert costs.per_pair() == pytest.approx(10e-6)                   # (without the rounds: 11 us)
    for i in range(SLOPE_FLUSHES):
        costs.record(32, 0.003 + 0.001 - 1e-7 * (1000 + i), True, 1000 + i)   # dearer the fewer the pairs
    assert costs.per_pair() == 0.0
    costs.record(32, float("nan"), True, 5)                           # no sample
    assert costs.per_pair() == 0.0


def ready(proposer: DSparkProposer, batch: int) -> list[DraftRequest]:
    """`batch` requests whose drafter context holds their 9 committed positions."""
    for i in range(batch):
        proposer.runner.held[f"r{i}"] = 9
    return [DraftRequest(f"r{i}", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40) for i in range(batch)]


def proposer_with(fake_runner, per_pair: float, accepted: float, timed: bool = True) -> DSparkProposer:
    """A proposer whose flushes cost `per_pair` seconds a pair and whose requests accept
    `accepted` drafts at full verification (`FullAcceptance.mean`)."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE, measure_round_times=timed)
    proposer.flush_costs.record(4, 0.002, False)
    for pairs in (1, 100, 300):   # (the first: the process's cold flush, left out)
        proposer.flush_costs.record(4, 0.002 + 0.001 + per_pair * pairs, True, pairs)
    proposer.acceptance.full.mean = lambda: accepted
    return proposer


@pytest.mark.parametrize("per_pair, accepted, timed, declined", [
    (20e-6, 1.77, True, True),     # keeping: 0.08 plain steps a step; a full round loses (0.83)
    (20e-6, 1.77, False, False),   # rounds untimed: decisions from the tokens only
    (4e-6, 1.77, True, False),     # 0.016 a step: under PROBE_SHARE
    (20e-6, 2.7, True, False),     # a full round gains 0.11 > 0.08: drafting may still pay here
    (40e-6, 2.7, True, True),      # unless keeping costs more (0.16)
])
def test_a_young_loss_declines_the_features_where_keeping_them_costs_more_than_a_round_gains(
        fake_runner, per_pair, accepted, timed, declined) -> None:
    proposer = proposer_with(fake_runner, per_pair, accepted, timed)
    keep = per_pair * 4 * 1000 if timed else 0.0
    assert proposer._keep_cost(4) == pytest.approx(keep)
    assert proposer._dear_to_keep(4) is declined
    gain = proposer.costs.gain(4, 4 * (1 + accepted))
    assert declined == (keep > PROBE_SHARE and gain - 1 < keep)
    assert any(d.token_ids for d in proposer.propose(ready(proposer, 4)))   # drafted, lost, young
    assert proposer.pauses.rounds(4) == 1 < SETTLED_ROUNDS and proposer.pauses.left(4) > 0
    assert proposer.wants_features() is not declined
    assert (4 in proposer._ruled_out) is declined and 4 not in proposer._ledger_ruled   # not regretted
    assert proposer.pauses.left(8) == 0 and proposer.pauses.left(2) == 0              # no spread


def test_a_dear_decline_holds_after_the_regret_and_a_cheap_bucket_still_keeps(fake_runner) -> None:
    """The regret of gaps (`_regret_gaps`) stops the declines after measured losses; a decline
    priced by the flush is not one of them. A partial round (a request with a gap) declines
    where keeping is dear too."""
    proposer = proposer_with(fake_runner, 20e-6, 1.77)
    proposer.ledger_decline = False                  # as after a regret
    proposer.propose(ready(proposer, 4))
    assert 4 in proposer._ruled_out and not proposer.wants_features()
    partial = proposer_with(fake_runner, 20e-6, 1.77)
    requests = ready(partial, 4)
    partial.runner.held["r3"] = 5                     # its context is short: a gap
    assert any(d.token_ids for d in partial.propose(requests))
    assert partial.pauses.left(4) >= NOTHING_READY_PAUSE and 4 in partial._ruled_out
    cheap = proposer_with(fake_runner, 20e-6, 1.77)
    assert cheap._keep_cost(1) == pytest.approx(0.02) and not cheap._dear_to_keep(1)   # 1 pair a step
    cheaper = proposer_with(fake_runner, 4.5e-6, 1.77)                # 0.018 a step at 4: below PROBE_SHARE
    assert cheaper._keep_cost(4) < PROBE_SHARE and not cheaper._dear_to_keep(4)


def test_a_dormant_stretch_declared_for_gaps_saves_its_captures_and_pairs(fake_runner) -> None:
    """A stretch declared because every running request has a gap (`dormant_rounds`) saves each
    step's capture and its pairs' share of a flush (`_decline_saves`), also when a request that
    finished in its last step leaves the count above the gapped ones; the gapped requests' lost
    gain at a winning bucket is charged against it (`_regret_gaps`)."""
    proposer = proposer_with(fake_runner, 20e-6, 1.77)
    proposer._ledger_declined = 1                    # a decline after a measured loss happened
    for _ in range(SETTLED_ROUNDS):
        proposer.pauses.judge(2, 1.3)                 # drafting wins at 2
    proposer.feed.gapped.update({"a", "b"})
    rounds = proposer.dormant_rounds(2)
    assert rounds == NOTHING_READY_PAUSE
    proposer.feed.remove("b")                        # finished in the stretch's last step
    assert not proposer._all_gapped(2)
    proposer.dormant_passed(2, rounds)
    assert proposer._ledger_saved == pytest.approx(rounds * (CAPTURE_SHARE + 20e-6 * 2 * 1000))
    assert proposer._gap_cost == pytest.approx(0.3 * rounds)
    assert not proposer.ledger_decline               # 9.6 plain steps lost > 1.9 saved
    proposer.dormant_passed(2, 3)                    # not declared for gaps, "a" alone gapped: nothing
    assert proposer._ledger_saved == pytest.approx(rounds * (CAPTURE_SHARE + 0.04))


def test_an_ask_answered_without_a_stretch_leaves_no_gapped_flag(fake_runner) -> None:
    """A stretch declared for gaps that is never reported (a wrapper answered the engine 0) does
    not credit a later, unrelated stretch; nor does a report with no request running."""
    proposer = proposer_with(fake_runner, 20e-6, 1.77)
    proposer._ledger_declined = 1
    proposer.feed.gapped.update({"a", "b"})
    assert proposer.dormant_rounds(2) > 0 and proposer._gapped_stretch
    proposer.feed.gapped.clear()
    assert proposer.dormant_rounds(2) == 0 and not proposer._gapped_stretch
    proposer.dormant_passed(2, 50)
    assert proposer._ledger_saved == 0.0
    proposer.feed.gapped.update({"a", "b"})
    assert proposer.dormant_rounds(2) > 0
    proposer.dormant_passed(0, 1)                                      # the batch ended
    assert proposer._ledger_saved == 0.0 and proposer._gap_cost == 0.0

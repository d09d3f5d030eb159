# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A measured loss at one batch-size bucket pauses the larger buckets that cannot gain more
(`DSparkProposer._spread_loss`), and the features are declined there while paused
(`ledger_decline`): a chat batch shrinking through the buckets probes a losing load once.
"""

from __future__ import annotations

import math

from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_costs import PROBE_OVERHEAD_STEPS, PROBE_SHARE
from deepinfer_dspark.feature_keeping import CAPTURE_SHARE
from deepinfer_dspark.pause_ledger import PauseLedger, buckets_above
from deepinfer_dspark.pause_policy import NOTHING_READY_PAUSE, SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])   # plain steps: flat up to 8 requests
# Rounds of B (1 + K) tokens: the gain per emitted token per request (`gain_factor`) is 0.5 at 1
# request, 0.30 at 4, 0.26 at 6 and 0.24 at 8. With confidences 0.7 (1.77 expected accepted
# drafts) a round wins at 1 request (~1.4) and loses at 4 (~0.83); none of 4-8 is `cannot_pay`
# (every draft accepted would gain 1.2-1.5 there).
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])
# The same up to 4 requests, then larger rounds that amortize better (0.40 at 6, 0.50 at 8).
RISING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 400.0, 500.0])
LONG = math.ceil(PROBE_OVERHEAD_STEPS / PROBE_SHARE)   # the shortest pause after a settled loss


def ready_requests(proposer: DSparkProposer, batch: int) -> list[DraftRequest]:
    """`batch` requests whose drafter context holds their 9 committed positions."""
    out = []
    for i in range(batch):
        proposer.runner.held[f"r{i}"] = 9
        out.append(DraftRequest(f"r{i}", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40))
    return out


def settle(proposer: DSparkProposer, batch: int, gain: float = 0.8) -> None:
    """Gives `batch`'s bucket a settled average (`SETTLED_ROUNDS` judged rounds of `gain`)."""
    for _ in range(SETTLED_ROUNDS):
        proposer.pauses.judge(batch, gain)


def test_buckets_above_and_extend() -> None:
    assert buckets_above(1, 8) == [2, 3, 4, 6, 8]
    assert buckets_above(5, 64) == [8, 12, 16, 24, 32, 48, 64]
    assert buckets_above(8, 8) == [] and buckets_above(7, 5) == []
    ledger = PauseLedger(probe_every=8, max_probe_every=256)
    ledger.pause(6, 200)
    ledger.extend(6, 50)
    assert ledger.left(6) == 200                   # a longer pause is kept
    ledger.extend(5, 300)                          # 5 is in the bucket of 6
    ledger.extend(2, 3)
    assert ledger.left(6) == 300 and ledger.left(2) == 3 and ledger.left(1) == 0
    assert ledger.lost(1, at_least=40) == 40 == ledger.left(1)


def test_a_loss_pauses_the_larger_buckets_that_cannot_gain_more(fake_runner) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    assert not any(proposer.cannot_pay(b) for b in (1, 4, 6, 8))
    factors = [proposer.costs.gain_factor(b) for b in (1, 2, 3, 4, 6, 8)]
    assert factors == sorted(factors, reverse=True)
    settle(proposer, 4)
    assert any(d.token_ids for d in proposer.propose(ready_requests(proposer, 4)))   # drafted, lost
    gain = (SETTLED_ROUNDS + 1) * proposer.pauses.gain(4) - SETTLED_ROUNDS * 0.8   # the round's own
    pause = proposer.pauses.left(4)
    assert gain < 1 and pause == proposer.costs.probe_pause(4, gain) >= PROBE_OVERHEAD_STEPS / PROBE_SHARE
    assert proposer.pauses.left(6) == proposer.pauses.left(8) == pause          # spread upwards
    assert proposer.pauses.left(3) == proposer.pauses.left(2) == proposer.pauses.left(1) == 0
    # A settled loss declines the features at 4, 6 and 8 (not below).
    assert pause >= LONG and not proposer.wants_features()
    assert all(proposer.idle_rounds() > 0 and not proposer.wants_features() for _ in range(3))
    proposer.idle_round(8)
    assert not proposer.wants_features() and proposer.pauses.left(8) == pause - 1
    # A lone request still drafts (its bucket gains more) and wants the features again.
    proposer.idle_round(1)
    assert proposer.idle_rounds() == 0 and proposer.wants_features()
    assert any(d.token_ids for d in proposer.propose(ready_requests(proposer, 1)))
    assert proposer.pauses.gain(1) > 1 and proposer.wants_features()


def test_no_spread_where_larger_rounds_gain_more(fake_runner) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.7), K, RISING, decode=DECODE)
    assert proposer.costs.gain_factor(6) > proposer.costs.gain_factor(4) < proposer.costs.gain_factor(8)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))
    assert proposer.pauses.gain(4) < 1 and proposer.pauses.left(4) > 0
    assert proposer.pauses.left(6) == proposer.pauses.left(8) == 0


def test_features_kept_without_decline_and_while_short_paused(fake_runner) -> None:
    keep = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE, decline_features=False)
    settle(keep, 4)
    keep.propose(ready_requests(keep, 4))
    assert keep.pauses.left(4) >= LONG and keep.wants_features()
    assert keep.pauses.left(8) >= LONG and not keep._ruled_out
    # A pause that no settled loss set (by hand here) leaves the features on.
    short = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    short.propose(ready_requests(short, 1))
    short.pauses.pause(1, 500)
    assert short.wants_features()


def test_spread_pauses_tick_at_their_own_bucket(fake_runner) -> None:
    """The pause spread to 8 counts down only in rounds at 8: a batch shrinking from 8 to 4 to 1
    keeps 8 paused for the next batch."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))
    before = proposer.pauses.left(8)
    for batch in [4] * 30 + [1] * 5:
        if proposer.idle_rounds() > 0:
            proposer.idle_round(batch)
        else:
            proposer.propose(ready_requests(proposer, batch))
    assert proposer.pauses.left(8) == before and proposer.pauses.left(4) == before - 30
    assert proposer.pauses.gain(1) > 1 and proposer.pauses.left(1) == 0


def test_a_young_loss_pauses_briefly_and_a_settled_win_overrules_the_spread(fake_runner) -> None:
    """The first rounds at a bucket (before `SETTLED_ROUNDS`) pause for the backoff or the round's
    own loss only, without the probe overhead, the spread or a decline: early averages are noisy
    (the acceptance ratio is still learning). A larger bucket whose own settled average wins is
    not paused by a loss below it."""
    young = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    young.propose(ready_requests(young, 4))
    gain = young.pauses.gain(4)
    assert gain < 1 and young.pauses.left(4) == max(young.probe_every, young.costs.probe_pause(4, gain, 0.0))
    assert young.pauses.left(4) < LONG and young.pauses.left(8) == 0 and young.wants_features()
    mixed = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    settle(mixed, 4)
    settle(mixed, 8, gain=1.2)                      # 8's own rounds won
    mixed.propose(ready_requests(mixed, 4))
    assert mixed.pauses.left(4) >= LONG and mixed.pauses.left(6) == mixed.pauses.left(4)
    assert mixed.pauses.left(8) == 0


def test_a_loss_implied_by_a_spread_is_priced_as_settled_until_a_round_wins(fake_runner) -> None:
    """A bucket paused by a settled loss below it (`_spread_loss`) is not probed as a young one
    once that pause runs out: its first losing round pauses as long as a settled loss would
    (probe overhead included), spreads and declines; a round there that wins ends that."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))
    assert proposer.pauses.left(8) >= LONG and proposer.pauses.rounds(8) == 0   # implied, not judged
    proposer.pauses.pause(8, 0)                     # the implied pause ran out
    assert any(d.token_ids for d in proposer.propose(ready_requests(proposer, 8)))   # a probe, lost
    gain = proposer.pauses.gain(8)
    assert gain < 1 and proposer.pauses.rounds(8) == 1
    assert proposer.pauses.left(8) == proposer.costs.probe_pause(8, gain) >= LONG
    assert not proposer.wants_features()            # declined as after a settled loss
    # Without the spread, the same round at a young 8 pauses briefly (the test above).
    young = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    young.propose(ready_requests(young, 8))
    young_gain = young.pauses.gain(8)
    assert young.pauses.left(8) == max(young.probe_every, young.costs.probe_pause(8, young_gain, 0.0))
    assert young.pauses.left(8) < proposer.pauses.left(8) and young.wants_features()
    # A round that wins at 8 drops the mark: the next loss there is young again.
    proposer.pauses.pause(8, 0)
    proposer.pauses.judge(8, 5.0)                   # (the average wins from here)
    assert proposer.propose(ready_requests(proposer, 8)) and 8 not in proposer._inferred


def test_a_gap_found_where_drafting_wins_stops_the_declines_after_losses(fake_runner) -> None:
    """Declining after measured losses gaps the requests running; when such a request reaches a
    load where drafting wins (the last request of a batch), that decline stops for good, while
    a gapped request at a load not known to win changes nothing."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    settle(proposer, 1, gain=1.3)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))
    assert proposer.ledger_decline and not proposer.wants_features()
    gapped = [DraftRequest("g", list(range(20)), K, 0.0, 0, 1.0, 0.0, 0, 40)]   # holds 0 positions
    for batch in (2, 3):                                   # loads with no settled win: kept
        drafts = proposer.propose(gapped + ready_requests(proposer, batch - 1))
        assert not drafts[0].token_ids and drafts[1].token_ids and proposer.ledger_decline
    proposer.pauses.pause(1, 0)
    assert not proposer.propose(gapped)[0].token_ids     # alone, where drafting wins: regretted
    assert not proposer.ledger_decline
    proposer.idle_round(8)
    assert proposer.pauses.left(8) > 0 and proposer.wants_features()   # still paused, features kept
    # Later losses pause (and spread) as before, without declining.
    proposer.pauses.pause(4, 0)
    proposer.pauses.pause(8, 0)
    proposer.propose(ready_requests(proposer, 4))
    assert proposer.pauses.left(4) >= LONG and proposer.pauses.left(8) >= LONG
    assert proposer.wants_features()


def test_rounds_with_gapped_requests_are_not_judged(fake_runner) -> None:
    """A round in which some requests cannot draft (a gap in their context) says nothing about
    the bucket: it is priced as the whole batch's round, so it looks like a loss where drafting
    for every request wins. When it lost it pauses as long as a settled loss would, and it is
    neither judged, nor spread, nor a reason to decline features."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    gapped = DraftRequest("g", list(range(20)), K, 0.0, 0, 1.0, 0.0, 0, 40)   # holds 0 positions
    pauses = []
    for _ in range(300):
        if proposer.idle_rounds() > 0:
            proposer.idle_round(2)
            continue
        drafts = proposer.propose([gapped] + ready_requests(proposer, 1))
        assert not drafts[0].token_ids and drafts[1].token_ids
        pauses.append(proposer.pauses.left(2))
    # Each such round lost: paused as a settled loss would be (the next probe's overhead priced).
    assert pauses and len(set(pauses)) == 1 and pauses[0] >= max(NOTHING_READY_PAUSE, LONG), set(pauses)
    assert proposer.pauses.rounds(2) == 0 and proposer.pauses.gain(2) is None
    assert proposer.pauses.left(8) == 0 and not proposer._ruled_out and proposer.wants_features()
    whole = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)   # both requests drafting: a win
    whole.propose(ready_requests(whole, 2))
    assert whole.pauses.gain(2) > 1 and whole.pauses.left(2) == 0


def test_no_regret_before_a_step_was_declined_after_a_loss(fake_runner) -> None:
    """A gapped request at a winning load stops the declines after losses only once such a decline
    took a step (its gap may come from elsewhere, e.g. an outright `cannot_pay` decline)."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    settle(proposer, 1, gain=1.3)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))          # a settled loss: buckets 4-8 would decline
    gapped = [DraftRequest("g", list(range(20)), K, 0.0, 0, 1.0, 0.0, 0, 40)]
    proposer.pauses.pause(1, 0)
    proposer.propose(gapped)                               # no step declined yet: kept
    assert proposer.ledger_decline
    proposer.idle_round(4)
    assert not proposer.wants_features()                   # a step declined after the loss
    proposer.pauses.pause(1, 0)
    proposer.propose(gapped)
    assert not proposer.ledger_decline


def test_declines_where_drafting_is_ruled_out_anyway_do_not_count_for_regret(fake_runner) -> None:
    """A loss spread to a bucket where `cannot_pay` holds anyway: a step declined there is not a
    decline after a measured loss, so a gap found later at a winning load does not end them."""
    hopeless_at_8 = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 190.0])
    proposer = DSparkProposer(fake_runner(K, 0.7), K, hopeless_at_8, decode=DECODE)
    assert proposer.cannot_pay(8) and not proposer.cannot_pay(4)
    settle(proposer, 1, gain=1.3)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))          # a settled loss at 4, spread to 6 and 8
    proposer.idle_round(8)
    assert not proposer.wants_features() and proposer.pauses.left(8) > 0
    gapped = [DraftRequest("g", list(range(20)), K, 0.0, 0, 1.0, 0.0, 0, 40)]
    proposer.pauses.pause(1, 0)
    proposer.propose(gapped)
    assert proposer.ledger_decline                          # the step at 8 did not count
    proposer.idle_round(6)
    assert not proposer.wants_features()                   # 6 pays in principle: this one counts
    proposer.pauses.pause(1, 0)
    proposer.propose(gapped)
    assert not proposer.ledger_decline


def test_a_dormant_batch_of_gapped_requests_at_a_winning_load_regrets(fake_runner) -> None:
    """A batch whose every request has a gap is dormant (`dormant_rounds`: `propose` is not
    asked), so the regret `propose` would find there comes from `dormant_passed`: on the H200
    (session 21) a 2-request batch declined at 2 ran its last request alone, plain, where
    drafting had won 1.41. At a load with no settled win nothing changes."""
    for won_at_1 in (True, False):
        proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
        settle(proposer, 4)
        proposer.propose(ready_requests(proposer, 4))   # a settled loss: declined at 4-8
        assert not proposer.wants_features()            # a step declined after the loss
        gapped = [DraftRequest("g", list(range(20)), K, 0.0, 0, 1.0, 0.0, 0, 40)]   # holds 0 positions
        proposer.pauses.pause(1, 0)
        assert not proposer.propose(gapped)[0].token_ids   # found with a gap, alone: no settled win yet
        assert "g" in proposer.feed.gapped and proposer.ledger_decline
        if won_at_1:
            settle(proposer, 1, gain=1.3)
        rounds = proposer.dormant_rounds(1)             # only "g" left, and it cannot draft
        assert rounds > 0 and proposer.ledger_decline
        proposer.dormant_passed(1, rounds)
        assert proposer.ledger_decline != won_at_1, won_at_1


def test_regret_weighs_the_gaps_cost_against_the_declines_savings(fake_runner) -> None:
    """Each step declined after a measured loss saves a capture (`CAPTURE_SHARE` plain steps);
    each round a gapped request runs plain where drafting won `g` costs `g - 1`. The declines
    stop once the costs exceed the savings, not at the first gapped round: in
    `sim_engine_calls.py --equal` (batches of 8 ending together) a regret at the first gapped
    round at 2 kept 8's features, and its losing probes, for good."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
    settle(proposer, 4)
    proposer.propose(ready_requests(proposer, 4))
    declined = 0
    while proposer.idle_rounds() > 0 and declined < 100:
        declined += not proposer.wants_features()
        proposer.idle_round(4)
    assert declined == 100 and proposer._ledger_declined == 100   # saved 100 * CAPTURE_SHARE = 2 steps
    settle(proposer, 1, gain=1.3)
    gapped = [DraftRequest("g", list(range(20)), K, 0.0, 0, 1.0, 0.0, 0, 40)]
    rounds = 0
    while proposer.ledger_decline:
        proposer.pauses.pause(1, 0)
        assert not proposer.propose(gapped)[0].token_ids
        rounds += 1
    assert rounds == math.floor(100 * CAPTURE_SHARE / 0.3) + 1, rounds   # 0.3 plain steps lost a round


def test_settled_requests_counts_the_requests_behind_a_settled_average(fake_runner) -> None:
    """With `settled_requests` (session 44's candidate), a bucket's average is settled only once
    its judged rounds also hold that many drafted requests (rounds times the bucket): 8 rounds
    at 4 requests hold 32, so a loss there pauses as a young one until 16 rounds are judged; at 8
    requests 8 rounds hold 64, settled as with rounds alone."""
    for batch, rounds, settled in ((4, SETTLED_ROUNDS, False), (4, 16, True), (8, SETTLED_ROUNDS, True)):
        proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
        proposer.settled_requests = 64
        for _ in range(rounds):
            proposer.pauses.judge(batch, 0.8)
        assert proposer._settled(proposer.pauses, batch) is settled and proposer._body_loses(batch) is settled
        proposer.propose(ready_requests(proposer, batch))
        assert proposer.pauses.gain(batch) < 1
        assert (proposer.pauses.left(batch) >= LONG) is settled, (batch, rounds)
        assert proposer.wants_features() is (batch == 4 and not settled)   # a settled loss declines them
        default = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)   # rounds alone
        for _ in range(rounds):
            default.pauses.judge(batch, 0.8)
        default.propose(ready_requests(default, batch))
        assert default.pauses.left(batch) >= LONG and not default.wants_features()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.probe_share_floor`: each settled loss in a row at a bucket halves the share
of the time its probes may lose, down to the floor, until a round there wins (`PauseLedger.repeats`,
`PausePolicy._settled_pause`, `DraftCosts.probe_pause(share=...)`)."""

from __future__ import annotations

import math

import pytest

from deepinfer_dspark.draft_costs import LONGEST_PROBE_PAUSE, PROBE_SHARE, DraftCosts, probe_overhead
from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.pause_ledger import PauseLedger
from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

ROUNDS = SPSProfile([5, 50], [400.0, 100.0])    # k = 4: 1 request -> 5 tokens, 10 -> 50
PLAIN = SPSProfile([1, 10], [1000.0, 800.0])
LOSING = SPSProfile([5, 40], [500.0, 120.0])    # 8 requests: a round at 120/s against plain 8,000 tok/s
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])


def test_the_share_given_replaces_the_costs_share() -> None:
    costs = DraftCosts(4, ROUNDS, PLAIN, lambda b: 1.0)
    lost = PLAIN.at(1) / ROUNDS.at(5) * 0.4 + probe_overhead(1)
    assert costs.probe_pause(1, 0.6) == costs.probe_pause(1, 0.6, share=None) == math.ceil(lost / PROBE_SHARE)
    for share in (0.01, 0.005, 1.0):
        assert costs.probe_pause(1, 0.6, share=share) == min(math.ceil(lost / share), LONGEST_PROBE_PAUSE)
    assert costs.probe_share == PROBE_SHARE   # (the costs' own share is untouched)


def test_the_ledger_counts_settled_losses_until_a_win() -> None:
    ledger = PauseLedger(8, 256)
    assert ledger.repeats(8) == 0
    ledger.lost(8)   # a young loss: not counted
    assert ledger.repeats(8) == 0
    for n in (1, 2, 3):
        ledger.lost(8, at_least=100, settled=True)
        assert ledger.repeats(8) == ledger.repeats(7) == n   # (7 shares 8's bucket)
        assert ledger.left(8) == max(100, 8 * 2 ** (n - 1))
    assert ledger.repeats(4) == 0   # another bucket
    ledger.won(8)
    assert ledger.repeats(8) == 0
    ledger.lost(8, settled=True)
    assert ledger.repeats(8) == 1


def losing_proposer(fake_runner, floor: float | None) -> DSparkProposer:
    p = DSparkProposer(fake_runner(4, 0.3), 4, LOSING, decode=DECODE)
    p.probe_share_floor = floor
    return p


def pauses_after_losses(p: DSparkProposer, losses: int, opening: bool = False) -> list[int]:
    """Judges losing rounds at 8 requests until one more settles the bucket, then `losses` more
    (the first settles it), each after the pause left by the one before: the pause each set."""
    ledger = p.openings.ledger if opening else p.pauses
    while ledger.rounds(8) < SETTLED_ROUNDS - 1:
        p._plan_pause(2.0, [2] * 8, 8, opening=opening)
        ledger.pause(8, 0)
    out = []
    for _ in range(losses):
        p._plan_pause(2.0, [2] * 8, 8, opening=opening)
        out.append(ledger.left(8))
        ledger.pause(8, 0)   # (the pause ran out: the next round is a probe)
    return out


@pytest.mark.parametrize("opening", [False, True])
def test_repeated_settled_losses_pause_ever_longer_down_to_the_floor(fake_runner, opening: bool) -> None:
    """Without the floor every settled loss pauses alike; with 0.005 the first pauses as without it
    (a transient loss recovers as before), the second twice as long, the third and later four
    times (the 0.02 share halved twice), each within a rounding of the exact quotient."""
    plain = pauses_after_losses(losing_proposer(fake_runner, None), 5, opening)
    floored = pauses_after_losses(losing_proposer(fake_runner, 0.005), 5, opening)
    assert len(set(plain)) == 1 and plain[0] < LONGEST_PROBE_PAUSE // 4
    assert floored[0] == plain[0]
    for got, times in zip(floored[1:], (2, 4, 4, 4)):
        assert plain[0] * times - times <= got <= plain[0] * times, (plain, floored)
    # a floor at or above the share changes nothing
    assert pauses_after_losses(losing_proposer(fake_runner, PROBE_SHARE), 5, opening) == plain
    assert pauses_after_losses(losing_proposer(fake_runner, 0.5), 5, opening) == plain


def test_a_win_starts_the_halving_again(fake_runner) -> None:
    """A round that wins at the bucket resets its count: the next settled loss pauses as the first."""
    p = losing_proposer(fake_runner, 0.005)
    first, second, third = pauses_after_losses(p, 3)
    assert third > second > first
    p.pauses.won(8)
    assert pauses_after_losses(p, 1) == [first]


def test_the_factory_key(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": ROUNDS, "decode_profile": PLAIN}
    assert dspark_factory.validate(base)["probe_share_floor"] is None
    assert dspark_factory.validate({**base, "probe_share_floor": 0.005})["probe_share_floor"] == 0.005
    for bad in (0, -1, 2, math.nan, True, "0.01"):
        with pytest.raises(ValueError, match=r"^speculative_config.probe_share_floor: must be a number in \(0, 1\]"):
            dspark_factory.validate({**base, "probe_share_floor": bad})
    with pytest.raises(ValueError, match="^speculative_config.probe_share_floor: prices .*decode_profile"):
        dspark_factory.validate({k: v for k, v in base.items() if k != "decode_profile"} | {"probe_share_floor": 0.01})
    with pytest.raises(ValueError, match="^speculative_config.probe_share_floor: only used with scheduling"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "probe_share_floor": 0.01})


def test_the_engine_passes_the_floor_to_the_pause_policy(folders, kit) -> None:
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).probe_share_floor is None
    assert kit.dspark_proposer(target, {**spec, "probe_share_floor": 0.005}).probe_share_floor == 0.005


MIXED = SPSProfile([5, 40], [500.0, 400.0])   # 8 requests: a full round of accepted drafts wins, two drafts lose


@pytest.mark.parametrize("opening", [False, True])
def test_a_winning_round_resets_the_count_in_its_own_ledger(fake_runner, opening: bool) -> None:
    """A round judged a win through `_plan_pause` (not `won` called by hand) resets the count of
    the ledger it was judged in, and only that one: the next settled loss there is priced at the
    full share again."""
    p = DSparkProposer(fake_runner(4, 0.3), 4, MIXED, decode=DECODE)
    p.probe_share_floor = 0.005
    ledger = p.openings.ledger if opening else p.pauses
    other = p.pauses if opening else p.openings.ledger
    first, second = pauses_after_losses(p, 2, opening)
    assert second > first and ledger.repeats(8) == 2
    assert p._repeat_share(ledger, 8) == pytest.approx(0.005)
    other.lost(8, settled=True)
    p._plan_pause(32.0, [4] * 8, 8, opening=opening)   # every draft expected accepted: a win
    assert p.judged[4] > 1.0 and ledger.repeats(8) == 0 and other.repeats(8) == 1
    assert p._repeat_share(ledger, 8) == PROBE_SHARE and p._repeat_share(other, 8) == PROBE_SHARE / 2


def test_a_partial_round_pauses_at_the_share_the_count_gives_and_counts_nothing(fake_runner) -> None:
    """A partial losing round (some requests could not draft) is no evidence: it adds no loss to the
    count, but its pause is priced at the share the bucket's settled losses so far give."""
    floored, plain = losing_proposer(fake_runner, 0.005), losing_proposer(fake_runner, None)
    pauses_after_losses(floored, 2)
    pauses_after_losses(plain, 2)
    assert floored.pauses.repeats(8) == 2
    for p in (floored, plain):
        p._plan_pause(2.0, [2] * 8, 8, partial=True)
    assert floored.pauses.repeats(8) == 2
    gain = floored.judged[4]
    overhead = floored._probe_overhead(8)
    assert floored.pauses.left(8) == max(32, floored.costs.probe_pause(8, gain, overhead, share=0.005))
    assert plain.pauses.left(8) == max(32, plain.costs.probe_pause(8, gain, overhead))
    assert floored.pauses.left(8) > plain.pauses.left(8)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PausePolicy._rule_out_hopeless`: a pause that keeps the target's features (a partial probe's,
at a young bucket) declines them as soon as drafting at its load is ruled out outright
(`cannot_pay`, `expected_loss`), not only when the pause runs out (`idle_rounds`)."""

from __future__ import annotations

import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.pause_ledger import ledger_bucket
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# As test_decline_features.py: 64 requests cannot pay even with every draft accepted; 1-2 can.
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 100.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def paused(fake_runner, batch: int, rounds: int, **kwargs) -> DSparkProposer:
    """A proposer whose last round ran `batch` requests, each with 9 positions held, paused
    `rounds` rounds at its bucket with the features kept (a ledger pause, not ruled out), one
    paused step's features buffered."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4, **kwargs)
    ids = [f"r{i}" for i in range(batch)]
    proposer.observe_step(ids, [0] * batch, [9] * batch, [9 * i for i in range(batch)], torch.ones(9 * batch, 2))
    proposer._last_batch = batch
    proposer.pauses.pause(batch, rounds)
    proposer.observe_step(ids, [9] * batch, [1] * batch, list(range(batch)), torch.ones(batch, 2))
    assert proposer.pending.holds
    return proposer


def test_a_pause_where_drafting_cannot_pay_declines_the_features_at_once(fake_runner) -> None:
    asked, stepped = paused(fake_runner, 64, 40), paused(fake_runner, 64, 40)
    assert asked.cannot_pay(64) and ledger_bucket(64) not in asked._ruled_out
    assert asked.dormant_rounds(64) == 4    # dormant until the bound is judged again (probe_every)
    assert asked.pauses.left(64) == 40      # ... the pause's length kept
    assert ledger_bucket(64) in asked._ruled_out and asked.quiet_rounds(64) == 0
    assert not stepped.wants_features()     # the engine that asks step by step: the same answer
    assert ledger_bucket(64) in stepped._ruled_out and stepped.pauses.left(64) == 40
    assert not asked.pending.holds and not stepped.pending.holds


def test_the_measured_bound_rules_a_kept_pause_out_and_a_winning_load_keeps_it(fake_runner) -> None:
    hopeless, hopeful = paused(fake_runner, 2, 30), paused(fake_runner, 2, 30)
    assert not hopeless.cannot_pay(2)
    hopeless.expected_loss = lambda batch: batch == 2   # the measured acceptance's bound: a loss at 2
    assert hopeless.dormant_rounds(2) == 4 and not hopeless.wants_features()
    assert hopeful.dormant_rounds(2) == 0 and hopeful.quiet_rounds(2) > 0 and hopeful.wants_features()
    assert ledger_bucket(2) not in hopeful._ruled_out


def test_a_no_is_asked_again_only_after_probe_every_rounds(fake_runner) -> None:
    proposer = paused(fake_runner, 2, 30)
    asks = []

    def bound(batch: int) -> bool:
        asks.append(batch)
        return len(asks) > 1   # no the first time, a loss from then on
    proposer.expected_loss = bound
    assert proposer.dormant_rounds(2) == 0 and proposer.wants_features() and len(asks) == 1
    proposer.quiet_passed(2, 3)                      # 3 rounds: fewer than probe_every (4)
    assert proposer.dormant_rounds(2) == 0 and len(asks) == 1
    proposer.quiet_passed(2, 1)
    assert proposer.dormant_rounds(2) == 4 and len(asks) == 2 and not proposer.wants_features()


def test_the_bound_is_judged_again_and_a_cleared_bucket_keeps_its_features_again(fake_runner) -> None:
    """A rule-out of a kept pause lasts a bound pause (`_bound_pause`: `probe_every` here, where
    the bound rules out 2 requests by a hair); then the bound is judged again: still a loss,
    another dormant stretch; cleared, the bucket is ruled in and the rest of its pause keeps the
    features (a quiet stretch), as before the rule-out."""
    proposer = paused(fake_runner, 2, 30)
    verdict = [True]
    proposer.expected_loss = lambda batch: verdict[0]
    assert proposer.dormant_rounds(2) == 4
    proposer.dormant_passed(2, 4)
    assert proposer.dormant_rounds(2) == 4 and proposer.pauses.left(2) == 26   # judged again: still a loss
    proposer.dormant_passed(2, 4)
    verdict[0] = False
    assert proposer.dormant_rounds(2) == 0 and ledger_bucket(2) not in proposer._ruled_out
    assert proposer.quiet_rounds(2) > 0 and proposer.wants_features() and proposer.pauses.left(2) == 22
    stepped = paused(fake_runner, 2, 30)                 # the engine that asks step by step
    stepped.expected_loss = lambda batch: verdict[0] or stepped.skipped_rounds < 4
    answers = []
    for _ in range(6):
        answers.append(stepped.wants_features())
        stepped.idle_round(2)
    assert answers == [False] * 4 + [True] * 2


def test_nothing_changes_without_decline_features(fake_runner) -> None:
    proposer = paused(fake_runner, 64, 40, decline_features=False)
    assert proposer.dormant_rounds(64) == 0 and proposer.wants_features()
    assert ledger_bucket(64) not in proposer._ruled_out and proposer.pauses.left(64) == 40


def test_an_unpaused_load_is_not_ruled_out_here(fake_runner) -> None:
    """Without a pause the rule is `idle_rounds`'s (it pauses for `probe_every` and declines)."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
    proposer._last_batch = 64
    assert proposer.dormant_rounds(64) == 0 and ledger_bucket(64) not in proposer._ruled_out
    assert proposer.idle_rounds() == 4 and ledger_bucket(64) in proposer._ruled_out
    requests = [DraftRequest(f"r{i}", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, 40) for i in range(64)]
    assert all(not d.token_ids for d in proposer.propose(requests)) and not proposer.wants_features()

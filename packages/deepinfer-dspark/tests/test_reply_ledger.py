# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""At 1 request each reply is judged on its own rounds (`ReplyLedger`, `PausePolicy.replies`):
a losing reply declines the features to its end, and the next reply drafts at once."""

from __future__ import annotations

import pytest
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.pause_policy import REPLY_PAUSE
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.reply_ledger import REPLY_SMOOTH, ReplyLedger
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])   # a round wins at 1 at 0.7


def test_ledger_judges_a_reply_on_its_own_rounds() -> None:
    ledger = ReplyLedger(min_rounds=3)
    assert [ledger.judge("a", g) for g in (0.5, 0.6, 0.7)] == [False, False, True]   # 3 rounds, mean 0.6
    assert ledger.gain("a") == pytest.approx(0.6)
    assert ledger.judge("b", 0.5) is False and ledger.judge("b", 0.5) is False
    assert ledger.judge("b", 1.2) is False   # the average loses (0.733) but the round wins
    assert ledger.judge("b", 0.9) is True
    c = [ledger.judge("c", 3.0) for _ in range(8)]   # a winning start: then an average of weight 1/8
    assert not any(c) and ledger.gain("c") == pytest.approx(3.0)
    ledger.judge("c", 0.0)
    assert ledger.gain("c") == pytest.approx(3.0 * (1 - REPLY_SMOOTH))
    ledger.pause("a")
    assert ledger.paused == "a" and ledger.losses == 1
    assert ledger.drop("b") is False and ledger.paused == "a" and ledger.gain("b") is None
    assert ledger.drop("a") is True and ledger.paused is None and ledger.drop("a") is False
    with pytest.raises(ValueError, match="reply_rounds"):
        ReplyLedger(0)


def one(proposer: DSparkProposer, request_id: str) -> list[DraftRequest]:
    proposer.runner.held[request_id] = 39   # a body round: its reply is past the opening
    return [DraftRequest(request_id, list(range(40)), K, 0.0, 0, 1.0, 0.0, 0, 40)]


def proposer_at(fake_runner, confidence: float, mean: float | None, replies: bool) -> DSparkProposer:
    proposer = DSparkProposer(fake_runner(K, confidence), K, FALLING, decode=DECODE)
    proposer.acceptance.full.mean = lambda: mean   # the accepted drafts measured over all loads
    if replies:
        proposer.replies = ReplyLedger(4)
    return proposer


def test_a_losing_reply_runs_plain_to_its_end_and_the_next_drafts(fake_runner) -> None:
    proposer = proposer_at(fake_runner, 0.05, 2.0, replies=True)   # a full round at 2 accepted pays
    for _ in range(3):   # its first rounds lose: no pause yet (the bucket's rule would pause)
        assert proposer.propose(one(proposer, "r0"))[0].token_ids
        assert proposer.judged[-1] < 1 and proposer.pauses.left(1) == 0 and proposer.wants_features()
    proposer.propose(one(proposer, "r0"))   # the fourth: the reply loses
    assert proposer.replies.paused == "r0" and proposer.pauses.left(1) == REPLY_PAUSE
    assert not proposer.wants_features() and proposer.dormant_rounds(1) == REPLY_PAUSE
    assert proposer.pauses.rounds(1) == 4   # the bucket's average still kept
    proposer.remove("r0")
    assert proposer.pauses.left(1) == 0 and proposer.dormant_rounds(1) == 0 and proposer.wants_features()
    proposer.runner.confidences = [0.9] * K
    assert proposer.propose(one(proposer, "r1"))[0].token_ids   # the next reply drafts at once
    assert proposer.replies.losses == 1 and proposer.pauses.left(1) == 0


def test_without_the_ledger_or_a_paying_mean_the_bucket_judges(fake_runner) -> None:
    for replies, mean in ((False, 2.0), (True, 0.0), (True, None)):   # off; a full round loses; unmeasured
        proposer = proposer_at(fake_runner, 0.05, mean, replies)
        proposer.propose(one(proposer, "r0"))
        paused = proposer.pauses.left(1)   # a young loss: the backoff, or the round's own loss
        assert paused >= proposer.probe_every, (replies, mean)
        proposer.remove("r0")
        assert proposer.pauses.left(1) == paused   # the pause outlives the reply


def test_replies_are_judged_at_one_request_only(fake_runner) -> None:
    proposer = proposer_at(fake_runner, 0.05, 2.0, replies=True)
    batch = one(proposer, "r0") + one(proposer, "r1")
    proposer.propose(batch)
    assert proposer.pauses.left(2) > 0 and proposer.replies.gain("r0") is None


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_engine_with_replies_judged_stays_lossless(folders, kit, asynchronous) -> None:
    """Greedy replies with `replies` (every reply's first losing round pauses it: `min_rounds` 1,
    a paying mean forced) equal plain decoding's at 1 request, one reply after another; a reply
    paused ends its pause, and the next reply drafts again."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 64, 320], [1000.0, 990.0, 900.0, 500.0]),
            "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0]), "opening_tokens": 0}
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    plain, llm = kit.build(target), kit.build(target, spec, async_scheduling=asynchronous)
    inner = llm.engine.speculative.proposer.inner
    inner.replies = ReplyLedger(1)
    inner.acceptance.full.mean = lambda: 8.0   # a full round pays: each reply is judged on its own
    drafted = []
    for seed in range(4):
        prompt = [{"prompt_token_ids": kit.prompts(1, seed=seed)[0]}]
        before = inner.drafted_rounds
        want = plain.generate(prompt, params)[0].outputs[0].token_ids
        out = llm.generate(prompt, params)[0]
        assert out.outputs[0].token_ids == want and out.error is None
        drafted.append(inner.drafted_rounds - before)
    assert inner.replies.losses >= 2 and all(drafted), (inner.replies.losses, drafted)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DrainedBatches`: drained batches that drafted against those that did not, per size bucket
(session 64: on an H100 at 8 requests every traced call of the default that drafted ran below
plain decoding's, 0.871, while its rounds were judged at ~1.0)."""

from __future__ import annotations

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.drained_batches import BACKOFF, MAX_BACKOFF, MIN_BATCHES, UNCALIBRATED, DrainedBatches
from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

STEP = 0.001   # plain decoding's predicted step, seconds, at any count


def run_batch(ledger: DrainedBatches, lengths: list[int], seconds: float, drafted: bool, start: float = 0.0,
              draining: bool = True, prompt: int = 5) -> bool:
    """A batch of requests with these output lengths, drained in `seconds` (finishing in order of
    length, the last at the end), drafted or not (the proposer's drafted rounds move or not).
    Returns `rules_out()` as the batch began draining."""
    views = {f"r{i}": list(range(prompt)) for i in range(len(lengths))}
    for rid, view in views.items():
        ledger.track(rid, view, drafted_rounds=10)
    ledger.draining(draining, start)
    ruled = ledger.rules_out()
    for (rid, view), length in sorted(zip(views.items(), lengths), key=lambda item: item[1]):
        view.extend([7] * length)
        ledger.finish(rid, 11 if drafted else 10, start + seconds * length / max(lengths))
    ledger.draining(False, start + seconds)
    return ruled


def test_a_batch_is_filed_by_its_predicted_over_taken_time() -> None:
    """Requests of 10 and 20 tokens: 10 steps at 2 running and 10 at 1, 20 ms predicted; the
    ratio over the clock from draining to the last removal, filed by kind at the size's bucket."""
    ledger = DrainedBatches(lambda b: STEP * (1.0 + 0.1 * b), 8)
    run_batch(ledger, [10, 20], 0.025, drafted=False)
    run_batch(ledger, [10, 20], 0.040, drafted=True)
    predicted = 10 * STEP * 1.2 + 10 * STEP * 1.1
    drafted, undrafted = ledger._ratios[2]
    assert list(undrafted) == pytest.approx([predicted / 0.025])
    assert list(drafted) == pytest.approx([predicted / 0.040])


def test_drafted_batches_slower_than_the_undrafted_rule_their_size_out_with_a_backoff() -> None:
    ledger = DrainedBatches(lambda b: STEP, 8)
    for _ in range(MIN_BATCHES):
        run_batch(ledger, [100] * 8, 0.100, drafted=False)
    for i in range(MIN_BATCHES):
        assert 8 not in ledger.verdicts
        run_batch(ledger, [100] * 8, 0.115, drafted=True)
    assert ledger.verdicts[8] == pytest.approx(0.100 / 0.115)
    assert not ledger.rules_out()                                   # no batch running
    assert run_batch(ledger, [100, 100], 0.1, drafted=False) is False   # another bucket (2): never judged
    for _ in range(BACKOFF):                                        # the next batches of 8 are ruled out
        assert run_batch(ledger, [100] * 8, 0.100, drafted=False) is True
    assert ledger._skip[8] == 0
    assert run_batch(ledger, [100] * 8, 0.100, drafted=False) is False   # over: the pause policy decides
    assert run_batch(ledger, [100] * 8, 0.120, drafted=True) is False    # drafted again and lost ...
    assert ledger._skip[8] == 2 * BACKOFF                                # ... twice as long now
    for _ in range(2 * BACKOFF):
        assert run_batch(ledger, [100] * 8, 0.100, drafted=False) is True
    assert run_batch(ledger, [100] * 8, 0.100, drafted=False) is False


def test_a_winning_verdict_resets_the_backoff_and_rules_nothing_out() -> None:
    ledger = DrainedBatches(lambda b: STEP, 8)
    for _ in range(MIN_BATCHES):
        run_batch(ledger, [100] * 4, 0.100, drafted=False)
        run_batch(ledger, [100] * 4, 0.090, drafted=True)
    assert ledger.verdicts[4] > 1.0 and not ledger._skip.get(4)
    ledger._backoff[4] = MAX_BACKOFF
    run_batch(ledger, [100] * 4, 0.090, drafted=True)
    assert 4 not in ledger._backoff


def test_batches_not_drained_throughout_count_nothing() -> None:
    """Not draining, one request alone, or a request joining after one finished (a refilled slot,
    a closed loop): not filed."""
    ledger = DrainedBatches(lambda b: STEP, 8)
    run_batch(ledger, [50, 60], 0.1, drafted=True, draining=False)
    run_batch(ledger, [50], 0.1, drafted=True)
    views = {rid: [1] for rid in "abc"}
    ledger.track("a", views["a"], 0)
    ledger.track("b", views["b"], 0)
    ledger.draining(True, 0.0)
    views["a"].extend([2] * 40)
    ledger.finish("a", 1, 0.05)
    ledger.track("c", views["c"], 1)   # joins after a finish
    ledger.draining(True, 0.06)
    views["b"].extend([2] * 50)
    views["c"].extend([2] * 50)
    ledger.finish("b", 1, 0.1)
    ledger.finish("c", 1, 0.2)
    assert ledger._ratios == {}
    assert ledger.finish("unknown", 1, 0.3) is False   # ignored
    for flip in (True, False):   # stopped draining midway (then said True again), or a zero-length clock
        views = {"a": [1], "b": [1]}
        for rid, view in views.items():
            ledger.track(rid, view, 0)
        ledger.draining(True, 1.0)
        if flip:
            ledger.draining(False, 1.5)
            ledger.draining(True, 2.0)
        for rid, view in views.items():
            view.extend([2] * 30)
            ledger.finish(rid, 0, 3.0 if flip else 1.0)
        assert ledger._ratios == {}


def test_each_batch_counts_from_its_own_draining_even_if_false_is_never_said() -> None:
    """An engine that says `draining(True)` for every batch and never False (the simulator): each
    batch is filed (the last removal ends one; the next one's second track does not spoil it)."""
    ledger = DrainedBatches(lambda b: STEP, 8)
    for i in range(3):
        views = {"a": [1], "b": [1]}
        for rid, view in views.items():
            ledger.track(rid, view, 0)
        ledger.draining(True, 10.0 * i)
        for rid, view in views.items():
            view.extend([2] * 50)
            ledger.finish(rid, 0, 10.0 * i + 0.05)
    assert list(ledger._ratios[2][1]) == pytest.approx([50 * STEP / 0.05] * 3)


K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
SPEC = SPSProfile([5, 10, 20, 40], [500.0, 450.0, 400.0, 330.0])


def test_the_proposer_rules_a_losing_size_out_as_a_bound_would(fake_runner) -> None:
    """Wired into the proposer (and through the prompt-lookup wrapper): `expected_loss` holds at
    every load of a ruled-out batch, one request included, and the round is not drafted."""
    inner = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE)
    inner.drained = DrainedBatches(inner._plain_seconds, 8)
    proposer = LookupAssist(inner, 2)
    for _ in range(MIN_BATCHES):
        run_batch(inner.drained, [100] * 8, 0.100, drafted=False)
        run_batch(inner.drained, [100] * 8, 0.130, drafted=True)
    views = {f"r{i}": list(range(10)) for i in range(8)}
    for rid, view in views.items():
        proposer.track(rid, view)
        inner.runner.held[rid] = 9
    assert not inner.expected_loss(8)   # not draining yet
    proposer.draining(True)
    assert inner.expected_loss(8) and inner.expected_loss(1)
    requests = [DraftRequest(rid, view, K, 0.0, 0, 1.0, 0.0, 0, 40) for rid, view in views.items()]
    assert not any(d.token_ids for d in inner.propose(requests))
    for rid in views:
        proposer.remove(rid)
    assert not inner.expected_loss(8)


def test_the_factory_key(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": SPEC, "decode_profile": DECODE}
    assert dspark_factory.validate(base)["drained_batches"] is False
    assert dspark_factory.validate({**base, "drained_batches": True})["drained_batches"] is True
    with pytest.raises(ValueError, match="speculative_config.drained_batches"):
        dspark_factory.validate({**base, "drained_batches": "yes"})
    with pytest.raises(ValueError, match="speculative_config.drained_batches: .*decode_profile"):
        dspark_factory.validate({k: v for k, v in base.items() if k != "decode_profile"} | {"drained_batches": True})
    with pytest.raises(ValueError, match="speculative_config.drained_batches: only used with scheduling"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "drained_batches": True})



def test_without_undrafted_batches_the_prediction_is_trusted_with_a_margin() -> None:
    """A load that always drafts is judged against `UNCALIBRATED` (plain decoding assumed at that
    share of its prediction), never run plain to calibrate."""
    ledger = DrainedBatches(lambda b: STEP, 8)
    for _ in range(MIN_BATCHES):
        assert run_batch(ledger, [100] * 4, 0.100 / (UNCALIBRATED + 0.01), drafted=True) is False
    assert ledger.verdicts[4] == pytest.approx((UNCALIBRATED + 0.01) / UNCALIBRATED)
    assert run_batch(ledger, [100] * 4, 0.100, drafted=True) is False   # no skip: it won
    slow = DrainedBatches(lambda b: STEP, 8)
    for _ in range(MIN_BATCHES):
        run_batch(slow, [100] * 4, 0.100 / (UNCALIBRATED - 0.05), drafted=True)
    assert slow.verdicts[4] < 1.0 and run_batch(slow, [100] * 4, 0.100, drafted=False) is True


def test_a_batch_larger_than_the_slots_is_predicted_as_the_engine_runs_it() -> None:
    """16 requests of 100 tokens with 8 slots: two rounds of 8, 200 steps at 8 running; with
    unequal lengths a waiting request takes the first slot that frees."""
    ledger = DrainedBatches(lambda b: STEP * b, 8)
    assert ledger._predicted([100] * 16) == pytest.approx(200 * 8 * STEP)
    two = DrainedBatches(lambda b: STEP * b, 2)
    # slots: 10 and 30 run; at 10 the third (20) joins (ends at 30); both end at 30
    assert two._predicted([10, 30, 20]) == pytest.approx(10 * 2 * STEP + 20 * 2 * STEP)
    with pytest.raises(ValueError, match="slots"):
        DrainedBatches(lambda b: STEP, 0)


def test_after_a_rule_out_each_probe_is_judged_on_its_own() -> None:
    """The drafted window is emptied at a rule-out: a probe that wins ends the backoff (old
    losses do not hold the bucket out), one that loses doubles the next rule-out."""
    ledger = DrainedBatches(lambda b: STEP, 8)
    for _ in range(MIN_BATCHES):
        run_batch(ledger, [100] * 8, 0.100, drafted=False)
    for _ in range(MIN_BATCHES):
        run_batch(ledger, [100] * 8, 0.120, drafted=True)
    for _ in range(BACKOFF):
        assert run_batch(ledger, [100] * 8, 0.100, drafted=False) is True
    assert run_batch(ledger, [100] * 8, 0.110, drafted=True) is False   # a probe that loses alone
    assert ledger._skip[8] == 2 * BACKOFF
    for _ in range(2 * BACKOFF):
        assert run_batch(ledger, [100] * 8, 0.100, drafted=False) is True
    assert run_batch(ledger, [100] * 8, 0.090, drafted=True) is False   # a probe that wins alone
    assert ledger.verdicts[8] == pytest.approx(0.100 / 0.090) and 8 not in ledger._backoff
    assert run_batch(ledger, [100] * 8, 0.120, drafted=True) is False   # young again: one loss is not judged
    assert not ledger._skip[8]


def start_batch(proposer: DSparkProposer, tag: str) -> tuple[dict[str, list[int]], bool]:
    """Eight requests tracked, the engine draining, one round proposed: their live lists and
    whether the round drafted."""
    views = {f"{tag}{i}": list(range(10)) for i in range(8)}
    for rid, view in views.items():
        proposer.track(rid, view)
        proposer.runner.held[rid] = 9
    proposer.draining(True)
    requests = [DraftRequest(rid, view, K, 0.0, 0, 1.0, 0.0, 0, 40) for rid, view in views.items()]
    return views, any(d.token_ids for d in proposer.propose(requests))


def test_a_ruled_out_batch_leaves_no_pause_behind(fake_runner) -> None:
    """The pauses and declined features the rule-out set during its batch are lifted when it ends
    (the review of session 64: the next batch, not ruled out, drafted nothing); the next batch of
    that size, not ruled out, drafts."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE)
    proposer.drained = DrainedBatches(proposer._plain_seconds, 8)
    ledger = proposer.drained
    for _ in range(MIN_BATCHES):
        run_batch(ledger, [100] * 8, 0.100, drafted=False)
        run_batch(ledger, [100] * 8, 0.130, drafted=True)
    ledger._skip[8] = 1   # the next batch alone is ruled out

    def batch(tag: str) -> tuple[bool, bool]:
        views, drafted = start_batch(proposer, tag)
        paused = proposer.pauses.left(8) > 0 and 8 in proposer._ruled_out
        for rid, view in views.items():
            view.extend([3] * 20)
            proposer.remove(rid)
        proposer.draining(False)
        return drafted, paused

    assert batch("x") == (False, True)   # ruled out: paused, the features declined ...
    assert proposer.pauses.left(8) == 0 and 8 not in proposer._ruled_out and not ledger.held   # ... lifted
    assert batch("y") == (True, False)


def test_the_engine_builds_the_ledger_with_its_slots(folders, kit) -> None:
    """`drained_batches` reaches the proposer (through the prompt-lookup wrapper), sized by the
    engine's `max_num_seqs`; off by default."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec, max_num_seqs=6).drained is None
    ledger = kit.dspark_proposer(target, {**spec, "drained_batches": True}, max_num_seqs=6).drained
    assert isinstance(ledger, DrainedBatches) and ledger._slots == 6


def test_a_ruled_out_batch_that_stops_draining_early_is_lifted_too(fake_runner) -> None:
    """`LLM.generate` interrupted: `draining(False)` before the last removal. What the rule-out
    paused is still lifted at the batch's end, and a pause set before the batch is not touched."""
    proposer = DSparkProposer(fake_runner(K, 0.9), K, SPEC, decode=DECODE)
    proposer.drained = ledger = DrainedBatches(proposer._plain_seconds, 8)
    ledger._skip[8] = 1
    proposer.pauses.pause(2, 77)   # a genuine pause at another bucket, from before the batch
    views, drafted = start_batch(proposer, "r")
    assert not drafted and proposer.pauses.left(8) > 0 and ledger.held == {8}
    proposer.draining(False)
    for rid in views:
        proposer.remove(rid)
    assert proposer.pauses.left(8) == 0 and 8 not in proposer._ruled_out and not ledger.held
    assert proposer.pauses.left(2) == 77

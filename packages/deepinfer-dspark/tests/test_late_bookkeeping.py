# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`LateBookkeeping` (`speculative_config.overlap_bookkeeping`): a drafted round is judged, and
its commits folded into the measured acceptance, during the next round's draft (the runner's
`while_running` hook), so every decision comes one round later; greedy output stays plain
decoding's."""

from __future__ import annotations

import pytest
import torch
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_runner import DraftRequest as RunnerRequest
from deepinfer_dspark.checkpoint import load_state_dict
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.draft_runner import DraftSampling, DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.factories import OVERLAP_DEFAULT, _dspark_settings
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])   # drafting loses


def asks(proposer: DSparkProposer, batch: int, length: int = 40) -> list[DraftRequest]:
    """`batch` requests of `length` tokens whose contexts hold their committed positions."""
    out = []
    for i in range(batch):
        proposer.runner.held[f"r{i}"] = length - 1
        out.append(DraftRequest(f"r{i}", list(range(length)), K, 0.0, 0, 1.0, 0.0, 0, length))
    return out


def pair(fake_runner, confidence: float = 0.05) -> tuple[DSparkProposer, DSparkProposer]:
    """The same proposer at once (`bound_only` 0, openings apart off) and with the option."""
    return tuple(DSparkProposer(fake_runner(K, confidence), K, FALLING, decode=DECODE, opening_tokens=0,
                                overlap_bookkeeping=late) for late in (False, True))


def test_a_lone_probe_is_judged_at_once(fake_runner) -> None:
    now, late = pair(fake_runner)
    for p in (now, late):   # (the first drafted round: no run before it)
        assert p.propose(asks(p, 1))[0].token_ids
        assert p.pauses.left(1) > 0 and p.pauses.rounds(1) == 1 and p._late is None
    assert late.judged == now.judged


def test_a_losing_round_in_a_run_pauses_one_round_later(fake_runner) -> None:
    now, late = pair(fake_runner)
    for p in (now, late):
        p._in_run, p._run_ids = True, frozenset({"r0"})   # (as after a drafted round)
        assert p.propose(asks(p, 1))[0].token_ids
    assert now.pauses.left(1) > 0 and now.pauses.rounds(1) == 1
    assert late.pauses.left(1) == 0 and late.pauses.rounds(1) == 0 and late.judged is None   # waits
    assert late.propose(asks(late, 1))[0].token_ids   # drafts: the first round judged during its draft
    assert late.pauses.rounds(1) == 1 and late.pauses.left(1) > 0
    assert late.judged == now.judged   # priced alike (the acceptance had no commit yet)


def test_commits_fold_in_the_next_draft(fake_runner) -> None:
    now, late = pair(fake_runner, confidence=0.9)   # (a winning drafter: no pause between rounds)
    for p in (now, late):
        p._in_run, p._run_ids = True, frozenset({"r0"})   # (inside a run of drafted rounds)
        p.propose(asks(p, 1))
        p.commit("r0", 40 + 3)   # two drafts of four accepted (and the bonus token)
        assert p.openings._moved == 2   # read at once either way (`OpeningPhase.advanced`)
    assert now.acceptance.full.requests == pytest.approx(1.0) and now.acceptance.body_requests == 1
    assert late.acceptance.full.requests == 0 and late.acceptance.body_requests == 0   # kept unfolded
    for p in (now, late):
        p.propose(asks(p, 1, length=43))
    assert late.acceptance.body_requests == 1 and late.acceptance.rounds == now.acceptance.rounds == 1
    assert late.acceptance.ratio(1) == pytest.approx(now.acceptance.ratio(1), rel=1e-2)   # (aged a round apart)
    assert late.acceptance.full.mean() == pytest.approx(now.acceptance.full.mean(), rel=1e-2)


def test_idle_rounds_reads_the_bounds_priced_during_the_draft(fake_runner, monkeypatch) -> None:
    late = pair(fake_runner, confidence=0.9)[1]
    calls = []
    for name in ("cannot_pay", "expected_loss"):
        original = getattr(DSparkProposer, name)
        monkeypatch.setattr(DSparkProposer, name,
                            lambda self, batch, _f=original, _n=name: calls.append(_n) or _f(self, batch))
    late.propose(asks(late, 1))   # (its checks before drafting price the bounds too)
    calls.clear()
    late.propose(asks(late, 1))
    assert calls[-2:] == ["cannot_pay", "expected_loss"]   # during the draft (`_overlapped`)
    calls.clear()
    calls.extend(["cannot_pay", "expected_loss"])
    assert late.idle_rounds() == 0 and calls == ["cannot_pay", "expected_loss"]   # read, not priced again
    assert late.idle_rounds() == 0 and len(calls) == 4   # (read once: priced live after that)


def test_a_plain_round_and_an_idle_round_settle(fake_runner) -> None:
    late = pair(fake_runner)[1]
    late._in_run, late._run_ids = True, frozenset({"r0"})
    late.propose(asks(late, 1))
    late.idle_round(1)   # a paused round: what waits is done first
    assert late._late is None and late.pauses.rounds(1) == 1 and not late._in_run
    late = pair(fake_runner)[1]
    late._in_run, late._run_ids = True, frozenset({"r0"})
    late.propose(asks(late, 1))
    late.runner.held["r0"] = 10   # a gap in its context: nothing is ready, no draft
    assert not late.propose([DraftRequest("r0", list(range(40)), K, 0.0, 0, 1.0, 0.0, 0, 40)])[0].token_ids
    assert late._late is None and late.pauses.rounds(1) == 1


def test_a_request_leaving_keeps_its_waiting_commit(fake_runner) -> None:
    late = pair(fake_runner, confidence=0.9)[1]
    late.propose(asks(late, 2))   # (judged at once: the first of a run)
    late.propose(asks(late, 2))   # judged in the next draft
    late.commit("r0", 43)
    late.commit("r1", 41)
    late.remove("r0")   # (without the option its commit had been folded already)
    assert late.acceptance.full.requests == pytest.approx(1.0) and late._late[1] == [("r1", 41)]
    late.idle_round(1)
    assert late.acceptance.full.requests == pytest.approx(2.0, rel=1e-2) and late.acceptance.rounds == 1


@pytest.mark.parametrize("graphs,temperature", [(True, 0.0), (False, 0.0), (False, 0.7), (True, 0.7)])
def test_the_runner_calls_the_hook_once_before_its_result(tiny, graphs, temperature) -> None:
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type="vanilla", markov_rank=16, enable_confidence_head=True)
    drafter = DSparkDrafter(DSparkConfig.from_dict(config))
    load_state_dict(drafter, random_state_dict(config, seed=3))
    drafter.eval()
    runner = DSparkDraftRunner(drafter, graphs=graphs)
    gen = torch.Generator().manual_seed(5)
    for rid, n in (("a", 9), ("b", 14)):
        runner.observe(rid, list(range(n)), torch.randn(n, drafter.config.feature_size, generator=gen))
    requests = [RunnerRequest("a", 3, 9, DraftSampling(temperature, seed=1)), RunnerRequest("b", 5, 14)]
    plain = runner.draft(requests, 3)
    seen = []
    hooked = runner.draft(requests, 3, while_running=lambda: seen.append(len(seen)))
    assert seen == [0]
    for x, y in zip(plain, hooked):
        assert torch.equal(x.tokens, y.tokens) and torch.equal(x.confidences, y.confidences)
    assert runner.draft([], 3, while_running=lambda: seen.append(1)) == [] and seen == [0]   # no round, no call


def test_the_config_key(tmp_path) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": FALLING, "decode_profile": DECODE}
    assert _dspark_settings(base)["overlap_bookkeeping"] is OVERLAP_DEFAULT is True
    assert _dspark_settings({**base, "overlap_bookkeeping": False})["overlap_bookkeeping"] is False
    for bad in (1, "yes", None.__class__):
        with pytest.raises(ValueError, match="^speculative_config.overlap_bookkeeping"):
            _dspark_settings({**base, "overlap_bookkeeping": bad})
    with pytest.raises(ValueError, match="^speculative_config.overlap_bookkeeping: only used with scheduling="):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K,
                          "scheduling": "fixed", "overlap_bookkeeping": True})


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_engine_stays_lossless_and_still_pauses(folders, kit, asynchronous) -> None:
    """Profiles where every round of the tiny random drafter loses, at 1 and 3 requests: greedy
    output equals plain decoding's, rounds are drafted, and the losses still pause drafting."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 64, 320], [1000.0, 900.0, 800.0, 500.0]),
            "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0]), "opening_tokens": 0, "prompt_lookup_min": 0,
            "bound_only": 0, "overlap_bookkeeping": True}
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    plain = kit.build(target)
    llm = kit.build(target, spec, async_scheduling=asynchronous)
    proposer = llm.engine.speculative.proposer
    assert proposer.overlap_bookkeeping
    for prompts in (kit.prompts(1, seed=3), kit.prompts(3, seed=4)):
        batch = [{"prompt_token_ids": p} for p in prompts]
        want = [o.outputs[0].token_ids for o in plain.generate(batch, params)]
        assert [o.outputs[0].token_ids for o in llm.generate(batch, params)] == want
    assert proposer.drafted_rounds > 0 and proposer.skipped_rounds > proposer.drafted_rounds   # losses paused it
    assert proposer.pauses.rounds(1) > 0 and proposer.pauses.gain(1) < 1


def ask(proposer: DSparkProposer, request_id: str, length: int = 40) -> DraftRequest:
    proposer.runner.held[request_id] = length - 1
    return DraftRequest(request_id, list(range(length)), K, 0.0, 0, 1.0, 0.0, 0, length)


def test_a_new_batch_after_a_stop_starts_a_run_of_its_own(fake_runner) -> None:
    """A batch that ends by a stop token in its last verification leaves its last round's judgement
    waiting (the engine asks only `idle_rounds` then): the next batch's first round settles it and is
    judged at once (found in session 46's review)."""
    now, late = pair(fake_runner, confidence=0.9)
    for p in (now, late):
        p.propose([ask(p, "a"), ask(p, "b")])
        p.commit("a", 43)
        p.commit("b", 43)
        p.propose([ask(p, "a", 43), ask(p, "b", 43)])
        p.remove("a")   # both finished by a stop token in this verification: no commit
        p.remove("b")
        p.idle_rounds()
    assert late._late is not None
    for p in (now, late):
        p.runner.confidences = [0.05] * K   # the new request's drafts lose
        assert p.propose([ask(p, "s0")])[0].token_ids
        assert p.pauses.left(1) > 0 and p._late is None   # judged at once
    assert late.pauses.rounds(2) == now.pauses.rounds(2) == 2   # the old batch's rounds were judged too


def test_a_first_round_leaves_no_verdict(fake_runner, monkeypatch) -> None:
    """A round judged at once commits at once: `idle_rounds` prices the bounds live, with its commit
    (found in session 46's review: a verdict priced in the draft cleared the next round)."""
    monkeypatch.setattr(DSparkProposer, "expected_loss", lambda self, batch: self.acceptance.body_requests > 0)
    now, late = pair(fake_runner, confidence=0.9)
    for p in (now, late):
        p.propose([ask(p, "r0")])
        p.commit("r0", 43)
        assert p.idle_rounds() > 0


def test_a_raising_judgement_keeps_the_rounds_commits(fake_runner) -> None:
    late = pair(fake_runner, confidence=0.9)[1]
    late._in_run, late._run_ids = True, frozenset({"r0"})
    late.propose([ask(late, "r0")])
    late.commit("r0", 43)
    late._plan_pause = lambda *args, **kwargs: (_ for _ in ()).throw(RuntimeError("judgement failed"))
    with pytest.raises(RuntimeError, match="judgement failed"):
        late.idle_round(1)
    assert late._late is None and late.acceptance.full.requests == pytest.approx(1.0)
    assert "r0" not in late.acceptance._open   # folded and closed all the same

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DSparkProposer.wants_features` (`decline_features`): while drafting is ruled out at the current
load (even accepting every draft could not pay), the target skips the drafter's features.

The requests then running, and those admitted meanwhile, get a gap in their drafter context and
are never drafted again (unless a recompute closes it); requests admitted once drafting may pay
again are; output stays that of plain decoding.
"""

from __future__ import annotations

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.pause_policy import NOTHING_READY_PAUSE
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# One request: a round of 5 tokens at 500 rounds/s beats 1000 plain steps/s when more than one
# draft is accepted. 64 requests: a round of 320 tokens at 100 rounds/s (32k tokens/s) loses to
# plain decoding (44.8k) even with every draft accepted: `cannot_pay(64)`.
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 100.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def requests(batch: int, length: int = 10) -> list[DraftRequest]:
    return [DraftRequest(f"r{i}", list(range(length)), K, 0.0, 0, 1.0, 0.0, 0, 40) for i in range(batch)]


def step(proposer: DSparkProposer, batch: int) -> bool:
    """One engine round of `batch` requests; True if the drafter ran."""
    if proposer.idle_rounds() > 0:
        proposer.idle_round(batch)
        return False
    return any(d.token_ids for d in proposer.propose(requests(batch)))


def observe(proposer: DSparkProposer, request_id: str, first: int, count: int) -> None:
    proposer.observe_step([request_id], [first], [count], [0], torch.ones(count, 2))


def test_declined_while_ruled_out_and_back_when_drafting_may_pay(fake_runner) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
    assert proposer.cannot_pay(64) and not proposer.cannot_pay(1)
    assert proposer.wants_features()
    observe(proposer, "r0", 0, 9)                   # drafting not paused: projected at once
    assert proposer.runner.num_positions("r0") == 9 and step(proposer, 1)
    assert proposer.wants_features()
    proposer.pauses.pause(1, 3)                      # a ledger pause (not ruled out): buffered
    observe(proposer, "r0", 9, 1)
    assert proposer.pending.holds and proposer.wants_features()
    answers = []
    for _ in range(20):                              # 64 requests: ruled out at every re-judgement
        assert not step(proposer, 64)
        answers.append(proposer.wants_features())
    # The first round at 64 is skipped by bucket 1's pause (the engine asks with the last
    # round's bucket: a lag of one round), so bucket 64 is judged from the second on.
    assert answers[0] and not any(answers[1:])
    assert not proposer.pending.holds                # buffered rows dropped: their contexts have a gap
    drafted = []
    for _ in range(6):                               # bucket 1: not ruled out (its ledger pause runs out)
        drafted.append(step(proposer, 1))
        assert proposer.wants_features()
    assert any(drafted)
    for off in (dict(decline_features=False), dict(measure_step_times=True)):
        keeps = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4, **off)
        for _ in range(20):
            assert not step(keeps, 64) and keeps.wants_features()


def test_a_request_with_a_gap_is_never_drafted_again(fake_runner) -> None:
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    observe(proposer, "r0", 0, 5)
    observe(proposer, "r0", 7, 3)                    # positions 5 and 6 were never observed
    proposer.feed.project([("r1", [0, 1, 2], torch.ones(3, 2))])
    proposer.feed.project([("r1", [4, 5], torch.ones(2, 2))])
    assert proposer.runner.num_positions("r0") == 5 and proposer.runner.num_positions("r1") == 3
    gapped = [DraftRequest("r0", list(range(11)), K, 0.0, 0, 1.0, 0.0, 0, 40)]
    assert proposer.propose(gapped)[0].token_ids == []
    # Nothing could draft: a fixed pause (the engine's steps keep overlapping; a probe finding
    # nothing ready every round would make every step wait), the bucket's backoff untouched. The
    # request's gap is known now: while every running request has one, the pause is renewed
    # without asking `propose` again and the features are declined (session 20).
    assert "r0" in proposer.feed.gapped and proposer.pauses.left(1) == NOTHING_READY_PAUSE
    for _ in range(200):
        assert not proposer.wants_features()
        assert proposer.idle_rounds() > 0
        proposer.idle_round(1)
    assert proposer.drafted_rounds == 0 and proposer.pauses._backoff.get(1) is None   # backoff untouched
    assert proposer.dormant_rounds(2) > 0 and proposer.dormant_rounds(3) == 0   # r0, r1 gapped; one more: not all
    # A request with a whole context, arriving during such a pause (r0 and r1 have finished),
    # drafts within the pause.
    proposer.remove("r0")
    assert proposer.dormant_rounds(1) > 0   # r1 is alive: a gapped request (e.g. preempted) counts
    proposer.remove("r1")
    observe(proposer, "r2", 0, 10)
    whole = [DraftRequest("r2", list(range(11)), K, 0.0, 0, 1.0, 0.0, 0, 40)]
    assert proposer.dormant_rounds(1) == 0 and proposer.wants_features()
    for waited in range(NOTHING_READY_PAUSE + 2):
        if proposer.idle_rounds() > 0:
            proposer.idle_round(1)
        elif proposer.propose(whole)[0].token_ids:
            break
    else:
        pytest.fail("a request with a whole context never drafted")
    assert waited <= NOTHING_READY_PAUSE + 1


def test_engine_declines_features_where_drafting_is_ruled_out(folders, kit) -> None:
    """A tiny engine whose profiles rule drafting out at 3 requests and not at 1: the 3-request
    batch runs without features (and without drafts); a lone request after it drafts again;
    greedy output is that of plain decoding throughout."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 8, 15], [600.0, 900.0, 150.0, 150.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0]),
            "opening_tokens": 0}   # the short replies judged as bodies (openings never decline)
    batch = kit.prompts(3, seed=8)
    expected = kit.greedy(kit.build(target), batch)
    llm = kit.build(target, spec)
    proposer = llm.engine.speculative.proposer
    assert proposer.cannot_pay(3) and not proposer.cannot_pay(1) and not proposer.retired
    runner = llm.engine.runner
    real, declined = runner.execute_model, []

    def execute_model(chunks, *args, features: bool = True, **kw):
        declined.append(not features)
        return real(chunks, *args, features=features, **kw)

    runner.execute_model = execute_model
    assert kit.greedy(llm, batch) == expected
    assert sum(declined) >= 15, declined             # the steps at 3 requests skipped the features
    assert proposer.declined_steps == sum(declined)   # the metric counts them
    assert llm.engine.speculative.dormant.steps >= 10   # most of them asked the proposer nothing
    assert llm.engine.speculative.stats.proposed == 0
    declined.clear()
    lone = kit.greedy(llm, batch[:1])
    assert lone == expected[:1]
    assert llm.engine.speculative.stats.proposed > 0
    # The random drafter's rounds all lose there too: once measured (a settled loss),
    # the lone request's later steps decline the features; never before it drafted.
    # (a round at 1 costs 1.67 plain steps: it pays only above 0.67 accepted drafts a round)
    assert not declined[0] and proposer.pauses.gain(1) <= 1.0, declined
    # With the key off, every step carries the features (and the output is the same).
    keep = kit.build(target, {**spec, "decline_features": False})
    real_keep, flags = keep.engine.runner.execute_model, []
    keep.engine.runner.execute_model = lambda chunks, *a, features=True, **kw: (
        flags.append(features) or real_keep(chunks, *a, features=features, **kw))
    assert kit.greedy(keep, batch) == expected and flags and all(flags)


def test_decline_features_is_a_checked_key(folders, kit) -> None:
    target, drafter = folders
    base = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
    with pytest.raises(ValueError, match="speculative_config.decline_features"):
        kit.build(target, {**base, "decline_features": True})          # only with confidence scheduling
    with pytest.raises(ValueError, match="speculative_config.decline_features"):
        kit.build(target, {**base, "scheduling": "confidence", "sps_profile": SPS, "decline_features": "yes"})
    with pytest.raises(ValueError, match="speculative_config.decline_features: cannot be true with measure_step_times"):
        kit.build(target, {**base, "scheduling": "confidence", "sps_profile": SPS, "decode_profile": DECODE,
                       "measure_step_times": True, "decline_features": True})
    with pytest.raises(ValueError, match="speculative_config.opening_tokens: only used with scheduling='confidence'"):
        kit.build(target, {**base, "opening_tokens": 0})
    for bad in (-1, 2.5, True, "32"):
        with pytest.raises(ValueError, match="speculative_config.opening_tokens: must be an int >= 0"):
            kit.build(target, {**base, "scheduling": "confidence", "sps_profile": SPS, "opening_tokens": bad})
    for value, expected in ((None, 32), (0, 0), (100, 100)):   # null takes the default, as for every key
        llm = kit.build(target, {**base, "scheduling": "confidence", "sps_profile": SPS, "opening_tokens": value})
        assert llm.engine.speculative.proposer.openings.tokens == expected


def test_rows_of_requests_with_a_gap_are_not_buffered(fake_runner) -> None:
    """Once a flush finds a request's buffered rows past a gap, its later rows are not kept (a
    flush would only walk them); the other requests' rows are; a finished request is forgotten;
    a recompute from position 0 that closes the gap makes the request draftable again."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    observe(proposer, "a", 0, 4)
    proposer.observe_step(["b"], [0], [4], [0], torch.ones(4, 2))
    proposer.pauses.pause(2, 100)                    # paused at 2 requests: steps are buffered
    proposer._last_batch = 2
    proposer.observe_step(["a", "b"], [6, 4], [1, 1], [0, 1], torch.ones(2, 2))   # a: 4, 5 missing
    proposer._flush()
    assert proposer.feed.gapped == {"a"} and proposer.runner.num_positions("b") == 5
    proposer.observe_step(["a", "b"], [7, 5], [1, 1], [0, 1], torch.ones(2, 2))
    assert proposer.pending.pairs == 1                # only b's row
    proposer.observe_step(["a"], [8], [1], [0], torch.ones(1, 2))
    assert proposer.pending.pairs == 1                # a step of gapped requests only: nothing kept
    proposer.pauses.pause(2, 0)
    proposer._flush()                                 # drafting resumed: projected as it comes again
    proposer.observe_step(["a"], [0], [9], [0], torch.ones(9, 2))   # recomputed from 0 (preempted)
    assert proposer.runner.num_positions("a") == 9 and "a" not in proposer.feed.gapped
    proposer.feed.gapped.add("c")
    proposer.remove("c")
    assert "c" not in proposer.feed.gapped


def test_a_recompute_closes_a_gap_while_buffering_and_through_project(fake_runner) -> None:
    """A gapped request's rows from or before its held positions (a recompute) are buffered and
    close the gap at the flush; `project` closes it too."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    feed = proposer.feed
    observe(proposer, "a", 0, 5)
    observe(proposer, "a", 7, 1)                     # 5 and 6 missing
    assert feed.gapped == {"a"}
    proposer.pauses.pause(1, 100)
    proposer._last_batch = 1
    observe(proposer, "a", 8, 1)                     # past the gap: not kept
    assert not proposer.pending.holds
    observe(proposer, "a", 0, 9)                     # recomputed from 0 while paused: kept
    assert proposer.pending.holds and "a" not in feed.gapped
    proposer._flush()
    assert proposer.runner.num_positions("a") == 9 and "a" not in feed.gapped
    feed.project([("b", [0, 1], torch.ones(2, 2))])
    feed.project([("b", [3], torch.ones(1, 2))])
    assert feed.gapped == {"b"}
    feed.project([("b", [0, 1, 2, 3, 4], torch.ones(5, 2))])
    assert proposer.runner.num_positions("b") == 5 and not feed.gapped


def test_a_declined_step_drops_rows_buffered_at_another_bucket(fake_runner) -> None:
    """A chat batch at a load ruled out long ago: its prefill runs while the last round's bucket
    (the previous batch's tail, one request) still wants features, so the prompts' rows are
    buffered (step by step, as here; in the engine, `dormant_rounds` now judges the batch about
    to run, so a prefill at a ruled-out load is declined outright); its first declined step must
    drop them (they have a gap from then on), not keep them until a flush (on the H200, 256 chat
    prompts piled up 44k rows over two batches and a flush of 58-231 ms)."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
    for _ in range(6):                               # 64 requests: ruled out, features declined
        step(proposer, 64)
    assert not proposer.wants_features() and not proposer.pending.holds
    proposer.pauses.pause(1, 50)                     # the batch's tail at 1 request: paused, buffering
    step(proposer, 1)
    assert proposer.wants_features()
    proposer.observe_step(["n0", "n1"], [0, 0], [9, 7], [0, 9], torch.ones(16, 2))   # the next prefill
    assert proposer.pending.holds
    step(proposer, 64)                               # its first decode round: 64 is still ruled out
    assert not proposer.wants_features()
    assert not proposer.pending.holds and proposer.pending.pairs == 0


def test_a_dormant_stretch_records_what_its_steps_one_by_one_would(fake_runner) -> None:
    """`dormant_rounds` / `dormant_passed` (the engine asks nothing in between) leave the proposer
    as `wants_features` (declined) and `idle_round` step by step would: the pause left, the
    skipped and declined counts, the evidence's age, the last batch; the buffer is dropped."""
    def paused() -> DSparkProposer:
        proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
        observe(proposer, "r0", 0, 9)
        proposer._last_batch = 64
        proposer._pause_for(30, 64, ruled_out=True)   # ruled out at 64 for 30 rounds
        observe(proposer, "r0", 9, 1)                 # a row captured before the engine asked
        assert proposer.pending.holds
        return proposer
    one_by_one, stretch = paused(), paused()
    for _ in range(12):
        assert not one_by_one.wants_features()
        one_by_one.idle_round(64)
    assert stretch.dormant_rounds(64) == 30 and not stretch.pending.holds
    stretch.dormant_passed(64, 12)
    assert not one_by_one.pending.holds
    for p in (one_by_one, stretch):
        p.state = (p.pauses.left(64), p.skipped_rounds, p.declined_steps, p._last_batch,
                   p.acceptance._now, p.acceptance.full._now, p.wants_features())
    assert stretch.state == one_by_one.state and stretch.state[0] == 18
    assert stretch.dormant_rounds(1) == 0 and stretch._last_batch == 1   # not ruled out at 1
    assert stretch.wants_features()                   # judged at the batch asked about
    measured = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_step_times=True)
    measured.pauses.pause(64, 30)
    measured._ruled_out.add(64)
    assert measured.dormant_rounds(64) == 0           # it times every step: never dormant


def stretches_and_steps(kit, target, spec, prompts, params, async_scheduling: bool, batches: int = 1):
    """Runs `batches` generate calls on two engines, one with dormant and quiet stretches and one
    asked step by step (`dormant_rounds` asked, never granted; `quiet_rounds` never asked); returns per
    engine the outputs (a list per call) and the proposer's state: pauses, skipped and declined
    counts, the evidence's age, the last batch, the drafted rounds, the openings left, and the
    features the drafter holds per request."""
    outs, states = [], []
    for stretches in (True, False):
        llm = kit.build(target, spec, async_scheduling=async_scheduling)
        proposer = llm.engine.speculative.proposer
        if not stretches:
            ask = proposer.dormant_rounds
            llm.engine.speculative.dormant._ask = lambda n, ask=ask: ask(n) and 0   # asked, never granted
            llm.engine.speculative.dormant._ask_quiet = None   # never asked: the plain step-by-step path
        outs.append([[o.outputs[0].token_ids for o in llm.generate(prompts, params)] for _ in range(batches)])
        assert (llm.engine.speculative.dormant.steps > 0) == stretches
        states.append((dict(proposer.pauses._left), proposer.skipped_rounds, proposer.declined_steps,
                       proposer.acceptance._now, proposer.acceptance.full._now, proposer._last_batch,
                       proposer.drafted_rounds, proposer.openings.rounds_left))
    return outs, states


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_engine_stretches_leave_the_proposer_as_steps_one_by_one(folders, kit, async_scheduling: bool) -> None:
    """A batch shrinking from 5 requests to 1 (ruled out at 2-5, drafting at 1): with dormant
    stretches, the proposer ends in the state that asking it step by step leaves (the same asks
    of `dormant_rounds`, never granted): pauses, skipped and declined counts, the evidence's age,
    the last batch; the output is plain decoding's."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "prompt_lookup_min": 0,   # DSpark's own stretches (`LookupAssist` caps them where a lookup could pay)
            "sps_profile": SPSProfile([1, 5, 8, 15], [900.0, 900.0, 150.0, 150.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0])}
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(5, seed=8)]
    params = [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (30, 24, 17, 11, 6)]
    outs, states = stretches_and_steps(kit, target, spec, prompts, params, async_scheduling, batches=2)
    plain = [o.outputs[0].token_ids for o in kit.build(target).generate(prompts, params)]
    assert outs[0] == outs[1] == [plain, plain]
    assert states[0] == states[1], states


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_request_in_a_gapped_requests_place_gets_its_features(folders, kit, async_scheduling: bool) -> None:
    """Three requests (drafting cannot pay at 3: declined, so the two left have gaps); when a
    length limit ends one of them, a new request takes its slot at the same running count. Its
    prefill's features are captured (the proposer hears of the ended request at once, also in the
    asynchronous engine, where its last token is resolved a step later: session 20's review) and
    it drafts; the output stays plain decoding's."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 10, 15], [900.0, 900.0, 900.0, 150.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0]), "opening_tokens": 0}
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    engine, proposer = llm.engine, llm.engine.speculative.proposer
    assert proposer.cannot_pay(3) and not proposer.cannot_pay(2)
    prompts = kit.prompts(4, seed=8)
    for rid, prompt, most in (("R1", prompts[0], 120), ("R2", prompts[1], 60), ("R3", prompts[2], 10)):
        engine.add_request(rid, prompt, SamplingParams(temperature=0, max_tokens=most, ignore_eos=True))
    added, tokens, proposed = False, {}, {}
    while engine.has_unfinished():
        for out in engine.step():
            tokens.setdefault(out.request_id, []).extend(out.new_token_ids)
            if out.spec_counts is not None:
                proposed[out.request_id] = proposed.get(out.request_id, 0) + out.spec_counts[0]
        running = [r.request_id for r in engine.scheduler.running]
        if not added and "R2" not in running and "R3" not in running and "R1" in running:
            assert proposer.feed.gapped   # R1 (and R2 until it is heard of) lost their context at 3
            engine.add_request("N", prompts[3], SamplingParams(temperature=0, max_tokens=60, ignore_eos=True))
            added = True
    assert added and proposed.get("N", 0) > 0, proposed   # N's context is whole: it drafted
    plain = kit.build(target)
    for rid, prompt, most in (("R1", prompts[0], 120), ("N", prompts[3], 60)):
        out = plain.generate([{"prompt_token_ids": prompt}],
                             SamplingParams(temperature=0, max_tokens=most, ignore_eos=True))[0]
        assert tokens[rid] == out.outputs[0].token_ids


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_stretches_match_steps_when_a_stop_token_ends_the_batch(folders, kit, async_scheduling: bool) -> None:
    """The last request ends on a stop token inside a dormant stretch (the asynchronous engine
    finds it a step later, while resolving): with stretches the proposer ends as asking it step by
    step leaves it (session 20's review: the batch's end settled the stretch at the old count)."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "prompt_lookup_min": 0,   # DSpark's own stretches (`LookupAssist` caps them where a lookup could pay)
            "sps_profile": SPSProfile([1, 5, 10, 15], [900.0, 900.0, 900.0, 150.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0]), "opening_tokens": 0}
    plain = kit.build(target)
    for seed in range(8, 40):   # a first reply with a token not seen before past position 50
        prompts = [{"prompt_token_ids": p} for p in kit.prompts(3, seed=seed)]
        first = plain.generate(prompts[:1], SamplingParams(temperature=0, max_tokens=80,
                                                           ignore_eos=True))[0].outputs[0].token_ids
        stop = next((t for i, t in enumerate(first) if i >= 50 and t not in first[:i]), None)
        if stop is not None:
            break
    else:
        pytest.fail("every reply looped before token 50")
    params = [SamplingParams(temperature=0, max_tokens=80, stop_token_ids=[stop]),
              SamplingParams(temperature=0, max_tokens=30, ignore_eos=True),
              SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)]
    outs, states = stretches_and_steps(kit, target, spec, prompts, params, async_scheduling)
    assert outs[0] == outs[1] and outs[0][0][0][-1] == stop
    assert states[0] == states[1], states


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_quiet_stretches_leave_the_proposer_as_steps_one_by_one(folders, kit, async_scheduling: bool) -> None:
    """The random drafter's rounds lose, so the proposer pauses; with `decline_features` off it
    keeps the features while paused, and the engine runs those pauses as quiet stretches
    (features handed over, nothing else asked). The proposer ends as asking it step by step
    leaves it, and the output is plain decoding's."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "prompt_lookup_min": 0,   # DSpark's own stretches (`LookupAssist` caps them where a lookup could pay)
            "sps_profile": SPSProfile([1, 5, 8, 15], [900.0, 900.0, 900.0, 900.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0]), "opening_tokens": 0,
            "decline_features": False, "measure_round_times": False}   # (timed rounds: wall-clock decisions)
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(2, seed=5)]
    params = [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (120, 70)]
    quiet = []
    for stretches in (True, False):
        llm = kit.build(target, spec, async_scheduling=async_scheduling)
        if not stretches:
            llm.engine.speculative.dormant._ask_quiet = None
        llm.generate(prompts, params)
        quiet.append(llm.engine.speculative.dormant.quiet_steps)

    assert quiet[0] > 0 and quiet[1] == 0, quiet
    outs, states = stretches_and_steps(kit, target, spec, prompts, params, async_scheduling, batches=2)
    plain = [o.outputs[0].token_ids for o in kit.build(target).generate(prompts, params)]
    assert outs[0] == outs[1] == [plain, plain]
    assert states[0] == states[1], states


def test_a_quiet_stretch_records_what_its_steps_one_by_one_would(fake_runner) -> None:
    """`quiet_rounds` / `quiet_passed` (the engine hands over the features and asks nothing else)
    leave the proposer as `wants_features` (kept) and `idle_round` step by step would: the pause
    left, the skipped count, the evidence's age, the last batch, the opening rounds left (4 of the
    12 rounds fall past the pause: counted at the openings' own ledger); the buffer holds every
    row (13 buffered). A load ruled out, a gapped batch or measured step times get no quiet stretch."""
    def paused() -> DSparkProposer:
        proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
        observe(proposer, "r0", 0, 9)
        proposer._last_batch = 1
        proposer.pauses.pause(1, 8)                    # a body pause at 1, not ruled out
        proposer.openings.begin([2])                   # reply position 2: 29 opening rounds after it
        proposer.openings.ledger.pause(1, 20)
        observe(proposer, "r0", 9, 1)                  # buffered (paused): the buffer's row size is known
        return proposer
    one_by_one, stretch = paused(), paused()
    assert stretch.quiet_rounds(1) == 8
    for i in range(12):
        assert one_by_one.wants_features()
        observe(one_by_one, "r0", 10 + i, 1)
        one_by_one.idle_round(1)
        observe(stretch, "r0", 10 + i, 1)
    stretch.quiet_passed(1, 12)
    for p in (one_by_one, stretch):
        p.state = (p.pauses.left(1), p.skipped_rounds, p.declined_steps, p._last_batch, p.acceptance._now,
                   p.acceptance.full._now, p.openings.rounds_left, p.openings.ledger.left(1), p.pending.pairs)
    assert stretch.state == one_by_one.state and stretch.state[6:8] == (17, 16) and stretch.state[-1] == 13
    assert stretch.quiet_rounds(1) == 0                # the pause ran out: judged step by step again
    stretch.pauses.pause(1, 5)
    assert stretch.quiet_rounds(1) == 5
    stretch.feed.gapped.add("r0")
    assert stretch.quiet_rounds(1) == 0                # every running request has a gap: nothing to keep
    stretch.pauses.pause(64, 30)
    stretch._ruled_out.add(64)
    assert stretch.quiet_rounds(64) == 0               # ruled out: dormant, not quiet
    measured = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_step_times=True)
    measured.pauses.pause(1, 30)
    assert measured.quiet_rounds(1) == 0               # it times every step


def test_quiet_rounds_change_nothing_and_wait_for_a_settled_count(fake_runner) -> None:
    """Asking `quiet_rounds` leaves the proposer as it was: after a joiner moved the count from
    a paused bucket (1) to one that is not (2), the step-by-step path judges the round by the last
    round's batch (a round late): a quiet ask must not move it (session 26's review found it did)."""
    def joined() -> DSparkProposer:
        proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4, decline_features=False)
        proposer.observe_step(["r0", "r1"], [0, 0], [9, 9], [0, 9], torch.ones(18, 2))
        proposer._last_batch = 1
        proposer.pauses.pause(1, 3)
        return proposer
    asked, plain = joined(), joined()
    assert asked.quiet_rounds(2) == 0 and asked._last_batch == 1
    for p in (asked, plain):
        assert p.wants_features()
        p.observe_step(["r0", "r1"], [9, 9], [1, 1], [0, 1], torch.ones(2, 2))
        p.drafted = p.idle_rounds() == 0 and any(d.token_ids for d in p.propose(requests(2, length=11)))
        if not p.drafted:
            p.idle_round(2)
    assert (asked.drafted, asked.skipped_rounds, dict(asked.pauses._left), asked.pending.holds) == \
        (plain.drafted, plain.skipped_rounds, dict(plain.pauses._left), plain.pending.holds)
    assert not asked.drafted and asked.skipped_rounds == 1   # judged by bucket 1's pause, as step by step


def test_a_quiet_stretch_ends_before_the_buffer_fills(fake_runner) -> None:
    """A stretch is capped at the rounds the buffer takes without filling: the flush, and the gaps
    it may find (then a dormant stretch, step by step), happen in a step asked step by step."""
    from deepinfer_dspark.pending_context import PendingContext

    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, probe_every=4)
    proposer.observe_step(["r0", "r1"], [0, 0], [10, 10], [0, 10], torch.ones(20, 2))
    proposer.feed.pending = PendingContext(max_rows=12)
    proposer._last_batch = 2
    proposer.pauses.pause(2, 8)
    assert proposer.quiet_rounds(2) == 1                # nothing buffered yet: one round tells the row size
    proposer.observe_step(["r0", "r1"], [10, 10], [1, 1], [0, 1], torch.ones(2, 2))
    assert len(proposer.pending) == 2 and proposer.quiet_rounds(2) == 4   # 2 + 4 x 2 = 10 < 12 rows
    pending = PendingContext(max_rows=100, max_bytes=100)
    pending.add_step(["a"], [0], [2], [0], torch.ones(2, 5))      # 40 bytes: 20 a row
    assert pending.rounds_before_full(1) == 2 and pending.rounds_before_full(0) == 0   # 40 + 2 x 20 < 100


def test_a_partial_probe_that_loses_where_the_body_loses_declines_the_features(fake_runner) -> None:
    """In a closed loop each probe after a settled loss is partial (the requests running then got
    a gap, the joiners have none). Losing where the bucket's settled average loses, its pause now
    declines the features too (it kept them for the whole pause before); at a young bucket it
    still keeps them, and a partial round is still no evidence (not judged)."""
    from deepinfer_dspark.pause_ledger import ledger_bucket
    from deepinfer_dspark.pause_policy import SETTLED_ROUNDS

    settled = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    young = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    for _ in range(SETTLED_ROUNDS):
        settled.pauses.judge(2, 0.5)
    for proposer in (settled, young):
        judged = proposer.pauses.rounds(2)
        proposer._last_batch = 2
        proposer._plan_pause(0.0, [K], 2, partial=True)   # nothing expected accepted: a loss
        assert proposer.pauses.left(2) >= NOTHING_READY_PAUSE and proposer.pauses.rounds(2) == judged
    assert ledger_bucket(2) in settled._ruled_out and not settled.wants_features()
    assert ledger_bucket(2) not in young._ruled_out and young.wants_features()


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_a_round_is_priced_at_the_requests_running_not_those_asked(folders, kit, async_scheduling: bool) -> None:
    """A request that cannot be drafted for (a repetition penalty) beside one that can: the engine
    asks `propose` about one request while two run, and tells the proposer so (`running`). DSpark
    then judges and pauses that round at 2 requests, the count `idle_round` and `dormant_rounds`
    hear (session 28's review: the round was judged at 1 and its pause read at 2, a bucket never
    paused). Output stays plain decoding's."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 10, 15], [900.0, 900.0, 900.0, 150.0]),
            "decode_profile": SPSProfile([1, 3], [1000.0, 1000.0]), "opening_tokens": 0}
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(2, seed=8)]
    params = [SamplingParams(temperature=0, max_tokens=60, ignore_eos=True),
              SamplingParams(temperature=0, max_tokens=60, ignore_eos=True, repetition_penalty=1.3)]
    plain = kit.build(target, async_scheduling=async_scheduling)
    expected = [o.outputs[0].token_ids for o in plain.generate(prompts, params)]
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    proposer = llm.engine.speculative.proposer
    heard, judged = [], []
    real_running, real_propose = proposer.running, proposer.propose
    proposer.running = lambda n: heard.append(n) or real_running(n)

    def judge(requests):
        drafts = real_propose(requests)
        judged.append((len(requests), proposer.batch))
        return drafts

    proposer.propose = judge
    got = [o.outputs[0].token_ids for o in llm.generate(prompts, params)]
    assert got == expected
    assert judged and all(pair == (1, 2) for pair in judged), judged   # asked about 1, judged at 2
    assert heard == [2] * len(judged)
    assert llm.engine.speculative.stats.proposed > 0   # it did draft (at 2 drafting may pay here)


def test_a_buffer_that_starts_past_a_gap_marks_it_at_once(fake_runner) -> None:
    """When buffering starts (nothing buffered), a request whose first row lies past its held
    positions joins `gapped` then and its rows are not kept (it was learnt at the next flush,
    after every row to it had been buffered); a request that continues its context is kept, and
    with every running request gapped the proposer declines the features at once."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    observe(proposer, "a", 0, 4)
    observe(proposer, "b", 0, 4)
    proposer.pauses.pause(2, 100)
    proposer._last_batch = 2
    proposer.observe_step(["a", "b"], [9, 4], [1, 1], [0, 1], torch.ones(2, 2))   # a: 4-8 were declined
    assert proposer.feed.gapped == {"a"} and proposer.pending.pairs == 1   # only b's row buffered
    proposer.observe_step(["a", "b"], [10, 9], [1, 1], [0, 1], torch.ones(2, 2))  # b's gap: rows already buffered
    assert proposer.feed.gapped == {"a"} and proposer.pending.pairs == 2   # ... found at the flush, not here
    proposer._flush()
    assert proposer.feed.gapped == {"a", "b"} and proposer.runner.num_positions("b") == 5
    assert not proposer.wants_features()   # every running request gapped: declined

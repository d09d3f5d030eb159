# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`OpeningPhase`: rounds of a batch whose requests are all in their replies' first tokens are
judged and paused apart from the rest (the body), never declining features; a body loss still
pauses and declines everything."""

from __future__ import annotations

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_costs import PROBE_OVERHEAD_STEPS
from deepinfer_dspark.opening_phase import OPENING_TOKENS, OpeningPhase
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# One request: a round of K drafts runs at half a plain step's rate, so it wins when ~1 draft is
# accepted (confidence 0.95: gain 2.26; 0.3: gain 0.71).
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 150.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def test_the_phase_follows_the_oldest_request() -> None:
    phase = OpeningPhase(probe_every=4, max_probe_every=16)
    assert phase.begin([0, 5, 20]) and phase.rounds_left == OPENING_TOKENS - 21   # rounds after this one
    assert not phase.begin([3, OPENING_TOKENS]) and phase.rounds_left == 0 and not phase.skip(1)
    assert not phase.begin([])                                      # no requests: the body
    assert phase.begin([OPENING_TOKENS - 4]) and phase.rounds_left == 3
    phase.ledger.lost(1)                                            # a pause of probe_every = 4 there
    assert phase.paused(1) == 3 and phase.paused(8) == 0            # capped by the opening left
    assert phase.skip(1) and phase.ledger.left(1) == 3              # this round, on the opening's ledger
    phase.idle(1, 2)                                                # two plain steps, both in the opening
    assert phase.rounds_left == 1 and phase.paused(1) == 1 and phase.ledger.left(1) == 1
    phase.idle(1, 5)                                                # one more opening round, then the body
    assert phase.rounds_left == 0 and phase.ledger.left(1) == 0 and phase.paused(1) == 0
    phase.begin([0])
    phase.idle(0, 3)                                                # paused elsewhere: not counted here
    phase.advanced(4)                                               # accepted drafts move it on too
    assert phase.rounds_left == OPENING_TOKENS - 8 and phase.ledger.left(1) == 0
    assert OpeningPhase(4, 16).worth_skipping == pytest.approx(OPENING_TOKENS / (OPENING_TOKENS + PROBE_OVERHEAD_STEPS))
    off = OpeningPhase(4, 16, tokens=0)
    assert not off.begin([0]) and off.worth_skipping == 1.0 and off.paused(1) == 0
    with pytest.raises(ValueError, match="opening_tokens: must be >= 0"):
        OpeningPhase(4, 16, tokens=-1)


class Runner:
    """Drafts K copies of token 7 with the confidence `levels[phase]`: low in openings, high after."""

    def __init__(self, opening: float, body: float) -> None:
        import types
        self.drafter = types.SimpleNamespace(config=types.SimpleNamespace(block_size=K, target_layer_ids=[1]),
                                             dtype=torch.float32)
        self.levels, self.held, self.step = (opening, body), {}, 0

    def num_positions(self, request_id: str) -> int:
        return self.held.get(request_id, 0)

    def observe_rows(self, items, features) -> None:
        for request_id, positions in items:
            self.held[request_id] = positions[-1] + 1

    def observe_batch(self, items) -> None:
        self.observe_rows([(r, p) for r, p, _ in items], None)

    def level(self) -> float:
        return self.levels[self.step >= OPENING_TOKENS]

    def draft(self, requests, k: int) -> list:
        from deepinfer_dspark.draft_runner import DraftOutput
        return [DraftOutput(torch.full((k,), 7), None, torch.full((k,), self.level()), None) for _ in requests]

    def remove(self, request_id: str) -> None:
        self.held.pop(request_id, None)


def reply(proposer: DSparkProposer, runner: Runner, rid: str, length: int) -> list[tuple[int, bool, bool]]:
    """One request of `length` reply tokens, as the engine runs it (a plain step adds a token, a
    drafted round 1 + the drafts the target accepts: those whose survival is at least 1/2); per
    round: (reply position, drafted, features captured)."""
    prompt, step, rows = 10, 0, []
    if proposer.wants_features():
        proposer.observe_step([rid], [0], [prompt], [0], torch.zeros(prompt, 1))
    while step < length:
        runner.step = step
        tokens = [1] * (prompt + step + 1)
        if proposer.idle_rounds() > 0:
            proposer.idle_round(1)
            drafts = []
        else:
            drafts = proposer.propose([DraftRequest(rid, tokens, min(K, length - step - 1), 0.0, 0, 1.0, 0.0, 0,
                                                    step)])[0].token_ids
        accepted = sum(1 for i in range(len(drafts)) if runner.level() ** (i + 1) >= 0.5)   # as confident
        emitted = 1 + accepted
        features = True if drafts else proposer.wants_features()
        if drafts:
            proposer.commit(rid, len(tokens) + emitted)
        if features:
            proposer.observe_step([rid], [prompt + step], [emitted], [0], torch.zeros(emitted, 1))
        rows.append((step, bool(drafts), features))
        step += emitted
    proposer.remove(rid)
    return rows


def test_openings_that_lose_pause_alone_and_keep_the_features() -> None:
    """Replies whose first tokens draft at a loss (confidence 0.3) and then at a win (0.95): the
    openings are paused after their first rounds, their features kept, and every reply drafts
    its body from its first body round on. With `opening_tokens=0` (one judgement per reply)
    the openings' losses pause the first reply's body too."""
    runner = Runner(opening=0.3, body=0.95)
    proposer = DSparkProposer(runner, K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    replies = [reply(proposer, runner, f"r{i}", 96) for i in range(6)]
    assert proposer.pauses.gain(1) > 1 and proposer.openings.ledger.gain(1) < 1
    assert proposer.declined_steps == 0 and all(features for rows in replies for _, _, features in rows)
    for rows in replies:
        body = [drafted for step, drafted, _ in rows if step >= OPENING_TOKENS]
        assert body and all(body), rows                           # every body round drafted
    later = [drafted for rows in replies[1:] for step, drafted, _ in rows if step < OPENING_TOKENS]
    assert sum(later) <= len(replies) - 1, later                  # the later openings: a probe at most
    whole = Runner(opening=0.3, body=0.95)
    single = DSparkProposer(whole, K, SPS, decode=DECODE, probe_every=8, max_probe_every=64, opening_tokens=0)
    first = reply(single, whole, "r0", 96)
    assert not all(drafted for step, drafted, _ in first if step >= OPENING_TOKENS), first


def test_a_losing_body_still_pauses_openings_and_declines() -> None:
    """Drafting loses everywhere (confidence 0.3): the body's settled loss declines the features as
    before, and the later replies draft about once each (a probe), openings included; drafting
    every round would be ~24 rounds a reply."""
    runner = Runner(opening=0.3, body=0.3)
    proposer = DSparkProposer(runner, K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    replies = [reply(proposer, runner, f"r{i}", 96) for i in range(14)]
    assert proposer.pauses.gain(1) < 1 and proposer.pauses.rounds(1) >= 8 and proposer.declined_steps > 0
    drafted = [sum(d for _, d, _ in rows) for rows in replies]
    assert sum(drafted[-6:]) <= 6, drafted


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_engine_openings_are_judged_apart_and_lossless(folders, kit, async_scheduling) -> None:
    """A tiny engine whose random drafter loses at 1 request: replies of 64 tokens cross from the
    opening into the body; greedy output is plain decoding's (also with asynchronous scheduling);
    every drafted round was judged by one of the two ledgers or ran lean under a lease (a body
    round at 1 request, `DraftingLease`), and no step declined its features before the body's
    loss settled."""
    from deepinfer_core import SamplingParams

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [900.0, 890.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0]),
            "measure_round_times": False}   # the profiles as given (timed, this CPU's rounds would decide)
    params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(3, seed=5)]
    plain = kit.build(target, async_scheduling=async_scheduling)
    expected = [plain.generate([p], params)[0].outputs[0].token_ids for p in prompts]
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    proposer = llm.engine.speculative.proposer
    got = [llm.generate([p], params)[0].outputs[0].token_ids for p in prompts]
    assert got == expected
    openings, bodies = proposer.openings.ledger.rounds(1), proposer.pauses.rounds(1)
    assert openings >= 1 and bodies >= 1   # each judged once, or lean
    assert openings + bodies + proposer.leased_rounds == proposer.drafted_rounds
    if bodies < 8:   # no settled body loss yet: features kept
        assert proposer.declined_steps == 0


def batch_rounds(proposer: DSparkProposer, runner: Runner, count: int, length: int, accept) -> list[tuple[int, bool]]:
    """`count` requests started together, `length` reply tokens each, as the engine runs them;
    `accept(step, drafts)`: the drafts the target accepts at reply position `step`. Per round:
    (reply position, drafted)."""
    ids, prompt, step, rows = [f"b{i}" for i in range(count)], 10, 0, []
    if proposer.wants_features():
        proposer.observe_step(ids, [0] * count, [prompt] * count, [prompt * i for i in range(count)],
                              torch.zeros(prompt * count, 1))
    while step < length:
        runner.step = step
        tokens = [1] * (prompt + step + 1)
        if proposer.idle_rounds() > 0:
            proposer.idle_round(count)
            drafts = [[] for _ in ids]
        else:
            room = min(K, length - step - 1)
            drafts = [d.token_ids for d in proposer.propose([DraftRequest(r, tokens, room, 0.0, 0, 1.0, 0.0, 0, step)
                                                             for r in ids])]
        emitted = 1 + (accept(step, len(drafts[0])) if drafts[0] else 0)
        for r, d in zip(ids, drafts):
            if d:
                proposer.commit(r, len(tokens) + emitted)
        if drafts[0] or proposer.wants_features():
            proposer.observe_step(ids, [prompt + step] * count, [emitted] * count, [emitted * i for i in range(count)],
                                  torch.zeros(emitted * count, 1))
        rows.append((step, bool(drafts[0])))
        step += emitted
    for r in ids:
        proposer.remove(r)
    return rows


def test_openings_alone_never_rule_a_load_out() -> None:
    """Confident drafts (0.9) of which the target accepts 1 in every opening round and all 4 in
    every body round (session 19's review): the openings' evidence alone would rule 16 requests
    out (`expected_loss`: at most ~1.3 accepted drafts a request) before any body was drafted;
    `expected_loss` now waits for a body round, whose evidence lifts the bound, and the openings'
    misses do not price the body rounds (the ratios are kept per phase), so 16 requests draft
    their bodies from the first body round on. (Had the openings accepted nothing, the mixed
    evidence would still rule the load out after that first body round.)"""
    runner = Runner(opening=0.9, body=0.9)
    proposer = DSparkProposer(runner, K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    rows = batch_rounds(proposer, runner, 16, 96, lambda step, drafts: 1 if step < OPENING_TOKENS else drafts)
    assert proposer.acceptance.ratio(16, opening=True) < 0.5 < proposer.acceptance.ratio(16)
    assert not proposer.expected_loss(16) and proposer.declined_steps == 0
    body = [drafted for step, drafted in rows if step >= OPENING_TOKENS]
    assert body and all(body), rows
    early = DSparkProposer(Runner(opening=0.9, body=0.9), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    batch_rounds(early, early.runner, 16, OPENING_TOKENS, lambda step, drafts: 1)   # openings only
    upper = early.acceptance.full.upper()
    assert early.acceptance.full.most >= 16 and early.costs.loses(16, upper), upper   # they alone would rule out
    assert not early.expected_loss(16) and early.acceptance.body_requests == 0


def test_a_partial_opening_round_pauses_the_openings_only() -> None:
    """Two requests in their openings, one with a gap in its context: the round cannot judge the
    load, and its loss pauses the openings, not the bodies."""
    runner = Runner(opening=0.3, body=0.3)
    proposer = DSparkProposer(runner, K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)
    proposer.observe_step(["a"], [0], [10], [0], torch.zeros(10, 1))   # "g" was never shown: a gap
    tokens = [1] * 11
    drafts = proposer.propose([DraftRequest(r, tokens, K, 0.0, 0, 1.0, 0.0, 0, 0) for r in ("a", "g")])
    assert drafts[0].token_ids and not drafts[1].token_ids
    assert proposer.pauses.left(2) == 0 and proposer.openings.ledger.left(2) > 0


def test_accepted_drafts_move_the_opening_by_the_most_any_request_moved() -> None:
    phase = OpeningPhase(probe_every=4, max_probe_every=16)
    phase.begin([0] * 8)
    for _ in range(8):                                              # eight requests accepted 2 drafts each
        phase.advanced(2)
    assert phase.rounds_left == OPENING_TOKENS - 1 - 2
    phase.advanced(3)                                               # one of them accepted 3
    assert phase.rounds_left == OPENING_TOKENS - 1 - 3


def test_a_paused_opening_does_not_keep_the_features_of_a_load_ruled_out() -> None:
    """Two requests in their openings, the openings paused at their bucket, and a load where
    drafting cannot pay (the decode profile rules out 2 requests): the pause of the openings
    used to hold every judgement, so the features were captured through the whole opening
    (session 20: the H200's 8-request batches captured their first 17 steps where
    `expected_loss` held). The load is now judged when the body's pause is over, also inside a
    paused opening: its features are declined."""
    runner = Runner(opening=0.95, body=0.95)
    decode = SPSProfile([1, 2, 64], [1000.0, 1e6, 1e6])   # from 2 requests plain decoding always wins
    proposer = DSparkProposer(runner, K, SPS, decode=decode, probe_every=8, max_probe_every=64)
    assert not proposer.retired and proposer.cannot_pay(2) and not proposer.cannot_pay(1)
    proposer.observe_step(["a", "b"], [0, 0], [10, 10], [0, 10], torch.zeros(20, 1))
    proposer.openings.begin([0, 0])
    proposer.openings.ledger.pause(2, 40)   # an earlier opening at 2 requests lost
    proposer._last_batch = 2
    assert proposer.openings.paused(2) > 0 and proposer.pauses.left(2) == 0
    assert proposer.idle_rounds() > 0
    assert not proposer.wants_features() and proposer.declined_steps == 1
    assert proposer.dormant_rounds(2) > 0   # and the engine may skip asking for a while
    drafts = proposer.propose([DraftRequest(r, [1] * 11, K, 0.0, 0, 1.0, 0.0, 0, 0) for r in ("a", "b")])
    assert not any(d.token_ids for d in drafts)


def test_openings_are_judged_against_one_where_the_body_settled_a_loss() -> None:
    """`worth_skipping` prices the transition from a paused opening into a drafting body. Where
    the body's settled average loses (or a smaller bucket's loss paused it, `_inferred`), the body
    will not draft after the opening: an opening round that loses a little (gain 0.97, above
    `worth_skipping`'s 0.94) pauses the openings. Before the body has settled, it drafts on."""
    from deepinfer_dspark.pause_policy import SETTLED_ROUNDS

    def opening_round(proposer: DSparkProposer) -> int:
        proposer._plan_pause(0.94, [K], 1, opening=True)   # tau 1.94 at half a plain step's rate: 0.97
        return proposer.openings.ledger.left(1)

    def fresh() -> DSparkProposer:
        return DSparkProposer(Runner(0.3, 0.3), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64)

    assert OpeningPhase(8, 64).worth_skipping < 0.97
    young = fresh()
    for _ in range(SETTLED_ROUNDS - 1):
        young.pauses.judge(1, 0.8)
    assert opening_round(young) == 0
    settled = fresh()
    for _ in range(SETTLED_ROUNDS):
        settled.pauses.judge(1, 0.8)
    assert opening_round(settled) > 0
    winning = fresh()
    for _ in range(SETTLED_ROUNDS):
        winning.pauses.judge(1, 1.2)
    assert opening_round(winning) == 0
    inferred = fresh()
    inferred._inferred.add(1)
    assert opening_round(inferred) > 0

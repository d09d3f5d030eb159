# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`LookupAssist` (`prompt_lookup_min`): where confidence-scheduled DSpark drafts nothing (paused,
dormant, or a request whose context has a gap), a request whose suffix occurred earlier gets
prompt-lookup drafts when such a round pays; greedy output stays that of plain decoding.
(The tiny target and drafter: `folders` and `kit` in conftest.py.)
"""

from __future__ import annotations

import pytest
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.lookup_assist import PRIOR_RATE, SYNC_STEPS, LookupAssist, MatchClasses, match
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
# Drafting by DSpark can never pay (a round at 1 request costs 100 plain steps): it is ruled out,
# dormant, features declined. A lookup round at 1 request costs 1 + 2 SYNC_STEPS plain steps.
SLOW_SPS = SPSProfile([1, 5, 64, 320], [10.0, 10.0, 9.0, 8.0])
DECODE = SPSProfile([1, 64], [1000.0, 1000.0])


def ask(request_id: str, tokens: list[int], room: int = K) -> DraftRequest:
    return DraftRequest(request_id, tokens, room, 0.0, 0, 1.0, 0.0, 0, 10)


def assisted(fake_runner, check_every: int = 2) -> LookupAssist:
    return LookupAssist(DSparkProposer(fake_runner(K, 0.9), K, SLOW_SPS, decode=DECODE), 2, check_every)


def test_a_repeating_request_ends_the_pause_and_gets_what_followed(fake_runner) -> None:
    lookup = assisted(fake_runner)
    live = [1, 2, 3]                      # the prompt
    lookup.track("r0", live)
    assert lookup.propose([ask("r0", list(live))])[0].token_ids == []   # DSpark: ruled out at 1
    assert lookup.inner.dormant_rounds(1) > 2                 # ... and dormant for a while
    assert lookup.dormant_rounds(1) == 2  # capped at check_every: the engine asks again soon
    lookup.dormant_passed(1, 2)
    live += [9, 8, 7, 9]                  # decoding: no suffix of 2 seen before
    assert lookup.idle_rounds() > 0 and not lookup._matched
    live += [8, 5]                        # "8 5" not seen before: still nothing
    assert lookup.idle_rounds() > 0
    live += [9, 8, -1]                    # "9 8" last occurred at 6-7, followed by 5, 9, 8 (and
    assert lookup.idle_rounds() == 0      # then 5 again: period 3); the placeholder (-1) is not read
    drafts = lookup.propose([ask("r0", live[:-1])])
    assert drafts[0].token_ids == [5, 9, 8, 5] and drafts[0].probs is None
    assert lookup.inner.drafted_rounds == 0 and lookup.lookup_rounds == 1 and lookup.lookup_drafts == 4
    lookup.commit("r0", len(live) - 1 + 1 + 3)   # 3 of 4 accepted, plus the bonus token
    assert lookup.lookup_accepted == 3
    assert lookup.classes.rate(0) > PRIOR_RATE == lookup.classes.rate(1)   # "9 8": a match of 2 < 2n
    live[-1:] = [5, 9, 4]                 # searched again at once after its round: "9 4" is new
    assert lookup.idle_rounds() > 0 and not lookup._matched
    lookup.remove("r0")
    assert not lookup._views and not lookup._open


def test_stretches_are_capped_and_cut_when_a_lookup_is_due(fake_runner) -> None:
    lookup = assisted(fake_runner, check_every=3)
    live = [4, 4, 5]
    lookup.track("a", live)
    lookup.propose([ask("a", list(live))])
    declared = lookup.inner.dormant_rounds(1)
    assert declared > 3                   # DSpark alone: a long dormant stretch at a ruled-out load
    assert lookup.dormant_rounds(1) == 3  # capped: the engine asks again after 3 steps
    lookup.dormant_passed(1, 3)
    live += [6, 4, 5]                     # "4 5" repeats
    assert lookup.dormant_rounds(1) == 0 and lookup.quiet_rounds(1) == 0


def test_nothing_is_searched_where_a_lookup_round_cannot_pay(fake_runner) -> None:
    lookup = assisted(fake_runner)
    # Full acceptance at 1 request: (1 + 4) tokens for 1 + 2 SYNC_STEPS steps; at 64: 68 / 64.
    assert lookup.pays(1, [(K, 1.0)]) and not lookup.pays(64, [(K, 1.0)])
    assert lookup.pays(1, [(K, 0.5)]) == ((1 + 0.5 * K) > 1 + 2 * SYNC_STEPS)
    assert not lookup.pays(1, [(K, 0.2)]) and not lookup.pays(2, [(K, 0.5)])
    live = [1, 2, 1, 2, 1, 2]
    lookup.track("r", live)
    live += [1, 2, 1]
    assert not lookup._due(64) and not lookup._matched   # not even searched
    assert lookup._due(1) and "r" in lookup._matched
    lookup.propose([ask(f"x{i}", [1, 2, 3]) for i in range(64)])   # DSpark rules 64 requests out
    declared = lookup.inner.dormant_rounds(64)
    assert declared > lookup.check_every and lookup.dormant_rounds(64) == declared   # not capped there


def test_a_matched_request_not_asked_is_dropped_until_it_grows(fake_runner) -> None:
    lookup = assisted(fake_runner)
    live = [3, 4, 3]
    lookup.track("x", live)
    lookup.propose([ask("x", list(live))])   # DSpark: ruled out at 1 request, paused
    live += [4, 3, 4]
    assert lookup.idle_rounds() == 0 and "x" in lookup._matched
    lookup.idle_round(1)                    # (what the engine's propose does for an empty batch)
    assert lookup.propose([]) == []         # the engine asked nobody (e.g. not spec-eligible)
    assert not lookup._matched and lookup.idle_rounds() > 0   # no wasted round after round


def test_bad_settings_name_the_field(fake_runner, folders) -> None:
    with pytest.raises(ValueError, match="prompt_lookup_min"):
        LookupAssist(DSparkProposer(fake_runner(K, 0.9), K, SLOW_SPS, decode=DECODE), 0)
    from deepinfer_dspark.factories import _dspark_settings

    _, drafter = folders
    base = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K}
    with pytest.raises(ValueError, match="speculative_config.prompt_lookup_min: only used with scheduling"):
        _dspark_settings({**base, "prompt_lookup_min": 2})
    with pytest.raises(ValueError, match="speculative_config.prompt_lookup_min: must be an int >= 0"):
        _dspark_settings({**base, "scheduling": "confidence", "sps_profile": SLOW_SPS, "prompt_lookup_min": -1})


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_the_engine_drafts_by_lookup_where_dspark_is_dormant_and_stays_lossless(folders, kit, benchmark_script,
                                                                             async_scheduling: bool) -> None:
    target, drafter = folders
    # A round of 4 drafts all accepted would beat plain decoding at 1 request (5 x 300 > 1000
    # tokens/s), so DSpark does not retire; the random drafter loses, so it pauses (backoff).
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [300.0, 290.0]), "decode_profile": DECODE, "prompt_lookup_min": 2}
    batch = kit.prompts(1, seed=3) + kit.prompts(1, seed=4)

    def greedy(llm) -> list[list[int]]:   # one request at a time (a lookup round pays there), 100 tokens
        params = SamplingParams(temperature=0, max_tokens=100, ignore_eos=True)
        return [llm.generate([{"prompt_token_ids": p}], params)[0].outputs[0].token_ids for p in batch]

    expected = greedy(kit.build(target))
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    proposer = llm.engine.speculative.proposer
    assert isinstance(proposer, LookupAssist)
    proposer.check_every = 2
    assert greedy(llm) == expected
    assert proposer.lookup_rounds > 0 and proposer.lookup_accepted > 0
    assert proposer.inner.skipped_rounds > 0                # ... while DSpark paused
    state = benchmark_script("engine_probes").proposer_state(llm, 1)   # bench_dspark's summary line
    assert f"lookup {proposer.lookup_rounds} rounds, {proposer.lookup_accepted} of" in state
    sampled = llm.generate([{"prompt_token_ids": p} for p in batch],
                           SamplingParams(temperature=0.8, max_tokens=60, ignore_eos=True, seed=5))
    assert all(o.error is None and len(o.outputs[0].token_ids) == 60 for o in sampled)   # one-hot q verified
    retired = kit.build(target, {**spec, "sps_profile": SLOW_SPS})   # DSpark never pays: no lookup either
    assert retired.engine.speculative is None
    plain = kit.build(target, {**spec, "prompt_lookup_min": 0})
    assert not isinstance(plain.engine.speculative.proposer, LookupAssist)
    assert greedy(plain) == expected


def test_matches_are_measured_and_priced_by_their_length() -> None:
    """A loop matches over its whole period (extended backwards, at most `LONGEST_MATCH`); a
    short match in fresh text does not. Each length class learns its own accepted share."""
    loop = [7, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3]
    assert match(loop, 2, 3) == ([4, 1, 2], 7)           # "2 3" at 6-7, agreeing back to index 1
    assert match(loop, 2, 6) == ([4, 1, 2, 3, 4, 1], 7)  # continued with period 4 past the end
    assert match([5, 6, 9, 5, 6], 2, 4) == ([9, 5, 6, 9], 2)
    assert match([8, 3, 3, 3, 3], 2, 3) == ([3, 3, 3], 3)   # one word over and over: period 1
    assert match([1, 2, 3], 2, 4) == ([], 0)
    classes = MatchClasses(2)
    assert [classes.of(m) for m in (2, 3, 4, 7, 8, 64)] == [0, 0, 1, 1, 2, 2]
    classes.add(2, 4, 4)
    classes.add(0, 4, 0)
    assert classes.rate(2) > PRIOR_RATE > classes.rate(0) and classes.rate(1) == PRIOR_RATE


def test_a_long_queue_of_waiting_requests_is_not_searched(fake_runner) -> None:
    """Only the oldest `batch` decoding requests are searched (first come, first served: the
    running ones); waiting ones, whose tokens are their prompt, are never read past them."""
    lookup = assisted(fake_runner, check_every=1)
    running = [3, 4, 3]
    lookup.track("run", running)

    class Untouchable(list):
        armed = False

        def __len__(self):
            if self.armed:
                raise AssertionError("a waiting request was read")
            return super().__len__()

    waiting = [Untouchable([5, 5, 5]) for _ in range(100)]
    for i, view in enumerate(waiting):
        lookup.track(f"wait{i}", view)
        view.armed = True
    running += [4, 3, 4]
    assert lookup._due(1) and set(lookup._matched) == {"run"}

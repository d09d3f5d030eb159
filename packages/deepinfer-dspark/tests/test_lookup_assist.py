# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`LookupAssist` (`prompt_lookup_min`): where confidence-scheduled DSpark drafts nothing (paused,
dormant, or a request whose context has a gap), a request whose suffix occurred earlier gets
prompt-lookup drafts when such a round pays; greedy output stays that of plain decoding.
(The tiny target and drafter: `folders` and `kit` in conftest.py.)
"""

from __future__ import annotations

import math

import pytest
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.lookup_assist import PRIOR_RATES, LookupAssist, MatchClasses
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.round_costs import H200_ROUND_COSTS as COSTS
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.token_bytes import WINDOW, TokenBytes, match

K = 4
# Drafting by DSpark can never pay (a round at 1 request costs 100 plain steps): it is ruled out,
# dormant, features declined. A lone lookup round at 1 request costs 1 + COSTS.priced(1, False) plain steps.
SLOW_SPS = SPSProfile([1, 5, 64, 320], [10.0, 10.0, 9.0, 8.0])
DECODE = SPSProfile([1, 64], [1000.0, 1000.0])


def ask(request_id: str, tokens: list[int], room: int = K) -> DraftRequest:
    return DraftRequest(request_id, tokens, room, 0.0, 0, 1.0, 0.0, 0, 10)


def assisted(fake_runner, check_every: int = 2) -> LookupAssist:
    """A wrapper whose match classes all start at 0.5 (so a short match of 2 tokens pays here)."""
    lookup = LookupAssist(DSparkProposer(fake_runner(K, 0.9), K, SLOW_SPS, decode=DECODE), 2, check_every,
                          search_budget=math.inf)   # (every `check_every` tokens at any batch)
    lookup.classes.sums = [[0.5 * 4, 4.0] for _ in range(3)]
    return lookup


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
    assert lookup.classes.rate(0) > 0.5 == lookup.classes.rate(1)   # "9 8": a match of 2 < 2n
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


def test_above_the_search_budget_each_request_is_searched_less_often(fake_runner) -> None:
    """`search_budget` (session 54): each search costs the GPU's host ~0.1 ms, so at `batch` requests
    each is searched every ceil(batch / search_budget) tokens (and a stretch runs that long)."""
    from deepinfer_dspark.lookup_assist import SEARCH_BUDGET

    lookup = LookupAssist(DSparkProposer(fake_runner(K, 0.9), K, SLOW_SPS, decode=DECODE), 2, 1, search_budget=1)
    lookup.classes.sums = [[0.5 * 4, 4.0] for _ in range(3)]
    assert [lookup._every(b) for b in (1, 2, 3)] == [1, 2, 3]   # ceil(batch / 1), at least check_every
    assert LookupAssist(lookup.inner, 2, 4, search_budget=2)._every(5) == 4   # check_every is the least
    assert [LookupAssist(lookup.inner, 2, 1, search_budget=2)._every(b) for b in (1, 4, 5)] == [1, 2, 3]   # ceil
    assert SEARCH_BUDGET == 1.0 and [LookupAssist(lookup.inner, 2)._every(b) for b in (1, 2, 4)] == [1, 2, 4]
    lives = {"r0": [1, 2, 3, 1], "r1": [10, 11, 12]}
    for rid, live in lives.items():
        lookup.track(rid, live)
    lookup.propose([ask(rid, list(live)) for rid, live in lives.items()])   # DSpark: ruled out
    assert lookup._could_pay(2) and lookup.inner.dormant_rounds(2) > 2
    assert lookup.dormant_rounds(2) == 2  # capped at ceil(2 / 1): the engine asks again after 2 steps
    lookup.dormant_passed(2, 2)
    lives["r0"].append(2)                 # "1 2" repeats after one decoded token
    assert not lookup._due(2) and "r0" not in lookup._matched   # at 2 requests: searched every 2 tokens
    lookup._due(1)
    assert "r0" in lookup._matched        # at 1 request: at every token
    lookup._matched.clear()
    lives["r0"].append(3)                 # "2 3" repeats, but grown one token since its last search
    assert not lookup._due(2) and "r0" not in lookup._matched
    lives["r0"].append(1)                 # "3 1" repeats, grown 2 tokens: searched at 2 requests too
    lookup._due(2)
    assert "r0" in lookup._matched
    for bad in (0, -1.0, math.nan, 1e-320):   # (1e-320: its inverse overflows)
        with pytest.raises(ValueError, match="search_budget"):
            LookupAssist(lookup.inner, 2, search_budget=bad)


def test_nothing_is_searched_where_a_lookup_round_cannot_pay(fake_runner) -> None:
    lookup = assisted(fake_runner)
    # Full acceptance at 1 request: (1 + 4) tokens for 1 + COSTS.priced(1, False) steps; at 64: 68 / 64.
    assert lookup.pays(1, [(K, 1.0)]) and not lookup.pays(64, [(K, 1.0)])
    assert lookup.pays(1, [(K, 0.5)]) == ((1 + 0.5 * K) > 1 + COSTS.priced(1, False))
    assert not lookup.pays(1, [(K, 0.15)]) and not lookup.pays(2, [(K, 0.3)])
    # A round that extends a run of rounds does not wait for a plain step in flight: cheaper.
    share = (COSTS.priced(1, True) + COSTS.priced(1, False)) / 2 / K   # pays in a run, not alone
    assert lookup.pays(1, [(K, share)], in_run=True) and not lookup.pays(1, [(K, share)])
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
    confidence = {**base, "scheduling": "confidence", "sps_profile": SLOW_SPS}
    for bad in (-1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="speculative_config.prompt_lookup_min: must be an int >= 0"):
            _dspark_settings({**confidence, "prompt_lookup_min": bad})
    with pytest.raises(ValueError, match="speculative_config.prompt_lookup_min: must be below 1024"):
        _dspark_settings({**confidence, "prompt_lookup_min": 10**12})
    assert _dspark_settings({**confidence, "prompt_lookup_min": 4})["prompt_lookup_min"] == 4
    from deepinfer_dspark.factories import LOOKUP_DEFAULT   # on by default with confidence scheduling only
    assert LOOKUP_DEFAULT == 2 and _dspark_settings(confidence)["prompt_lookup_min"] == LOOKUP_DEFAULT
    assert _dspark_settings({**confidence, "prompt_lookup_min": 0})["prompt_lookup_min"] == 0
    assert _dspark_settings(base)["prompt_lookup_min"] == 0
    timed = {**confidence, "decode_profile": DECODE, "measure_step_times": True}   # lookup rounds would be timed
    assert _dspark_settings(timed)["prompt_lookup_min"] == 0                        # as plain steps: off, and
    with pytest.raises(ValueError, match="speculative_config.prompt_lookup_min: cannot be used with measure_step"):
        _dspark_settings({**timed, "prompt_lookup_min": 2})                         # refused when asked for


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
    assert f"so far lookup {proposer.lookup_rounds} rounds, {proposer.lookup_accepted} of" in state
    assert f"keep {proposer.inner._keep_cost(1):.3f}; " in state and " us a pair" in state
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
    assert classes.rate(2) > PRIOR_RATES[2] and classes.rate(0) < PRIOR_RATES[0] and classes.rate(1) == PRIOR_RATES[1]


@pytest.mark.parametrize("seed", range(4))
def test_token_bytes_match_the_window_searched_from_scratch(seed: int) -> None:
    """A request's bytes, appended as it grows (by 1 to 40 tokens, with jumps past the window and
    shrinks that start over), find what a search of its last `WINDOW` tokens converted afresh
    finds, past the point where their front is dropped."""
    import random

    rng = random.Random(seed)
    ids: list[int] = []
    ctx = TokenBytes()
    while len(ids) < 3 * WINDOW:
        if rng.random() < 0.3 and len(ids) > 16:   # a loop: repeat a recent stretch
            back = rng.randint(1, 12)
            ids += [ids[-back + i % back] for i in range(rng.randint(1, 30))]
        else:
            ids += [rng.randrange(50) for _ in range(rng.randint(1, 40))]
        known = len(ids) - (rng.random() < 0.05) * rng.randint(1, 10)   # rarely: fewer than covered
        if rng.random() < 0.02:
            known = len(ids)
            ids += [rng.randrange(50) for _ in range(WINDOW + 5)]   # a jump past the window
            known = len(ids)
        ctx.sync(ids, known)
        window = ids[max(0, known - WINDOW):known]
        for n in (1, 2, 4):
            assert ctx.match(n, 5) == match(window, n, 5), (len(ids), n)
    assert ctx.count - ctx.base <= 2 * WINDOW   # the front was dropped


@pytest.mark.parametrize("seed", range(4))
def test_repeats_is_an_exact_filter_for_match(seed: int) -> None:
    """`TokenBytes.repeats` (the per-step filter) is True exactly where the suffix occurred
    earlier anywhere in the context (a search from scratch over all of it, after a start-over of
    the set, over the span it covers), so False always means `match` finds nothing, and
    `match_view` (read from what `repeats` indexed, over a live list) is `match`; requests
    growing by 1-40 tokens, with loops, a change of n, and past 3 `WINDOW` (the set rebuilt)."""
    import random

    from deepinfer_dspark.ngram import latest_occurrence

    rng = random.Random(seed)
    ids: list[int] = []
    ctx, n, hits = TokenBytes(), 2, 0
    while len(ids) < 4 * WINDOW:
        if rng.random() < 0.3 and len(ids) > 16:
            back = rng.randint(1, 12)
            ids += [ids[-back + i % back] for i in range(rng.randint(1, 30))]
        else:
            ids += [rng.randrange(60) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.01:
            n = {2: 3, 3: 1, 1: 2}[n]   # (1-grams too: `repeats` zips n shifted slices, session 74)
        live = ids + [-1] * rng.randint(0, 2)   # (a live list: the in-flight step's placeholders past the known)
        repeats = ctx.repeats(live, len(ids), n)
        assert repeats == (latest_occurrence(ids[ctx._seen_from:], n) >= 0), (len(ids), n)
        viewed = ctx.match_view(live, len(ids), n, 5)   # session 74: read from the n-grams just indexed
        ctx.sync(ids, len(ids))
        found, _ = ctx.match(n, 5)
        assert not found or repeats, (len(ids), n)   # a match is never filtered out
        assert (found, _) == match(ids[-WINDOW:], n, 5) == viewed
        hits += bool(found)
    assert hits > 50 and ctx._seen_from > 0   # loops were found; the set started over past 3 WINDOW


def test_repeats_starts_over_when_n_changes_or_the_view_shrinks() -> None:
    """A start-over that adds no n-gram (the view holds n tokens or fewer) still starts from the
    window's start: the next call adds every n-gram before the suffix (session 34's review)."""
    a, b = list(range(100, 110)), list(range(200, 210))
    view, ctx = a + b + a, TokenBytes()       # the last 10 occurred at the start only
    ctx.repeats(view[:10], 10, 2)
    ctx.repeats(view[:10], 10, 10)            # n changes at 10 tokens: nothing to add yet
    assert ctx.repeats(view, 30, 10)
    ctx.sync(view, 30)
    assert ctx.match(10, 4)[0] == b[:4]
    grown, ctx = [1, 2] + list(range(50, 60)) + [1, 2], TokenBytes()
    ctx.repeats(grown[:12], 12, 2)
    ctx.repeats(grown[:2], 2, 2)              # shrinks to n tokens, then grows again
    assert ctx.repeats(grown, 14, 2)


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


def test_a_class_priced_out_drifts_back_and_stale_drafts_are_not_credited(fake_runner) -> None:
    """A review helper's cases: one rejected round priced a loop's class out for good (it now
    drifts back to the prior over engine rounds), and lookup drafts never verified (the request
    was preempted, or its drafts trimmed) were credited at the next commit."""
    classes = MatchClasses(2)
    classes.add(2, 4, 0)
    low = classes.rate(2)
    classes.age(64)
    assert low < classes.rate(2) < PRIOR_RATES[2]
    classes.age(10_000)
    assert classes.rate(2) == pytest.approx(PRIOR_RATES[2])
    classes.add(1, 4, 4)
    high = classes.rate(1)
    classes.age(10_000)
    assert classes.rate(1) == high > PRIOR_RATES[1]          # evidence above the prior is kept
    lookup = assisted(fake_runner, check_every=1)
    live = [1, 2, 3]
    lookup.track("r", live)
    lookup.propose([ask("r", list(live))])            # DSpark: ruled out at 1, paused
    live += [9, 9, 9]
    assert lookup.idle_rounds() == 0
    assert lookup.propose([ask("r", list(live))])[0].token_ids == [9] * K
    live += [9]                                        # (its round never verified: preempted)
    lookup.propose([ask("r", list(live))])            # ... and asked again: the entry is dropped
    assert "r" in lookup._open                         # (a fresh one, from this round)
    lookup.commit("r", len(live) + 1 + K + 3)          # more than this round could emit: not credited
    assert lookup.lookup_accepted == 0


def test_the_wrapper_passes_the_engines_counts_and_writes_to_dspark(fake_runner) -> None:
    import copy

    lookup = assisted(fake_runner)
    seen = []
    lookup.inner.idle_round = lambda n: seen.append(n)   # (set on DSpark: the wrapper has no such attribute)
    assert "idle_round" not in lookup.__dict__ and lookup.__dict__["inner"].idle_round is not None
    live = [4, 5, 4, 5, 4, 5, 4]
    lookup.track("a", live)
    lookup.dormant_rounds(2)                            # the engine: 2 requests running
    lookup._now.override = True
    lookup.propose([ask("a", list(live))])             # one of them asked (the other not eligible)
    assert seen == [2]                                 # DSpark's idle round at the requests running
    lookup.running(3)                                   # the engine: 3 running, fewer asked next
    assert lookup._now.running == 3 and lookup.inner._running == 3
    lookup.propose([ask("a", list(live))])
    assert lookup.inner.batch == 3 and lookup.inner._running == 0   # DSpark judged the round at 3
    lookup.defer_context = False                        # a DSpark setting reaches DSpark
    assert lookup.inner.defer_context is False and "defer_context" not in lookup.__dict__
    lookup.check_every = 3                              # the wrapper's own stays here
    assert lookup.check_every == 3 and lookup.__dict__["check_every"] == 3
    twin = copy.copy(lookup)                            # no recursion through `inner`
    assert twin.inner is lookup.inner
    bare = LookupAssist.__new__(LookupAssist)
    assert not hasattr(bare, "anything")


def test_requests_dspark_leaves_empty_get_lookup_drafts_when_it_drafts_others(fake_runner) -> None:
    """Not paused, DSpark drafts one request and not another (a gap in its context): the other,
    repeating itself, gets lookup drafts in the same round, at no extra sync."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPSProfile([1, 5, 64, 320], [500.0] * 4),
                              decode=SPSProfile([1, 64], [1000.0, 1000.0]))
    lookup = LookupAssist(proposer, 2, check_every=1, search_budget=math.inf)
    a, b = [1, 2, 3, 4], [7, 8, 7, 8, 7]
    lookup.track("a", a)
    lookup.track("b", b)
    b += [8, 7]
    proposer.observe_step(["a"], [0], [3], [0], __import__("torch").ones(3, 2))   # only "a" has a context
    drafts = lookup.propose([ask("a", list(a)), ask("b", list(b))])
    assert drafts[0].token_ids == [7] * K                # DSpark's (the fake drafter's token 7)
    assert drafts[1].token_ids == [8, 7, 8, 7] and lookup.lookup_rounds == 1


def test_the_host_cost_script_times_both_modes(benchmark_script, tmp_path, monkeypatch, capsys) -> None:
    """`benchmarks/lookup_host_cost.py` runs (its four modes, every step paused) and prints a row per batch."""
    import sys

    bench = benchmark_script("lookup_host_cost")
    SPSProfile([1, 8], [1000.0, 900.0]).save(tmp_path / "sps.json")
    SPSProfile([8, 64], [400.0, 300.0]).save(tmp_path / "spec_sps.json")
    monkeypatch.setattr(sys, "argv", ["lookup_host_cost.py", "--profiles", str(tmp_path), "--batch", "1", "2",
                                      "--steps", "40", "--repeats", "1", "--context", "20"])
    bench.main()
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["batch 1", "batch 2"]
    assert all(f"{mode} " in line for line in lines for mode in bench.MODES) and all("adds" in x for x in lines)


def test_the_host_cost_script_grows_real_replies_in_quiet_stretches(benchmark_script, tmp_path, monkeypatch,
                                                                   capsys) -> None:
    """`--replies` grows the requests along recorded replies (gzipped: the next reply once one
    ends) and `--quiet` pauses DSpark with the features kept: the engine's steps are quiet ones."""
    import gzip
    import json
    import sys

    from deepinfer_core.engine.dormant_steps import DormantSteps

    bench = benchmark_script("lookup_host_cost")
    decode, spec = SPSProfile([1, 8], [1000.0, 900.0]), SPSProfile([8, 64], [400.0, 300.0])
    decode.save(tmp_path / "sps.json")
    spec.save(tmp_path / "spec_sps.json")
    replies = [{"prompt": [1, 2, 3], "reply": [4, 5, 4, 5, 4, 5, 4, 5]}, {"prompt": [9], "reply": [7, 7, 7]}]
    path = tmp_path / "replies.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"target": "t", "max_tokens": 8, "replies": replies}).encode()))
    monkeypatch.setattr(sys, "argv", ["lookup_host_cost.py", "--profiles", str(tmp_path), "--batch", "1", "2",
                                      "--steps", "30", "--repeats", "1", "--replies", str(path), "--quiet"])
    bench.main()
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["batch 1", "batch 2"]
    slow = SPSProfile(spec.batch_tokens, [rate / 100.0 for rate in spec.steps_per_s])
    proposer = bench.build("lookup", 1, decode, slow, 2, 1, 0, quiet=True)
    proposer.track("a", [1, 2, 3, 8])
    engine = DormantSteps(proposer)
    assert not engine.step(1) and proposer.idle_rounds() > 0   # (the first step judges the load: paused)
    proposer.idle_round(1)
    assert engine.step(1) and engine.features and proposer._held.quiet   # quiet, held by the wrapper


def test_a_running_count_holds_for_one_round_only(fake_runner) -> None:
    """`running` (some requests not asked) prices the next round only, in DSpark and in the
    wrapper, also when that round was a lookup round (DSpark then hears `idle_round`): a later
    round whose requests are all asked is judged at its own size (session 29's review)."""
    import torch

    lookup = assisted(fake_runner)
    live = [4, 5, 4, 5, 4, 5, 4]
    lookup.track("a", live)
    lookup.running(3)
    lookup._now.override = True                       # a lookup round (DSpark paused)
    lookup.propose([ask("a", list(live))])
    assert lookup.inner._running == 0 and lookup._now.running == 0
    lookup.inner.propose([ask("a", list(live))])      # later: 1 running, asked
    assert lookup.inner.batch == 1
    # A request DSpark leaves empty gets lookup drafts in a later round of 2, after one of 16.
    wide = LookupAssist(DSparkProposer(fake_runner(K, 0.95), K, SPSProfile([1, 5, 64, 320], [500.0] * 4),
                                       decode=DECODE), 2, check_every=1)
    a, b = [1, 2, 3, 4], [7, 8, 7, 8, 7]
    wide.track("a", a)
    wide.track("b", b)
    b += [8, 7]
    wide.inner.observe_step(["a"], [0], [3], [0], torch.ones(3, 2))   # "b" has a gap
    wide.running(16)
    wide.propose([ask("a", list(a)), ask("b", list(b))])
    b += [8, 7]
    assert wide.propose([ask("a", list(a)), ask("b", list(b))])[1].token_ids == [8, 7, 8, 7]


def test_token_bytes_drop_their_front_and_still_match() -> None:
    """A request growing a token at a time past 3 `WINDOW` tokens: its bytes keep at most 2
    `WINDOW` tokens, and every search equals one over its last `WINDOW` tokens."""
    import random

    rng = random.Random(3)
    ids, ctx, drops = [], TokenBytes(), 0
    while len(ids) < 3 * WINDOW + 50:
        ids.append(ids[-7] if len(ids) > 7 and rng.random() < 0.6 else rng.randrange(40))
        base = ctx.base
        ctx.sync(ids, len(ids))
        drops += ctx.base > base
        if len(ids) % 17 == 0 or ctx.base > base:
            assert ctx.match(2, 5) == match(ids[-WINDOW:], 2, 5), len(ids)
    assert drops >= 2 and ctx.count - ctx.base <= 2 * WINDOW


def test_a_requests_last_round_is_credited_at_remove(fake_runner) -> None:
    """The engine commits nothing after a request's last verification (it finished): `remove`
    credits that lookup round's accepted drafts from the request's final tokens."""
    lookup = assisted(fake_runner, check_every=1)
    live = [3, 4, 3, 4, 3]
    lookup.track("x", live)
    live += [4, 3]
    drafts = lookup.propose([ask("x", list(live))])[0].token_ids   # DSpark drafts nothing: lookup does
    assert drafts == [4, 3, 4, 3] and lookup.lookup_drafts == 4
    live += [4, 3, 9]          # two drafts accepted, then the correction token; the request ends
    lookup.remove("x")
    assert lookup.lookup_accepted == 2 and not lookup._open


def test_in_a_batch_tail_drafts_of_a_request_ahead_weigh_less(fake_runner) -> None:
    """No request waiting: a request whose output leads the least advanced one's by more than
    `TAIL_SLACK` tokens counts `TAIL_AHEAD` of its drafts (its gain mostly idles its slot later),
    so a round that pays for it alone in a queue does not pay in a tail; with a request waiting
    it does again."""
    from deepinfer_dspark.lookup_assist import TAIL_AHEAD, TAIL_SLACK

    lookup = assisted(fake_runner)
    lookup.draining(True)   # (the engine says so in `LLM.generate`: no request will be added)
    lookup.classes.sums = [[4.0, 4.0] for _ in range(3)]   # every lookup draft accepted so far
    ahead, behind = [1, 2, 3], [7, 8, 9]
    lookup.track("ahead", ahead)
    lookup.track("behind", behind)
    ahead += [1, 2, 3] * 3 + [1, 2]   # 11 output tokens, its suffix "1 2" seen before
    behind += [5]                     # 1 output token
    assert 11 > 1 + TAIL_SLACK and TAIL_AHEAD < 1.0
    assert lookup._tail(2) == {"ahead": TAIL_AHEAD, "behind": 1.0}
    assert not lookup._due(2) and "ahead" in lookup._matched   # matched, but (2 + 4 * 0.3) / 2 does not pay
    assert lookup.pays(2, [(K, 1.0)])                         # what it would have counted in a queue
    behind += [6, 7, 8, 10, 11, 12]   # 7 output tokens, within the slack: counts fully again
    assert lookup._tail(2)["ahead"] == 1.0 and lookup._due(2)
    lookup.track("waiting", [4, 4, 4])   # a request waits: no tail
    del behind[-3:]
    assert lookup._tail(2) == {} and lookup._due(2)
    lookup.remove("waiting")
    assert lookup._tail(2)["ahead"] == TAIL_AHEAD
    lookup.tail = False   # (LookupAssist(..., tail=False): every request counts fully)
    assert lookup._tail(2) == {}

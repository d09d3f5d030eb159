# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.lookup_loops` (`LookupAssist(prefer_loops=True)`, `LookupPricing.loops`): a
request whose text is caught in a loop gets prompt-lookup drafts also where DSpark drafts; DSpark
drafts for the others (priced at the requests running) or hears an idle round. Greedy output stays
plain decoding's. (The tiny target and drafter: `folders` and `kit` in conftest.py.)"""

from __future__ import annotations

import math

import pytest
import torch
from deepinfer_core import SamplingParams
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.factories import _dspark_settings
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.lookup_pricing import LOOP_CLASS, LOOP_SHARE
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
FAST_SPS = SPSProfile([1, 5, 64, 320], [1000.0, 990.0, 900.0, 500.0])   # DSpark's rounds pay: it drafts
DECODE = SPSProfile([1, 64], [1000.0, 1000.0])
LOOP = [3, 1, 4] * 6          # a period of 3, over 18 tokens: a match of 4n tokens or more
FRESH = [20, 21, 22, 23, 24, 25]


def ask(request_id: str, tokens: list[int]) -> DraftRequest:
    return DraftRequest(request_id, tokens, K, 0.0, 0, 1.0, 0.0, 0, 10)


def seen(lookup: LookupAssist, views: dict[str, list[int]]) -> None:
    """DSpark holds every request's context but its last token (the features of a prefill)."""
    lookup.inner.observe_many([(rid, list(range(len(v) - 1)), torch.zeros(len(v) - 1, 4)) for rid, v in views.items()])


def wrapped(fake_runner, prefer_loops: bool) -> tuple[LookupAssist, list]:
    """DSpark drafting (confident fake drafter, rounds that pay) under the wrapper; `asked`
    records the requests of each DSpark `propose` and each idle round DSpark hears."""
    inner = DSparkProposer(fake_runner(K, 0.95), K, FAST_SPS, decode=DECODE, opening_tokens=0)
    asked = []
    propose, idle = inner.propose, inner.idle_round
    inner.propose = lambda requests: asked.append([r.request_id for r in requests]) or propose(requests)
    inner.idle_round = lambda n: asked.append(("idle", n)) or idle(n)
    return LookupAssist(inner, 2, check_every=1, prefer_loops=prefer_loops, search_budget=math.inf), asked


@pytest.mark.parametrize("prefer_loops", [False, True])
def test_a_looping_request_gets_lookup_drafts_and_dspark_drafts_the_rest(fake_runner, prefer_loops) -> None:
    lookup, asked = wrapped(fake_runner, prefer_loops)
    views = {"loop": list(LOOP), "fresh": list(FRESH)}
    for rid, view in views.items():
        lookup.track(rid, view)
    for view in views.values():
        view += [view[-3]]         # decoding: the loop goes on, the fresh text too
    views["fresh"][-1] = 26
    seen(lookup, views)
    drafts = lookup.propose([ask(rid, list(view)) for rid, view in views.items()])
    if not prefer_loops:
        assert asked == [["loop", "fresh"]] and lookup.lookup_rounds == 0   # DSpark drafts both
        return
    assert asked == [["fresh"]]                       # DSpark drafts the fresh request only ...
    assert drafts[0].token_ids == [1, 4, 3, 1] and drafts[0].probs is None   # ... the loop continues
    assert drafts[1].token_ids == [7] * K             # (the fake drafter's tokens)
    assert lookup.inner.batch == 2 and lookup.lookup_rounds == 1   # DSpark's round priced at 2 requests
    alone = {"loop": views["loop"] + [1]}
    lookup.commit("loop", len(views["loop"]) + 1 + 4)  # every lookup draft accepted
    lookup.commit("fresh", len(views["fresh"]) + 1)
    lookup.remove("fresh")
    drafts = lookup.propose([ask("loop", alone["loop"] + [4, 3, 1, 4])])
    assert asked[-1] == ("idle", 1) and drafts[0].token_ids   # every request loops: DSpark idles


def test_a_loop_class_priced_low_leaves_the_request_to_dspark(fake_runner) -> None:
    lookup, asked = wrapped(fake_runner, True)
    view = list(LOOP) + [3]
    lookup.track("loop", view)
    low = LOOP_SHARE - 0.2
    lookup.classes.sums[LOOP_CLASS] = [low * 100.0, 100.0]
    seen(lookup, {"loop": view})
    lookup.propose([ask("loop", list(view))])
    assert asked == [["loop"]] and lookup.lookup_rounds == 0


def test_the_setting_is_a_bool_that_needs_prompt_lookup(tmp_path) -> None:
    base = {"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": FAST_SPS, "decode_profile": DECODE}
    assert _dspark_settings(base)["lookup_loops"] is False
    assert _dspark_settings({**base, "lookup_loops": True})["lookup_loops"] is True
    for bad in ({"lookup_loops": "yes"}, {"lookup_loops": True, "prompt_lookup_min": 0}):
        with pytest.raises(ValueError, match="speculative_config.lookup_loops"):
            _dspark_settings({**base, **bad})
    with pytest.raises(ValueError, match="speculative_config.lookup_loops: only used with"):
        _dspark_settings({"method": "dspark", "model": str(tmp_path), "num_speculative_tokens": K,
                          "lookup_loops": True})   # fixed-length drafting


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_engine_with_lookup_loops_stays_lossless(folders, kit, asynchronous) -> None:
    """Greedy replies with `lookup_loops` equal plain decoding's; lookup rounds ran while DSpark
    (a profile under which its rounds pay) drafted too."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": FAST_SPS, "decode_profile": DECODE, "lookup_loops": True, "opening_tokens": 0}
    params = SamplingParams(temperature=0, max_tokens=48, ignore_eos=True)
    plain, llm = kit.build(target), kit.build(target, spec, async_scheduling=asynchronous)
    proposer, taken = llm.engine.speculative.proposer, []
    loops = proposer.loops
    proposer.loops = lambda requests, batch: taken.append(loops(requests, batch)) or taken[-1]
    for prompts in (kit.prompts(1, seed=7), kit.prompts(1, seed=8), kit.prompts(2, seed=9)):   # (lookup pays at 1)
        want = [o.outputs[0].token_ids for o in plain.generate([{"prompt_token_ids": p} for p in prompts], params)]
        outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params)
        assert [o.outputs[0].token_ids for o in outs] == want and all(o.error is None for o in outs)
    assert isinstance(proposer, LookupAssist) and proposer.prefer_loops
    assert proposer.lookup_rounds > 0 and proposer.inner.drafted_rounds > 0
    assert any(taken), "no looping request was taken from DSpark"


def test_the_benchmark_pairs_the_unheld_wrapper(benchmark_script, folders, kit, monkeypatch) -> None:
    """`bench_dspark.py`'s `confidence-unheld` is the default engine whose lookup wrapper holds no
    quiet stretch (as until session 43), `confidence-settle64` the default with losses settled on
    64 drafted requests (`settled_requests`); every other variant's engine is left as built."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = benchmark_script("bench_dspark")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": K, "scheduling": "confidence",
            "sps_profile": FAST_SPS, "decode_profile": DECODE}
    default = bench.built("confidence", kit.build(target, spec)).engine.speculative.proposer
    held = default._held
    settle = bench.built("confidence-settle64", kit.build(target, spec)).engine.speculative.proposer
    assert default.inner.settled_requests == 0 and settle.inner.settled_requests == 64
    assert settle._held.report_quiet is not None
    unheld = bench.built("confidence-unheld", kit.build(target, spec)).engine.speculative.proposer._held
    assert held.report_quiet is not None and unheld.report_quiet is None
    unheld.declared(2, 5, quiet=True)
    assert unheld.rounds(2, quiet=True) is None   # nothing held: DSpark is asked every step


def test_dspark_hears_the_requests_running_now_and_a_lone_loop_that_cannot_pay_is_its(fake_runner) -> None:
    """Session 43's review: the count DSpark prices its round at is the engine's (`running`, else
    the requests asked), not a stretch ask's from before a request finished; and a round in which
    every request loops is taken from DSpark only where a round of lookup drafts alone pays (a
    request with 1 draft of room left: DSpark drafts it)."""
    from deepinfer_dspark.round_costs import RoundCosts

    lookup, asked = wrapped(fake_runner, True)
    lookup.costs = RoundCosts(0.0, 0.0, 0.0, 0.0, 0.0)   # (a lookup round pays at 3 requests too)
    views = {"loop": list(LOOP), "fresh": list(FRESH), "gone": list(FRESH) + [27]}
    for rid, view in views.items():
        lookup.track(rid, view)
    views["loop"].append(3)               # decoding
    views["fresh"].append(26)
    seen(lookup, views)
    heard = []
    running = lookup.inner.running
    lookup.inner.running = lambda n: heard.append(n) or running(n)
    lookup.dormant_rounds(3)              # a stretch ask with 3 running, then one finishes
    lookup.remove("gone")
    lookup.propose([ask(rid, list(views[rid])) for rid in ("loop", "fresh")])
    assert heard == [2] and asked == [["fresh"]] and lookup.inner.batch == 2
    lone, asked = wrapped(fake_runner, True)
    view = list(LOOP)
    lone.track("loop", view)
    view.append(3)
    seen(lone, {"loop": view})
    short = DraftRequest("loop", list(view), 1, 0.0, 0, 1.0, 0.0, 0, 10)   # 1 draft of room left
    assert lone.loops([short], 1) == set() and lone.loops([ask("loop", list(view))], 1) == {"loop"}
    lone.propose([short])
    assert asked == [["loop"]]            # DSpark was asked: a lone lookup draft would not pay here

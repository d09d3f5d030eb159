# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`bench_dspark.py`'s variants: each a `speculative_config` (None: no speculation) by name.

- `none`: no speculation;
- `fixed-k` for k in --fixed: DSpark drafts, every request verifies k drafts;
- `none-again` (by name only): a second engine without speculation, the noise floor of the
  paired ratios (`--interleave`, with `none` first);
- `dormant-stub` (by name only): the speculative engine over a proposer that declares every step
  dormant (`AlwaysDormant`): core's share of a dormant step, with plain decoding's output;
- `confidence`: DSpark drafts, Algorithm 1 picks each request's verified length from the
  calibrated confidences and the SPS profile of speculative rounds verifying k drafts per
  request (--spec-sps, or measured here first) read at the verified token count, and drafting
  pauses while plain decoding (--sps profile) is expected to be faster; since session 32 with
  prompt lookup where DSpark drafts nothing (the default `prompt_lookup_min` 2), as are the
  `confidence-*` variants below built on it (before: DSpark alone); `confidence-alone` (by
  name only) is DSpark alone (`prompt_lookup_min` 0), `confidence-alone-rounds` that with
  `measure_round_times`; `confidence-plain` (by name only) prices plain decoding at the plain steps
  timed over dormant and quiet stretches (`measure_plain_steps`), `confidence-timed` that with
  `measure_round_times`; `confidence-hurdle` (by name only) asks drafting for an expected gain
  of 1.2 over plain decoding (`min_gain`), `confidence-rounds-hurdle` 1.1 with the rounds timed;
  since session 36 the rounds are timed by default (`measure_round_times`) except with
  --deterministic, so without it `confidence` equals `confidence-rounds`, `confidence-alone`
  `confidence-alone-rounds` and `confidence-plain` `confidence-timed`, and `confidence-untimed`
  (by name only) is the default before it (rounds priced on the profile alone); `confidence-tail`
  (by name only, session 37) judges DSpark's rounds as a draining batch's tail counts them
  (`tail_rounds`; session 38: 0.924 / 0.973 against the default's 0.952 / 1.004 at 8 / 2 requests);
  `confidence-stragglers` (by name only, session 41) judges a draining batch's rounds by what
  its last request to finish keeps of their gain (`judge_stragglers`), `confidence-mean` by the
  mean request's (`judge_stragglers` false, as the default; in session 41's logs `confidence`
  had it on);
- `confidence-opening-runs` (by name only, session 63): an opening run's start and end priced into
  its rounds' judgement where the body loses (`opening_runs`);
- `confidence-drained` (by name only, session 64): drafting ruled out in drained batches of a size
  whose batches that drafted ran slower than those that did not (`drained_batches`);
- `confidence-hurdle-15`, `confidence-alone-hurdle-15` (by name only, session 65): `min_gain` 1.5,
  with and without prompt lookup; `confidence-probe-share` (by name only, session 65): probes at a
  losing load allowed 0.005 of the time instead of 0.02 (`probe_share`); `confidence-age8k` (by name
  only, session 65): the measured acceptance aging over 8192 rounds instead of 2048
  (`acceptance_age_rounds`);
- `confidence-young-runs`, `confidence-young-share` (by name only, session 67): a young bucket drafts
  on until its ledger settles (`young_runs`, the default since: then the same as `confidence`), alone and
  with `probe_share` 0.005;
- `confidence-probe-transition` (by name only, session 68): a probe's overhead also counts its run's
  transition, a round's time (`probe_transition`): a settled loss pauses longer (up to ~2x at 8 on the H100's profiles);
- `confidence-run-noise` (by name only, session 70): a draining batch's round is also scaled by what its
  slowest request keeps of the run it starts (`run_noise`: openings' short runs judged below their mean);
- `confidence-rescale` (by name only, session 71): a ledger's average is rescaled to the straggler factor
  its bucket reads now before a round is judged (`rescale_stragglers`: rounds judged before the factor
  existed no longer hold a losing load's average above 1);
- `confidence-share-floor` (by name only, session 72): each settled loss in a row at a bucket halves the share
  of the time its probes may lose, from `probe_share` down to 0.005 (`probe_share_floor`), until a round there wins;
- `confidence-probe16` (by name only, session 75): a loss's first pause, and the stretch after which a load the
  bounds keep ruling out is judged again, 16 rounds instead of 8 (`probe_every`): at 5-8 running requests on
  the H100 each re-judgement spent 0.10-0.16 ms of host in the step (session 74's phase logs);
- `confidence-resume-bound` (by name only, session 77): above `bound_only` requests the measured acceptance's
  bound also pays a resumption over a 32-round run (`resume_bound`);
- `confidence-lease32` (by name only, session 79): up to `bound_only` requests 32 lean rounds between two judged
  ones instead of 8 (`lease_rounds`, `DraftingLease`): on the H200 at 1 request the default verified what fixed-7
  verified yet ran 0.951 of it, 157 of its 378 drafted rounds lean;
- `confidence-frontier` (by name only, session 80): a draining batch's straggler factor at most what its bucket's
  drafted rounds moved the least advanced request over the mean request (`judge_frontier`, `Frontier`);
- `confidence-headroom` (by name only, session 82): every pause a loss sets above `bound_only` is priced at the
  probes' share times (bound gain - 1) / 0.5 clamped to [1/16, 1] (`probe_headroom`): probes in proportion to the stake;
  the default since session 83, so from then on the same engine as `confidence`;
- `confidence-no-headroom` (by name only, session 83): `probe_headroom` 0, the default through session 82;
- `confidence-k1` (by name only): the same with the profile of rounds verifying 1 draft per
  request too (--spec-sps-k1; `sps_profile_k1`), as `confidence` was in sessions 12-15. That
  profile is measured in an engine of k = 1, whose verification is shorter than a k = 7
  engine's padded one: on the H200 at 1 request it led Algorithm 1 to verify 4.4 drafts where
  the round cost what 7 cost (2.66 against 2.64 ms, session 16's call 7) and to run at 0.92x
  fixed-7. `confidence-k7` is the old name of today's `confidence`;
- `confidence-direct`, `confidence-measured`, `confidence-rounds` and `confidence-lookup` (by
  name only): `defer_context` false, `measure_step_times` true, `measure_round_times` true, and
  `prompt_lookup_min` 2 (prompt lookup where confidence drafts nothing, `LookupAssist`; 4 until
  session 29);
- `ngram-k` for k in --fixed (by name only): prompt lookup (`method: ngram`, n-grams of 1-4
  tokens) verifying up to k drafts whenever the context's suffix occurred before: what copying
  earlier text is worth on these replies, with no drafter (session 28: some replies loop);
- `ngram-aware-k` for k in --fixed (by name only): the same with `scheduling: load_aware`
  (a lookup round only where it pays at the load, priced on the decode profile; session 29).
"""

from __future__ import annotations

import math

NAMED = ("none", "none-again", "confidence", "confidence-k1", "confidence-k7", "confidence-direct",
         "confidence-measured", "confidence-rounds", "confidence-lookup", "confidence-full",
         "confidence-whole", "confidence-alone", "confidence-alone-rounds", "confidence-plain",
         "confidence-timed", "confidence-hurdle", "confidence-rounds-hurdle",
         "confidence-untimed", "confidence-tail", "confidence-mean",
         "confidence-stragglers", "confidence-loops", "confidence-unheld",
         "confidence-prior8", "confidence-settle64", "confidence-lone",
         "confidence-lone-loops", "confidence-lone2", "confidence-bound0", "confidence-overlap",
         "confidence-now", "confidence-replies4", "confidence-unleased",
         "confidence-timed1", "dormant-stub", "confidence-search-all",
         "confidence-preflush", "confidence-late-flush",
         "confidence-opening-runs", "confidence-drained", "confidence-hurdle-15", "confidence-resume-bound",
         "confidence-alone-hurdle-15", "confidence-probe-share",
         "confidence-age8k", "confidence-young-runs", "confidence-young-share",
         "confidence-probe-transition", "confidence-run-noise",
         "confidence-rescale", "confidence-share-floor",
         "confidence-search-quarter", "confidence-probe16",
         "confidence-lease32", "confidence-frontier", "confidence-headroom",
         "confidence-no-headroom")   # and fixed-K, ngram-K, ngram-aware-K
MIXED = "+mixed"   # a variant name's suffix: that variant's engine with mixed-step CUDA graphs
THAWED = "+thawed"   # ... that variant's engine with `freeze_heap` off (its calls meet the collector's full passes)
PACKED = "+packed"   # ... with `packed_graph_inputs` (a graph-replayed decode step's inputs in one copy; session 84)
SUFFIXES = (MIXED, THAWED, PACKED)


class AlwaysDormant:
    """A proposer that declares every step dormant and keeps nothing (`deepinfer_core.Proposer`)."""

    target_layer_ids = ()

    def dormant_rounds(self, num_requests: int) -> int:
        return 1 << 30

    def dormant_passed(self, num_requests: int, rounds: int) -> None:
        pass

    def wants_features(self) -> bool:
        return False

    def idle_rounds(self) -> int:
        return 1 << 30

    def idle_round(self, num_requests: int) -> None:
        pass

    def propose(self, requests: list) -> list:
        return []


def _split(name: str) -> tuple[str, set[str]]:
    """The variant name without its engine suffixes (`+mixed`, `+thawed`, `+packed`, in any order), and those."""
    found: set[str] = set()
    while True:
        suffix = next((x for x in SUFFIXES if name.endswith(x)), None)
        if suffix is None:
            return name, found
        name = name.removesuffix(suffix)
        found.add(suffix)


def base_name(name: str) -> str:
    """The variant name without its engine suffixes (`+mixed`, `+thawed`), if any."""
    return _split(name)[0]


def variant_engine_kw(name: str, engine_kw: dict) -> dict:
    """The engine arguments of variant `name`: `engine_kw`, with `mixed_cuda_graphs` on for a name
    with `+mixed` (so one process pairs an engine with mixed-step graphs against one without) and
    `freeze_heap` off for one with `+thawed` (session 50: the same pairing for the frozen heap; the
    collector's thresholds are the process's, so a thawed engine beside frozen ones meets full
    passes on another schedule than in a process of its own), and `packed_graph_inputs` on for one
    with `+packed` (session 84)."""
    suffixes = _split(name)[1]
    kw = dict(engine_kw)
    if MIXED in suffixes:
        kw["mixed_cuda_graphs"] = True
    if THAWED in suffixes:
        kw["freeze_heap"] = False
    if PACKED in suffixes:
        kw["packed_graph_inputs"] = True
    return kw


def built(name: str, llm):
    """The engine of variant `name`, as built or patched: `confidence-unheld` is the default with
    DSpark's quiet stretches no longer held by the prompt-lookup wrapper (DSpark asked before
    every paused step, as until session 43: `HeldStretch` holds only dormant stretches);
    `confidence-prior8` the default with 8 predicted drafts of pseudo-evidence at ratio 1 in its
    acceptance ratios (`AcceptanceRatio.prior`, 1 by default; session 43's candidate);
    `confidence-settle64` the default with a bucket's losses settled only once its judged rounds
    hold 64 drafted requests (`PausePolicy.settled_requests`, 0 by default; session 44's candidate);
    `confidence-replies4` the default with `expected_loss` waiting for 4 replies' body rounds
    (`PausePolicy.min_replies`, 0 by default; session 46's candidate);
    (`confidence-lone`, `-lone2`, `-lone-loops` and `-bound0` set `bound_only` in their configs;
    `confidence-overlap` and `-now` set `overlap_bookkeeping`; `confidence-unleased` sets
    `lease_rounds` 0; `confidence-timed1` sets `bound_only_untimed` False.) `dormant-stub`: the
    default's engine (its drafter loaded) with its proposer replaced by `AlwaysDormant`;
    `confidence-search-all` the default with its prompt-lookup wrapper searching every request
    every step (`LookupAssist.search_budget` inf: until session 54); `confidence-search-quarter` the default
    with a quarter of its search budget (`search_budget` 0.25: each request searched every 4 x its batch
    tokens, every 32 at 8 requests; session 74's candidate: at 8 requests on an H100 the searches at each
    8-step stretch's end cost 0.13-0.16 ms, ~1.5% of a step). (`confidence-preflush` sets
    `pre_flush` in its config, the default since session 62, when it was the candidate;
    `confidence-late-flush` turns it off: the default before.)"""
    if base_name(name) == "dormant-stub":
        decoder = llm.engine.speculative
        decoder.proposer = AlwaysDormant()
        decoder.dormant.__init__(decoder.proposer)   # (core's `DormantSteps` holds the methods it found)
    if base_name(name) == "confidence-search-all":
        llm.engine.speculative.proposer.search_budget = math.inf   # (the wrapper's own attribute)
    if base_name(name) == "confidence-search-quarter":
        llm.engine.speculative.proposer.search_budget = 0.25
    if base_name(name) == "confidence-unheld":   # (other engines, fake ones too, are not read)
        proposer = llm.engine.speculative.proposer
        proposer.__dict__["_held"].report_quiet = None   # (a quiet declaration then holds nothing)
    if base_name(name) == "confidence-prior8":
        proposer = llm.engine.speculative.proposer
        getattr(proposer, "inner", proposer).acceptance.prior = 8.0
    if base_name(name) == "confidence-settle64":
        proposer = llm.engine.speculative.proposer
        getattr(proposer, "inner", proposer).settled_requests = 64
    if base_name(name) == "confidence-replies4":
        proposer = llm.engine.speculative.proposer
        getattr(proposer, "inner", proposer).min_replies = 4
    return llm

# Run only when asked for by name (`--variants`): the default set is none, confidence and fixed-K.
BY_NAME_ONLY = ("none-again", "confidence-k1", "confidence-k7", "confidence-direct", "confidence-measured",
                "confidence-rounds", "confidence-lookup", "confidence-full", "confidence-whole", "confidence-alone",
                "confidence-alone-rounds", "confidence-plain", "confidence-timed", "confidence-hurdle",
                "confidence-rounds-hurdle", "confidence-untimed", "confidence-tail", "dormant-stub",
                "confidence-search-all", "confidence-preflush", "confidence-late-flush", "confidence-opening-runs",
                "confidence-drained", "confidence-hurdle-15", "confidence-alone-hurdle-15",
                "confidence-probe-share", "confidence-age8k", "confidence-young-runs", "confidence-young-share",
                "confidence-probe-transition", "confidence-run-noise", "confidence-rescale", "confidence-share-floor",
                "confidence-search-quarter", "confidence-probe16", "confidence-resume-bound",
                "confidence-lease32", "confidence-frontier", "confidence-headroom", "confidence-no-headroom")


def variant_configs(drafter: str, fixed: list[int], spec_sps, decode, spec_k1=None) -> dict:
    """Every variant's `speculative_config` by name, in `NAMED`'s order then fixed-K, ngram-K and
    ngram-aware-K for K in `fixed`. `drafter`: the DSpark checkpoint folder; `spec_sps` / `decode` /
    `spec_k1`: the `SPSProfile`s of speculative rounds of k = max(`fixed`), of plain decode steps and
    of rounds verifying one draft (None unless `confidence-k1` runs)."""
    variants = {"none": None, "none-again": None, "confidence": {"method": "dspark", "model": drafter,
                                             "num_speculative_tokens": max(fixed), "scheduling": "confidence",
                                             "sps_profile": spec_sps, "decode_profile": decode}}
    # Asked for by name only: Algorithm 1 also reading the k = 1 rounds' profile (`sps_profile_k1`).
    variants["confidence-k1"] = {**variants["confidence"], "sps_profile_k1": spec_k1}
    variants["confidence-k7"] = {**variants["confidence"]}   # its name in sessions 12-15
    # Asked for by name only: confidence scheduling that projects the drafter's context every step
    # while paused, instead of buffering the features (`defer_context`).
    variants["confidence-direct"] = {**variants["confidence"], "defer_context": False}
    # ... and with the profiles corrected by measured step times (`measure_step_times`, opt-in);
    # `none-again` is a second engine without speculation: its paired ratio to `none` (listed
    # first) is the noise floor of the others'.
    variants["confidence-measured"] = {**variants["confidence"], "measure_step_times": True}
    # ... and with the drafted rounds priced at their measured time (`measure_round_times`: plain
    # steps on their profile, features still declined; session 27).
    variants["confidence-rounds"] = {**variants["confidence"], "measure_round_times": True}
    # ... and with prompt lookup where it drafts nothing (`prompt_lookup_min`: 4-token suffixes; session 28).
    variants["confidence-lookup"] = {**variants["confidence"], "prompt_lookup_min": 2}   # (4 until session 29)
    # ... and DSpark alone (`prompt_lookup_min` 0): "confidence" until session 32, when prompt lookup
    # became the default (`factories.LOOKUP_DEFAULT`), so "confidence" now equals "confidence-lookup".
    variants["confidence-alone"] = {**variants["confidence"], "prompt_lookup_min": 0}
    variants["confidence-alone-rounds"] = {**variants["confidence-alone"], "measure_round_times": True}
    # ... and plain decoding priced at the plain steps timed over dormant and quiet stretches
    # (`measure_plain_steps`, session 33: the decode profile read 1.11-1.57x them at 5-32 requests),
    # alone and with the rounds timed too.
    variants["confidence-plain"] = {**variants["confidence"], "measure_plain_steps": True}
    variants["confidence-timed"] = {**variants["confidence-plain"], "measure_round_times": True}
    # By name only: the default with a hurdle (`min_gain`), a drafted round must expect 1.2x plain decoding.
    variants["confidence-hurdle"] = {**variants["confidence"], "min_gain": 1.2}
    # ... 1.5 (session 65: where even the acceptance's upper bound cannot clear it, `expected_loss`
    # rules the load out and the target's features are declined), with and without prompt lookup.
    variants["confidence-hurdle-15"] = {**variants["confidence"], "min_gain": 1.5}
    variants["confidence-alone-hurdle-15"] = {**variants["confidence-alone"], "min_gain": 1.5}
    # ... and probes at a losing load allowed a quarter of the default's share of the time (session 65).
    variants["confidence-probe-share"] = {**variants["confidence"], "probe_share": 0.005}
    # ... and the measured acceptance aging 4x more slowly (session 65: fewer re-probes at loads ruled out).
    variants["confidence-age8k"] = {**variants["confidence"], "acceptance_age_rounds": 8192}
    # ... and a young bucket drafting on until its ledger settles, alone and with the smaller probe share (session 67).
    variants["confidence-young-runs"] = {**variants["confidence"], "young_runs": True}
    variants["confidence-young-share"] = {**variants["confidence-young-runs"], "probe_share": 0.005}
    # ... and a probe's overhead counting its run's transition (session 68: settled losses re-probe less often).
    variants["confidence-probe-transition"] = {**variants["confidence"], "probe_transition": True}
    # ... and a round judged by what the slowest request keeps of its run (session 70: short runs at 8 lose).
    variants["confidence-run-noise"] = {**variants["confidence"], "run_noise": True}
    # ... and the ledgers' averages held at the straggler factor read now (session 71: stale averages at 8).
    variants["confidence-rescale"] = {**variants["confidence"], "rescale_stragglers": True}
    # ... and the probes' share halved per settled loss in a row at a bucket, down to 0.005 (session 72).
    variants["confidence-share-floor"] = {**variants["confidence"], "probe_share_floor": 0.005}
    # ... and judged again every 16 rounds where paused or ruled out, instead of 8 (session 75).
    variants["confidence-probe16"] = {**variants["confidence"], "probe_every": 16}
    # ... and the rounds timed with a smaller hurdle (session 36: rounds timed at last; min_gain 1.1).
    variants["confidence-rounds-hurdle"] = {**variants["confidence-rounds"], "min_gain": 1.1}
    # ... and the default until session 36: rounds priced on the profile alone (`measure_round_times` false).
    variants["confidence-untimed"] = {**variants["confidence"], "measure_round_times": False}
    # ... and DSpark's rounds judged by a draining batch's tail weights (session 37: `tail_rounds`).
    variants["confidence-tail"] = {**variants["confidence"], "tail_rounds": True}
    # ... and a draining batch's rounds judged by its straggler (`judge_stragglers`, session 41: opt-in; the
    # default since session 49), or explicitly by the mean request (`confidence-mean`: the default until session 49).
    variants["confidence-stragglers"] = {**variants["confidence"], "judge_stragglers": True}
    variants["confidence-mean"] = {**variants["confidence"], "judge_stragglers": False}
    # ... and with Algorithm 1 pricing every round as the full one, as the pause policy does
    # (`prefix_pricing`: it then verifies every draft; session 18's simulation, BENCHMARKS.md).
    variants["confidence-full"] = {**variants["confidence"], "prefix_pricing": "full_round"}
    # ... and with prompt lookup taking looping requests from DSpark (`lookup_loops`, session 43), and with
    # DSpark's quiet stretches no longer held by the lookup wrapper (`built`: as until session 43).
    variants["confidence-loops"] = {**variants["confidence"], "lookup_loops": True}
    variants["confidence-unheld"] = {**variants["confidence"]}
    variants["confidence-prior8"] = {**variants["confidence"]}   # (`built`: a stronger prior in the ratios)
    variants["confidence-settle64"] = {**variants["confidence"]}   # (`built`: losses settled on 64 requests)
    variants["confidence-replies4"] = {**variants["confidence"]}   # (`built`: `expected_loss` waits for 4 replies)
    variants["confidence-preflush"] = {**variants["confidence"], "pre_flush": True}   # (session 62's candidate)
    variants["confidence-late-flush"] = {**variants["confidence"], "pre_flush": False}   # (the default before it)
    variants["confidence-opening-runs"] = {**variants["confidence"], "opening_runs": True}   # (session 63's candidate)
    variants["confidence-resume-bound"] = {**variants["confidence"], "resume_bound": True}   # (session 77's candidate)
    variants["confidence-drained"] = {**variants["confidence"], "drained_batches": True}   # (session 64's candidate)
    # ... and the ledgers pausing nothing at 1 request (`bound_only` 1: session 45's candidate, the default
    # since), with `lookup_loops` too, up to 2 requests, and at no load (`bound_only` 0: until session 45).
    variants["confidence-lone"] = {**variants["confidence"], "bound_only": 1}
    variants["confidence-lone-loops"] = {**variants["confidence"], "bound_only": 1, "lookup_loops": True}
    variants["confidence-lone2"] = {**variants["confidence"], "bound_only": 2}
    variants["confidence-bound0"] = {**variants["confidence"], "bound_only": 0}
    # ... and a drafted round's bookkeeping done during the next round's draft (session 46's candidate, the
    # default since), or at once (`-now`: until session 46).
    variants["confidence-overlap"] = {**variants["confidence"], "overlap_bookkeeping": True}
    variants["confidence-now"] = {**variants["confidence"], "overlap_bookkeeping": False}
    # ... and every round judged at 1 request (`lease_rounds` 0: until session 52; the default since leases
    # lean rounds there, `DraftingLease`).
    variants["confidence-unleased"] = {**variants["confidence"], "lease_rounds": 0}
    # ... and 32 lean rounds between two judged ones (session 79's candidate at 1 request: fewer judgements a call).
    variants["confidence-lease32"] = {**variants["confidence"], "lease_rounds": 32}
    # ... and the straggler factor capped by the least advanced request's measured share (session 80's candidate).
    variants["confidence-frontier"] = {**variants["confidence"], "judge_frontier": True}
    # ... and the probes' share scaled by the bounds' headroom over plain decoding (session 82).
    variants["confidence-headroom"] = {**variants["confidence"], "probe_headroom": 0.5}
    # ... and without it (0: off), as the default was until session 83.
    variants["confidence-no-headroom"] = {**variants["confidence"], "probe_headroom": 0}
    # ... and its rounds timed up to bound_only requests too (`bound_only_untimed` False: until session 53).
    variants["confidence-timed1"] = {**variants["confidence"], "bound_only_untimed": False}
    # ... and with a reply's opening judged with the rest of it (`opening_tokens` 0: sessions 8-18).
    variants["confidence-whole"] = {**variants["confidence"], "opening_tokens": 0}
    # By name only: the default's engine over an always-dormant proposer (`built`), session 54.
    variants["dormant-stub"] = {**variants["confidence"]}
    # ... and the default's prompt-lookup wrapper searching every request every step (`built`: until session 54).
    variants["confidence-search-all"] = {**variants["confidence"]}
    variants["confidence-search-quarter"] = {**variants["confidence"]}   # (`built`: session 74)
    for k in fixed:
        variants[f"fixed-{k}"] = {"method": "dspark", "model": drafter, "num_speculative_tokens": k}
        variants[f"ngram-{k}"] = {"method": "ngram", "num_speculative_tokens": k}   # by name only
        variants[f"ngram-aware-{k}"] = {"method": "ngram", "num_speculative_tokens": k,
                                        "scheduling": "load_aware", "decode_profile": decode}   # by name only
    return variants


def chosen(variants: dict, names: list[str] | None) -> dict:
    """The variants to run: `names` in the order given (a `+mixed` or `+thawed` name builds its base name's
    config), or by default every variant except those run by name only (`BY_NAME_ONLY`, ngram-K,
    ngram-aware-K). Raises KeyError on an unknown name (`bench_dspark.py` refuses those first)."""
    if names is not None:
        return {k: variants[base_name(k)] for k in names}
    return {k: spec for k, spec in variants.items()
            if k not in BY_NAME_ONLY and not k.startswith(("ngram-", "ngram-aware-"))}

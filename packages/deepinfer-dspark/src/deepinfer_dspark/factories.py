# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Entry points of group `deepinfer.proposers` (see `deepinfer_core.interfaces.Proposer`): they
build the proposers of `deepinfer_dspark.proposers` from an engine's `speculative_config`.

`speculative_config` keys (besides "method" and "num_speculative_tokens" = k; `ngram_factory` is
`ngram_entry.py`'s, re-exported here):
  ngram:  scheduling ("fixed": prompt lookup every step | "load_aware": a lookup round only where
          it pays at the current load, `LookupAssist` over `NoDrafter`),
          prompt_lookup_min (1 with "fixed", 2 with "load_aware"; below 1024 there),
          prompt_lookup_max (4, or prompt_lookup_min when larger; "fixed" only),
          decode_profile (JSON path or an `SPSProfile` of plain decode steps; "load_aware" only,
          optional: without it a round is priced in plain steps at any batch size).
  dspark: model (DeepSpec checkpoint folder, required), scheduling ("fixed" | "confidence"),
          sps_profile (JSON path or an `SPSProfile`; required for "confidence"),
          sps_profile_k1 (JSON path or an `SPSProfile` of rounds verifying 1 draft per request,
          batch tokens = 2 x requests; optional with "confidence": Algorithm 1 then reads a
          round's time interpolated in its verified tokens, see `VerifyRates`; the README says
          why it is not recommended),
          calibration (JSON path of `SequentialTemperatureScaling`; default: the checkpoint
          folder's calibration.json when present, as `deepinfer-dspark train` writes it),
          probe_every (8: rounds without drafting after a round that verified nothing),
          decode_profile (JSON path or an `SPSProfile` of plain decode steps, batch tokens =
          requests; with it, confidence scheduling also compares a drafted round with plain
          decoding and pauses drafting while plain decoding wins: exponential backoff, at least
          as long as keeps the losing probes to `probe_share` of the time, 2% by default, see
          `DraftCosts.probe_pause`),
          max_probe_every (256: the longest backoff; a costly losing probe may set a longer
          pause, up to 2,048 rounds: `DraftCosts.probe_pause`),
          defer_context (True: while drafting is paused, buffer the target features and project
          them when drafting resumes; False: project every step, paused or not),
          decline_features (True: while drafting is paused because even accepting every draft
          could not pay at the current load (`cannot_pay`, `expected_loss`), or after a settled
          measured loss there or below (until `_regret_gaps`), the target skips the drafter's
          features and the requests then running or admitted are never drafted again;
          False: features every step),
          measure_step_times (False: opt in to correcting the two profiles by the step times
          measured while serving, see `MeasuredRates`; needs decode_profile),
          measure_round_times (True with a decode_profile, without measure_step_times and in an
          engine that is not `deterministic`, else False: the drafted rounds are priced at their
          measured time over the profile's, plain steps on their profile, features still
          declined; asking for it needs decode_profile and refuses measure_step_times; the
          default since session 36, when rounds were first timed in confidence engines: +1.6
          points over the profile-priced default in the mean of 11 paired H200 cells at 1-128
          requests, each inside the noise, and below it in the one call of that code,
          BENCHMARKS.md; not read up to bound_only requests by default: bound_only_untimed),
          measure_plain_steps (False: opt in to pricing plain decoding at the plain steps' time
          measured over dormant and quiet stretches, no per-step cost, and, since session 47 and
          with measure_round_times (on by default), in runs of 4 plain steps paused where a bucket
          drafts on at a judged gain below 1.35 (a decode profile read slow would otherwise price
          its rounds too cheap for good); needs decode_profile; not with measure_step_times; lost
          on the H200 with the rounds untimed, 0.822 at 8 requests: not recommended, BENCHMARKS.md
          session 34; the re-timing runs not measured there yet),
          min_gain (1.0: opt in to a hurdle, the gain over plain decoding a drafted round must
          exceed to count as a win, in [1, 10], above bound_only requests (since session 63; up
          to them the bound alone rules); needs decode_profile; see `DraftCosts`),
          prefix_pricing ("profile": Algorithm 1 reads sps_profile at the tokens a round
          verifies, as in the paper; "full_round": every round is priced as verifying all k
          drafts, as the pause policy prices it, so every draft with a chance of acceptance is
          verified and the pause policy alone decides where to draft; see `VerifyRates`; not
          with sps_profile_k1),
          opening_tokens (32: rounds of a batch whose requests are all within their replies'
          first opening_tokens tokens are judged and paused apart, without declining features,
          see `OpeningPhase`; 0: one judgement for the whole reply),
          prompt_lookup_min (2, `LOOKUP_DEFAULT`; 0: off; n >= 1: where confidence scheduling
          drafts nothing, a request whose last n tokens occurred earlier gets the tokens that
          followed them as drafts, when such a round pays: `LookupAssist`; on by default since
          session 32, where it ran at or above DSpark alone in all six cells at 1 / 2 / 8 requests;
          off by default with measure_step_times, and refused with it),
          tail_rounds (False: opt in to judging DSpark's rounds as a batch's tail counts them
          while the engine drains what it holds and no request waits (`LLM.generate`): a request
          more than `TAIL_SLACK` tokens ahead of the least advanced weighs `TAIL_AHEAD`, see
          `batch_tail.tail_expected`; needs prompt_lookup_min >= 1; lost on the H200, 0.924 against
          0.952 at 8 requests and 0.973 against 1.004 at 2: not recommended, BENCHMARKS.md session 38),
          lookup_loops (False: opt in to prompt-lookup drafts also where DSpark drafts, for a
          request whose text is caught in a loop, `LookupPricing.loops`; needs prompt_lookup_min >= 1;
          on the H200 +0 to +6 points at 1 request, -14 to +12 at 2 over four processes, and DSpark's
          own acceptance then reads lower: not the default, BENCHMARKS.md session 43),
          bound_only (1, `BOUND_ONLY_DEFAULT`: up to this many requests the pause ledgers' averages
          pause nothing, and drafting stops there only where the measured acceptance's upper bound
          cannot pay, see `PausePolicy.bound_only`; 0: the ledgers judge every load, as until
          session 45; on the H200 1 ran +6 to +17 points at 1 request over six processes, +2 at 2
          and -0.5 at 8 on average, BENCHMARKS.md forty-first session),
          overlap_bookkeeping (True, `OVERLAP_DEFAULT`: each drafted round is judged, and its
          commits folded into the measured acceptance, while the next drafted round's forward runs
          on the device, off the host's critical path, `LateBookkeeping`; decisions come one round
          later, lossless; False: at once, as until session 46; on the H200 +4.3 points at 1
          request over six processes, +0.8 at 2 and +0.5 at 8, BENCHMARKS.md forty-second session),
          judge_stragglers (True, `STRAGGLERS_DEFAULT`: a round's gain is scaled, while the engine
          drains what it holds (`LLM.generate`), by what the batch's last request to finish keeps
          of it, `Stragglers`, from the tokens a drafted round gave each finished request; False:
          every request's gain counts, as until session 49. Session 41's H200 calls ran it below
          the mean request's judgement in six of eight cells; session 49's pre-registered call
          (four processes, ratios from untraced rounds) +2.3 points at 8 requests (0.990 against
          0.968) and +1.1 on average at 1-2: now the default, BENCHMARKS.md forty-fifth session),
          lease_rounds (8, `LEASE_DEFAULT`: up to bound_only requests, where the pause ledgers pause
          nothing, a load whose judged gain averages above 1 runs this many lean rounds between
          two judged ones: drafted and scheduled by Algorithm 1, their acceptance evidence kept, but
          not judged, and no bound priced, `DraftingLease`; 0: every round judged, as until
          session 52; on this CPU -16 us of host work a drafted round at 1 request, of ~61; not yet
          measured on the H200).
          bound_only_untimed (True, `UNTIMED_DEFAULT`: up to bound_only requests the rounds are priced
          on the profiles, not at their measured time, and the measured flushes and plain steps go
          unread there too, `StepTiming._rounds_timed`; a no-op without measure_round_times; False: timed there
          too, as until session 53; on H100s in session 52 the timed rounds paused the default at 1
          request in three of five processes, 0.82-0.95 of fixed-7 there, untimed 0.97-0.99),
          pre_flush (True, `PRE_FLUSH_DEFAULT`: the features buffered while drafting is paused are
          projected at the last step of a quiet stretch that ends its pause, while the device runs
          it, not in the round that resumes drafting after waiting for the token ids,
          `ObservedFeatures`; False: in that round, as until session 62; on an H100 at 8 requests a
          resumption (the resumed round and the two steps before it) took 9.0 against 10.6 ms, and
          over four processes the engine ran 1.009 (0.979-1.034) of the one without it there: a
          cheaper resumption, no throughput gain shown; the pause policy then times fewer flushes
          and probes more often, BENCHMARKS.md fifty-eighth session),
          opening_runs (False: opt in to pricing an opening run's start and end (a round's worth)
          into its rounds' judgement where the body loses, above bound_only requests,
          `PausePolicy.opening_runs`; session 63's candidate: on an H100 at 8 requests the default's
          opening runs (5.3 rounds on average, three of them) realized 0.87 of plain decoding where
          they were judged at 1.00; on an H100 in session 64 0.997 / 0.990 of the default at 8),
          drained_batches (False: opt in to judging whole drained batches, `DrainedBatches`: where a
          size's batches that drafted ran slower than plain decoding's prediction for them (as its
          batches that did not read it, or 0.95 of it before three did), drafting is ruled out in the
          next batches of that size, with a doubling backoff (`PausePolicy.drained`); needs
          decode_profile; session 64's candidate: on an H100 at 8 requests
          every traced call of the default that drafted ran below plain decoding's, 0.871; not yet
          measured on a GPU; on an H100 in session 65 1.009 / 0.970 / 0.966 of the default at 8),
          probe_share (0.02, `draft_costs.PROBE_SHARE`: at a losing load, the share of the time its
          probes may lose: the pause after a losing probe, `DraftCosts.probe_pause`, and the keep cost
          above which a young loss declines the features, `FeatureKeeping._dear_to_keep`; in (0, 1]; needs
          decode_profile; on an H100 0.005 read 1.001 of the default at 8 over five processes),
          young_runs (True, `YOUNG_RUNS_DEFAULT`: above bound_only requests a young bucket drafts on
          until its ledger settles, `PausePolicy.young_runs`; False: its first loss pauses it),
          probe_transition (False; True: with timed rounds a probe's overhead also counts its run's
          transition, a round's time, `PausePolicy.probe_transition`; session 68: 0.996 of the default at 8),
          run_noise (False; True: with judge_stragglers a draining batch's round is also scaled by what
          its slowest request keeps of its run, `StragglerJudgement`, `run_noise.py`; session 70's candidate),
          rescale_stragglers (False; True: with judge_stragglers a ledger's average is rescaled to the
          straggler factor its bucket reads now before a round is judged, `PauseLedger.rescale`;
          session 71's candidate),
          judge_frontier (False; True: with judge_stragglers a draining batch's straggler factor is at
          most what the drafted runs begun at its bucket moved the least advanced request over the
          mean request, `Frontier`; session 80's candidate: the default's runs at 8 on an H100 kept
          0.31-0.57 of the mean request over 1-7 rounds where the factor read ~0.83; in the simulator
          +1 to +3 points at 8 requests where drafting loses, within 2.5 at 2 and 4),
          probe_share_floor (None; a share in (0, 1]: after repeated settled losses at a bucket, each
          pause keeps the probes to half the last one's share, down to this floor, until a round there
          wins, `PausePolicy.probe_share_floor`; needs decode_profile; session 72's candidate, 0.005),
          resume_bound (False; True: above bound_only requests the measured acceptance's bound also pays
          a resumption over a 32-round run, `PausePolicy.resume_bound`; needs decode_profile; session
          77's candidate: in the simulator 0.964 -> 0.978 at 8 requests and p 0.75 on an H100's profiles,
          1.017 -> 0.995 at 2 requests and p 0.76 on an H200's),
          probe_headroom (0.5, `HEADROOM_DEFAULT`, where decode_profile is set; h > 0: above bound_only
          requests every pause after a loss is priced at the probes' share times min(1, (bound gain -
          1) / h), at least 1/16, `probe_headroom.py`; 0: off, the whole probe_share at every load;
          session 82's candidate, the default since session 83),
          acceptance_age_rounds (2048, `full_acceptance.AGE_ROUNDS`: engine rounds over which the
          measured acceptance's weight falls by e, `FullAcceptance.age_rounds`; an int >= 1. The
          bound `expected_loss` reads widens as its evidence fades, so a load ruled out is drafted
          again after a time without new evidence that scales with it; longer: fewer such re-probes at
          loads where drafting keeps losing, and slower to follow text that changed. Session 65's
          candidate: in the simulator 8192 lifted the losing cells at 8 requests 0.986 / 0.984 ->
          0.999 / 0.992 and left the winning ones as they were; not yet measured on a GPU).

Every key is checked by name: a misspelt knob raises instead of doing nothing. The checks that
need neither the drafter nor the target run before the engine loads anything (`validate`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from deepinfer_dspark.calibration import SequentialTemperatureScaling
from deepinfer_dspark.checkpoint import load_checkpoint
from deepinfer_dspark.config_keys import (DSPARK_KEYS, ENGINE_KEYS, NGRAM_KEYS, _bool_key, _check_keys,  # noqa: F401
                                          _info_int, _int_key, _is_dir, _load, _lookup_min, _min_gain, _probe_share,
                                          _frontier_key, _needs_lookup, _profile)
from deepinfer_dspark.context_pool import reserve_blocks
from deepinfer_dspark.draft_runner import DSparkDraftRunner
from deepinfer_dspark.drained_batches import DrainedBatches
from deepinfer_dspark.frontier import Frontier
from deepinfer_dspark.full_acceptance import AGE_ROUNDS, FullAcceptance
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.ngram_entry import ngram_factory  # noqa: F401 (the `ngram` entry point, named here before)
from deepinfer_dspark.opening_phase import OPENING_TOKENS
from deepinfer_dspark.probe_headroom import check_headroom
from deepinfer_dspark.proposers import DSparkProposer


def dspark_factory(spec_config: dict, model_info: dict) -> DSparkProposer:
    """Entry point `dspark`: loads the drafter next to the target (sharing its embedding and LM head).

    Raises:
        ValueError: `speculative_config.model` missing or not a loadable checkpoint for this
            target, a bad scheduling / profile / calibration setting, `num_speculative_tokens`
            above the drafter's block size, or an unknown key (the message names
            `speculative_config.<key>`).
    """
    settings = _dspark_settings(spec_config)
    if model_info.get("deterministic") is True and spec_config.get("measure_round_times") is None:
        settings["measure_round_times"] = False   # decisions from the inputs only, not timings (`Proposer`)
    path = spec_config["model"]
    drafter = _load("model", lambda p: load_checkpoint(
        p, dtype=model_info.get("dtype", torch.float32), device=model_info.get("device"),
        target_embed=model_info.get("embed_tokens"), target_lm_head=model_info.get("lm_head")), path)
    calibration = spec_config.get("calibration")
    if calibration is None and (Path(path) / "calibration.json").is_file():
        calibration = Path(path) / "calibration.json"  # STS temperatures stored with the checkpoint
    temperatures = None
    if calibration is not None:
        temperatures = _load("calibration", SequentialTemperatureScaling.load, calibration).temperatures
        if len(temperatures) != drafter.config.block_size:
            raise ValueError(f"speculative_config.calibration: {calibration} holds {len(temperatures)} "
                             f"temperatures, the drafter's block_size is {drafter.config.block_size}")
        temperatures = torch.as_tensor(temperatures)
    longest = _info_int(model_info, "max_model_len", None)
    if longest is not None and longest > drafter.config.max_position_embeddings:
        raise ValueError(f"speculative_config.model: the drafter covers {drafter.config.max_position_embeddings} "
                         f"positions (max_position_embeddings) and the engine's max_model_len is {longest}: a request "
                         f"past them could not be drafted for; set max_model_len <= "
                         f"{drafter.config.max_position_embeddings} or use a drafter trained for the target's length")
    k = spec_config["num_speculative_tokens"]
    if not 1 <= k <= drafter.config.block_size:
        raise ValueError(f"speculative_config.num_speculative_tokens: must be in [1, {drafter.config.block_size}] "
                         f"(the drafter's block_size), got {k}")
    runner = DSparkDraftRunner(drafter, temperatures, block_size=POOL_BLOCK_SIZE, num_blocks=1)   # `_prepare` sizes it
    lookup, tail_rounds = settings.pop("prompt_lookup_min"), settings.pop("tail_rounds")
    loops, opening_runs = settings.pop("lookup_loops"), settings.pop("opening_runs")
    young_runs, transition = settings.pop("young_runs"), settings.pop("probe_transition")
    noise, rescale = settings.pop("run_noise"), settings.pop("rescale_stragglers")
    frontier = settings.pop("judge_frontier")
    drained, share = settings.pop("drained_batches"), settings.pop("probe_share")
    floor, resume = settings.pop("probe_share_floor"), settings.pop("resume_bound")
    age, headroom = settings.pop("acceptance_age_rounds"), settings.pop("probe_headroom")
    proposer = DSparkProposer(runner, k, max_batch=model_info.get("max_num_seqs"), **settings)
    proposer.opening_runs, proposer.young_runs, proposer.probe_transition = opening_runs, young_runs, transition
    proposer.run_noise, proposer.rescale_stragglers, proposer.probe_share_floor = noise, rescale, floor
    proposer.resume_bound, proposer.judge_frontier, proposer.probe_headroom = resume, frontier, headroom
    if frontier:   # (fed by `Stragglers`, itself fed only with judge_stragglers: checked with the keys)
        proposer.stragglers.frontier = Frontier()
    proposer.drained = DrainedBatches(proposer._plain_seconds, proposer.max_batch) if drained else None
    if share is not None and proposer.costs is not None:   # (`DraftCosts.probe_share`)
        proposer.costs.probe_share = share
    if age != AGE_ROUNDS:   # (before any evidence: `FullAcceptance.age_rounds`)
        proposer.acceptance.full = FullAcceptance(k, age)
    if not proposer.retired:
        _prepare(runner, model_info, k)
    if not lookup or proposer.retired:
        return proposer
    return LookupAssist(proposer, lookup, tail_rounds=tail_rounds, prefer_loops=loops)


def _dspark_settings(spec_config: dict) -> dict[str, Any]:
    """Every check of a `dspark` config that needs neither the drafter nor the target (see
    `dspark_factory`): the `DSparkProposer` keyword arguments it sets."""
    _check_keys(spec_config, "dspark", DSPARK_KEYS)
    path = spec_config.get("model")
    if not isinstance(path, (str, Path)) or not str(path) or not _is_dir(path):
        raise ValueError(f"speculative_config.model: a DeepSpec DSpark checkpoint folder is required, got {path!r}")
    scheduling = spec_config.get("scheduling")
    scheduling = "fixed" if scheduling is None else scheduling   # (null takes the default, as for every key)
    if not isinstance(scheduling, str) or scheduling not in ("fixed", "confidence"):
        raise ValueError(f"speculative_config.scheduling: expected 'fixed' or 'confidence', got {scheduling!r}")
    sps = None
    if scheduling == "confidence":
        profile = spec_config.get("sps_profile")
        if profile is None:
            raise ValueError("speculative_config.sps_profile: confidence scheduling needs a measured profile")
        sps = _profile("sps_profile", profile)
    elif spec_config.get("sps_profile") is not None:
        raise ValueError("speculative_config.sps_profile: only used with scheduling='confidence'")
    short = spec_config.get("sps_profile_k1")
    if short is not None:
        if scheduling != "confidence":
            raise ValueError("speculative_config.sps_profile_k1: only used with scheduling='confidence'")
        short = _profile("sps_profile_k1", short)
    pricing = spec_config.get("prefix_pricing")
    if pricing is not None:
        if scheduling != "confidence":
            raise ValueError("speculative_config.prefix_pricing: only used with scheduling='confidence'")
        if not isinstance(pricing, str) or pricing not in ("profile", "full_round"):
            raise ValueError(f"speculative_config.prefix_pricing: expected 'profile' or 'full_round', got {pricing!r}")
        if pricing == "full_round" and short is not None:
            raise ValueError("speculative_config.prefix_pricing: 'full_round' prices every round as verifying all "
                             "drafts, so sps_profile_k1 would go unused; drop one of them")
    decode = spec_config.get("decode_profile")
    for key in ("decode_profile", "defer_context", "measure_step_times", "measure_round_times", "decline_features",
                "opening_tokens", "prompt_lookup_min", "measure_plain_steps", "min_gain", "tail_rounds",
                "judge_stragglers", "lookup_loops", "bound_only", "overlap_bookkeeping", "probe_every",
                "max_probe_every", "lease_rounds", "bound_only_untimed", "pre_flush", "opening_runs",
                "drained_batches", "probe_share", "acceptance_age_rounds", "young_runs", "probe_transition",
                "run_noise", "rescale_stragglers", "probe_share_floor", "resume_bound", "judge_frontier",
                "probe_headroom"):
        if spec_config.get(key) is not None and scheduling != "confidence":
            raise ValueError(f"speculative_config.{key}: only used with scheduling='confidence'")
    if decode is not None:
        decode = _profile("decode_profile", decode)
    else:
        for key in ("measure_step_times", "measure_round_times", "measure_plain_steps", "min_gain", "drained_batches",
                    "probe_share", "probe_share_floor", "resume_bound", "probe_headroom"):
            if spec_config.get(key):
                verbs = {"min_gain": "scales", "drained_batches": "predicts", "probe_share": "prices",
                         "probe_share_floor": "prices", "resume_bound": "prices", "probe_headroom": "prices"}
                verb = verbs.get(key, "corrects")
                raise ValueError(f"speculative_config.{key}: {verb} the comparison with plain decoding, "
                                 f"so it needs decode_profile")
    if spec_config.get("measure_step_times") is True and spec_config.get("measure_round_times") is True:
        raise ValueError("speculative_config.measure_round_times: cannot be true with measure_step_times "
                         "(which times every step); choose one")
    if spec_config.get("measure_step_times") is True and spec_config.get("measure_plain_steps") is True:
        raise ValueError("speculative_config.measure_plain_steps: cannot be true with measure_step_times "
                         "(which times every step); choose one")
    if spec_config.get("decline_features") is True and spec_config.get("measure_step_times") is True:
        raise ValueError("speculative_config.decline_features: cannot be true with measure_step_times "
                         "(its timing reads every step's features)")
    # Lookup rounds run while DSpark is paused and reach its step timing as plain steps (session 32's
    # review): with `measure_step_times` prompt lookup is off by default, and asking for both raises.
    timed = _bool_key(spec_config, "measure_step_times", False)
    # The rounds timed by default where they can be: a decode profile to compare with, and no per-step timing.
    rounds = _bool_key(spec_config, "measure_round_times", decode is not None and not timed)
    lookup = _lookup_min(spec_config, LOOKUP_DEFAULT if scheduling == "confidence" and not timed else 0, 0)
    if lookup and timed:
        raise ValueError("speculative_config.prompt_lookup_min: cannot be used with measure_step_times (its "
                         "plain-step timing would include the lookup rounds); set prompt_lookup_min to 0")
    return dict(sps=sps, short_sps=short, decode=decode, probe_every=_int_key(spec_config, "probe_every", 8, 1),
                max_probe_every=_int_key(spec_config, "max_probe_every", 256, 1),
                defer_context=_bool_key(spec_config, "defer_context", True),
                decline_features=_bool_key(spec_config, "decline_features", True),
                measure_step_times=_bool_key(spec_config, "measure_step_times", False),
                measure_round_times=rounds,
                measure_plain_steps=_bool_key(spec_config, "measure_plain_steps", False),
                min_gain=_min_gain(spec_config),
                judge_stragglers=_bool_key(spec_config, "judge_stragglers", STRAGGLERS_DEFAULT),
                full_round=pricing == "full_round",
                opening_tokens=_int_key(spec_config, "opening_tokens", OPENING_TOKENS, 0),
                bound_only=_int_key(spec_config, "bound_only", BOUND_ONLY_DEFAULT, 0),
                overlap_bookkeeping=_bool_key(spec_config, "overlap_bookkeeping", OVERLAP_DEFAULT),
                lease_rounds=_int_key(spec_config, "lease_rounds", LEASE_DEFAULT, 0),
                bound_only_untimed=_bool_key(spec_config, "bound_only_untimed", UNTIMED_DEFAULT),
                pre_flush=_bool_key(spec_config, "pre_flush", PRE_FLUSH_DEFAULT),
                opening_runs=_bool_key(spec_config, "opening_runs", False),
                young_runs=_bool_key(spec_config, "young_runs", YOUNG_RUNS_DEFAULT),
                probe_transition=_bool_key(spec_config, "probe_transition", False),
                run_noise=_bool_key(spec_config, "run_noise", False),
                rescale_stragglers=_bool_key(spec_config, "rescale_stragglers", False),
                drained_batches=_bool_key(spec_config, "drained_batches", False),
                probe_share=_probe_share(spec_config),
                probe_share_floor=_probe_share(spec_config, "probe_share_floor"),
                resume_bound=_bool_key(spec_config, "resume_bound", False),
                probe_headroom=_headroom(spec_config),
                judge_frontier=_frontier_key(spec_config, STRAGGLERS_DEFAULT),
                acceptance_age_rounds=_int_key(spec_config, "acceptance_age_rounds", AGE_ROUNDS, 1),
                prompt_lookup_min=lookup, tail_rounds=_needs_lookup(spec_config, "tail_rounds", lookup),
                lookup_loops=_needs_lookup(spec_config, "lookup_loops", lookup))


# Checked by the engine before it loads the target (`deepinfer_core.interfaces.Proposer`).
dspark_factory.validate = _dspark_settings


LOOKUP_DEFAULT = 2      # `prompt_lookup_min` with confidence scheduling (H200, session 32: at or above DSpark
# alone in all six cells at 1 / 2 / 8 requests, +1.6 to +21 points; at 32-64 the same wrapper over no
# drafter, `ngram` load-aware, took no lookup round; with the drafter there not yet re-measured)
POOL_BLOCK_SIZE = 32   # positions per block of the drafter's context pool
BOUND_ONLY_DEFAULT = 1   # `bound_only` (H200, session 45: +12 points at 1 request over six processes)
STRAGGLERS_DEFAULT = True   # `judge_stragglers` (H200, session 49: +2.3 points at 8 requests over four processes)
LEASE_DEFAULT = 8   # `lease_rounds` (`DraftingLease`; session 52, on this CPU: -16 us of host work a drafted round
# at 1 request, the policy unchanged in `sim_engine_calls.py`; not yet measured on the H200)
UNTIMED_DEFAULT = True   # `bound_only_untimed` (H100s, session 52: the untimed default 0.97-0.99 of fixed-7 at 1
# request in three processes, the timed one 0.82-0.95 where its rounds paused it)
PRE_FLUSH_DEFAULT = True   # `pre_flush` (H100, session 62: a resumption 10.6 -> 9.0 ms at 8 requests; 1.009
# (0.979-1.034) of the engine without it there over four processes)
OVERLAP_DEFAULT = True   # `overlap_bookkeeping` (H200, session 46: +4.3 points at 1 request over six processes)
HEADROOM_DEFAULT = 0.5   # `probe_headroom` (H100 and H200, sessions 82-83: at 8 requests 1.009 (0.986-1.032) of the
# engine without it over 12 processes, 9 above 1; at 2 requests 1.004 (0.987-1.021) over 11; inert at 1 request)
YOUNG_RUNS_DEFAULT = True   # `young_runs` (H100, session 67: at 8 requests 1.016 (1.000-1.033) of the engine without
# it, 4 of 4 processes above; 1.002 (0.975-1.029) of plain decoding run again over 9 processes)


def _prepare(runner: DSparkDraftRunner, model_info: dict, k: int) -> None:
    """Readies the runner of a proposer that will serve: its context pool reserved for the
    engine's batch (`reserve_blocks`: `max_num_seqs` requests of `max_model_len` positions, no
    more than `kv_cache_tokens`; 64 requests of the drafter's `max_position_embeddings` and at
    most `RESERVE_BYTES` without those keys), then, on CUDA, every draft and context-projection
    graph the engine can use captured (`DSparkDraftRunner.capture_all`); a pool growth later
    would drop the draft graphs.

    Raises:
        ValueError: one of those `model_info` values is not an int >= 1 (`kv_cache_tokens`:
            >= 0) (named).
    """
    cfg = runner.drafter.config
    rows = _info_int(model_info, "max_num_seqs", 64)
    length = min(_info_int(model_info, "max_model_len", cfg.max_position_embeddings), cfg.max_position_embeddings)
    kv_tokens = _info_int(model_info, "kv_cache_tokens", None, minimum=0)   # 0: the core names kv_cache_memory
    position_bytes = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * runner.drafter.dtype.itemsize
    runner.context.reserve(reserve_blocks(rows, length, POOL_BLOCK_SIZE, position_bytes, kv_tokens))
    runner.capture_all(k, rows, length)


def _headroom(spec_config: dict) -> float | None:
    """`probe_headroom`: absent or None: `HEADROOM_DEFAULT` where decode_profile is set (None
    without it: there is no bound to price); 0: None (off); else a finite number > 0
    (`check_headroom`, which names the key)."""
    value = spec_config.get("probe_headroom")
    if value is None:
        return HEADROOM_DEFAULT if spec_config.get("decode_profile") is not None else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return None
    return check_headroom(value)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config` for DSpark through the engine: keys used without what they need, profiles
as dicts, bad profile values, unknown keys and paths of the wrong type are refused by name."""

from __future__ import annotations

import pytest

from deepinfer_dspark.sps import SPSProfile


def test_decode_profile_needs_confidence_scheduling(folders, kit) -> None:
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
            "decode_profile": SPSProfile([1], [1.0])}
    with pytest.raises(ValueError, match="speculative_config.decode_profile"):
        kit.build(target, spec)
    fixed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
             "sps_profile": SPSProfile([1], [1.0])}
    with pytest.raises(ValueError, match="^speculative_config.sps_profile: only used with scheduling='confidence'"):
        kit.build(target, fixed)
    short = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
             "sps_profile_k1": SPSProfile([2], [1.0])}
    with pytest.raises(ValueError, match="^speculative_config.sps_profile_k1: only used with scheduling='confidence'"):
        kit.build(target, short)
    timed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
             "sps_profile": SPSProfile([1], [1.0]), "measure_step_times": True}
    with pytest.raises(ValueError, match="^speculative_config.measure_step_times: .* needs decode_profile"):
        kit.build(target, timed)
    rounds = {**timed, "measure_step_times": None, "measure_round_times": True}
    with pytest.raises(ValueError, match="^speculative_config.measure_round_times: .* needs decode_profile"):
        kit.build(target, rounds)
    both = {**timed, "decode_profile": SPSProfile([1], [2.0]), "measure_round_times": True}
    with pytest.raises(ValueError, match="^speculative_config.measure_round_times: cannot be true with "
                                         "measure_step_times"):
        kit.build(target, both)
    with pytest.raises(ValueError, match="^speculative_config.measure_round_times"):
        kit.build(target, {**rounds, "decode_profile": SPSProfile([1], [2.0]), "measure_round_times": "yes"})
    fixed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "measure_round_times": True}
    with pytest.raises(ValueError, match="^speculative_config.measure_round_times: only used with scheduling"):
        kit.build(target, fixed)
    # A profile where drafting pays: the engine drafts, times its rounds, and stays lossless.
    paying = {**rounds, "sps_profile": SPSProfile([1, 64], [1000.0, 200.0]),
              "decode_profile": SPSProfile([1, 8], [500.0, 450.0])}
    llm = kit.build(target, paying)
    proposer = llm.engine.speculative.proposer
    assert proposer.measure_round_times and not proposer.measure_step_times and proposer.decline_features
    batch = kit.prompts(3, seed=5)
    assert kit.greedy(llm, batch) == kit.greedy(kit.build(target), batch)
    assert proposer.drafted_rounds > 0
    llm.close()


def test_profiles_as_dicts_and_bad_profile_values(folders, kit) -> None:
    """A profile may come as its dict form; anything else that is not a path is refused by key."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [600.0, 590.0]).to_dict(),
            "decode_profile": SPSProfile([1, 64], [1000.0, 990.0]).to_dict()}
    proposer = kit.build(target, spec).engine.speculative.proposer
    assert proposer.sps.batch_tokens == [1, 64] and proposer.decode.steps_per_s == [1000.0, 990.0]
    with pytest.raises(ValueError, match="^speculative_config.sps_profile: expected an SPSProfile"):
        kit.build(target, {**spec, "sps_profile": 3})
    with pytest.raises(ValueError, match="^speculative_config.sps_profile_k1: expected an SPSProfile"):
        kit.build(target, {**spec, "sps_profile_k1": [2.0]})
    with pytest.raises(ValueError, match="^speculative_config.sps_profile_k1: cannot load"):
        kit.build(target, {**spec, "sps_profile_k1": "/nonexistent/spec_k1_sps.json"})
    k1 = kit.build(target, {**spec, "sps_profile_k1": SPSProfile([2, 128], [900.0, 880.0]).to_dict()})
    assert k1.engine.speculative.proposer.verify_rates.short.steps_per_s == [900.0, 880.0]
    with pytest.raises(ValueError, match="^speculative_config.defer_context: must be a bool, got 'no'"):
        kit.build(target, {**spec, "defer_context": "no"})
    with pytest.raises(ValueError, match="^speculative_config.decode_profile: cannot load"):
        kit.build(target, {**spec, "decode_profile": {"format": "deepinfer-sps-profile", "version": 1,
                                                  "batch_tokens": [True, 2], "steps_per_s": [1.0, 1.0]}})


def test_unknown_keys_are_refused_by_name(folders, kit) -> None:
    """A misspelt knob must not be ignored silently, for either proposer."""
    target, drafter = folders
    with pytest.raises(ValueError, match="^speculative_config.prompt_lookup_maximum: unknown key for method 'ngram'"):
        kit.build(target, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_maximum": 2})
    with pytest.raises(ValueError, match="^speculative_config.probe_evry: unknown key for method 'dspark'"):
        kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 2, "probe_evry": 4})
    ngram = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 2}
    assert kit.build(target, ngram).engine.speculative


def test_paths_of_the_wrong_type_are_refused_by_name(folders, kit) -> None:
    """`model` and `calibration` take paths: another type names the key and what it takes."""
    target, drafter = folders
    with pytest.raises(ValueError,
                       match=r"^speculative_config.model: a DeepSpec DSpark checkpoint folder is required, got 5"):
        kit.build(target, {"method": "dspark", "num_speculative_tokens": 2, "model": 5})
    with pytest.raises(ValueError, match=r"^speculative_config.calibration: must be a path \(str or Path\), got 5"):
        kit.build(target, {"method": "dspark", "num_speculative_tokens": 2, "model": str(drafter), "calibration": 5})


def test_rounds_are_timed_by_default_where_they_can_be(folders, kit) -> None:
    """`measure_round_times` is on by default with a decode profile (session 36), off without one,
    with `measure_step_times` (which times every step), in a `deterministic` engine (decisions from
    the inputs only: core's `Proposer` contract; asking for it explicitly still turns it on) and when
    set to false."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [1000.0, 200.0]), "decode_profile": SPSProfile([1, 8], [500.0, 450.0])}

    def built(config: dict, deterministic: bool = False):
        return kit.build(target, config, deterministic=deterministic).engine.speculative.proposer

    assert built(spec).measure_round_times
    assert not built(spec, deterministic=True).measure_round_times
    assert built({**spec, "measure_round_times": True}, deterministic=True).measure_round_times
    assert not built({**spec, "measure_round_times": False}).measure_round_times
    assert not built({**spec, "decode_profile": None}).measure_round_times
    measured = built({**spec, "measure_step_times": True, "decline_features": False, "prompt_lookup_min": 0})
    assert measured.measure_step_times and not measured.measure_round_times

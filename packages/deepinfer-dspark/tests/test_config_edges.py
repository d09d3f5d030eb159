# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config` edges an adversarial review found (session 48): each is refused by name at
construction, or takes its default, instead of failing requests later or raising a foreign error."""

from __future__ import annotations

import json
import shutil

import pytest

from deepinfer_dspark.sps import SPSProfile


def spec(drafter, **extra) -> dict:
    return {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, **extra}


def test_a_drafter_shorter_than_max_model_len_is_refused_before_any_request(folders, kit, tmp_path) -> None:
    """A drafter covering 16 positions under an engine of max_model_len 160 once failed every
    request of a step (a short one too) when a long one passed position 16."""
    target, drafter = folders
    short = tmp_path / "short"
    shutil.copytree(drafter, short)
    config = json.loads((short / "config.json").read_text())
    (short / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 16}))
    with pytest.raises(ValueError, match=r"^speculative_config.model: the drafter covers 16 positions .* "
                                         r"max_model_len is 160"):
        kit.build(target, spec(short))
    # Within its reach: served to max_model_len, the last blocks (anchor + block_size past the
    # table) not drafted (session 48's review: they failed both requests of the round).
    from deepinfer_core import SamplingParams

    prompts = [{"prompt_token_ids": p[:6]} for p in kit.prompts(2, seed=3)]
    params = SamplingParams(temperature=0, max_tokens=50, ignore_eos=True)
    llm = kit.build(target, spec(short), max_model_len=16)
    outs = llm.generate(prompts, params)
    plain = kit.build(target, max_model_len=16).generate(prompts, params)
    assert all(o.error is None for o in outs), [o.error for o in outs]
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in plain]
    assert len(outs[0].outputs[0].token_ids) == 10 and llm.engine.speculative.proposer.drafted_rounds > 0
    llm.close()


def test_profiles_from_arrays_and_tensors_still_load() -> None:
    import numpy as np
    import torch

    for rates in (np.array([900.0, 800.0]), torch.tensor([900.0, 800.0]), [np.float32(900.0), 800.0]):
        assert SPSProfile([1, 8], rates).steps_per_s == [900.0, 800.0]


@pytest.mark.parametrize("rates", [[1e-200], [2e9], [float("nan")]])
def test_profile_rates_outside_physical_bounds_are_refused(rates) -> None:
    """A rate of 1e-200 steps/s passed the old check and, times a measured correction, underflowed
    to a plain rate of 0: every request then failed with a ZeroDivisionError in the pricing."""
    with pytest.raises(ValueError, match=r"^steps_per_s: must be within"):
        SPSProfile([8], rates)


def test_malformed_profile_lists_are_refused_by_field(folders, kit) -> None:
    target, drafter = folders
    good = SPSProfile([1, 8], [900.0, 800.0]).to_dict()
    cases = {"steps_per_s: must be a list": {**good, "steps_per_s": None},
             "batch_tokens: must be a list": {**good, "batch_tokens": 5},
             "steps_per_s: must be numbers: int too large": {**good, "steps_per_s": [10**400, 800.0]},
             "batch_tokens: must be strictly increasing positive ints below": {**good, "batch_tokens": [1, 10**400]},
             "steps_per_s: must be numbers": {**good, "steps_per_s": ["900", 800.0]}}
    for message, profile in cases.items():
        with pytest.raises(ValueError, match=rf"^speculative_config.sps_profile: cannot load .*{message}"):
            kit.build(target, spec(drafter, scheduling="confidence", sps_profile=profile))


def test_a_corrupt_checkpoint_is_named_with_its_key(folders, kit, tmp_path) -> None:
    target, drafter = folders
    broken = tmp_path / "broken"
    shutil.copytree(drafter, broken)
    (broken / "model.safetensors").write_bytes(b"\x01\x00")
    with pytest.raises(ValueError, match=r"^speculative_config.model: cannot load .*broken"):
        kit.build(target, spec(broken))


@pytest.mark.parametrize("model", ["", "x" * 5000])
def test_an_empty_or_overlong_model_path_is_refused_by_name(folders, kit, model) -> None:
    target, _ = folders
    with pytest.raises(ValueError, match=r"^speculative_config.model: a DeepSpec DSpark checkpoint folder"):
        kit.build(target, {"method": "dspark", "model": model, "num_speculative_tokens": 4})


def test_null_scheduling_is_fixed_and_probe_keys_need_confidence(folders, kit) -> None:
    target, drafter = folders
    llm = kit.build(target, spec(drafter, scheduling=None))
    assert llm.engine.speculative.proposer.sps is None   # fixed length: no profile read
    llm.close()
    for key in ("probe_every", "max_probe_every"):
        with pytest.raises(ValueError, match=rf"^speculative_config.{key}: only used with scheduling='confidence'"):
            kit.build(target, spec(drafter, **{key: 3}))
    with pytest.raises(ValueError, match=r"^speculative_config.scheduling: expected 'fixed' or 'confidence'"):
        kit.build(target, spec(drafter, scheduling=["confidence"]))

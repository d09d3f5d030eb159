# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""QA regressions (session 2).

- The `ngram` and `dspark` proposer factories turn every malformed `speculative_config` value into
  a ValueError naming `speculative_config.<key>` (they used to leak TypeError, FileNotFoundError
  or messages naming internal fields), before the engine serves anything.
- `deepinfer-dspark calibrate` works for a drafter whose checkpoint omits the embedding and LM
  head (shared with the target, as DeepSpec allows); it used to fail with "missing keys".
- `deepinfer-dspark train | calibrate` reject bad flags before any work (they used to be checked
  only after the slow generation step, or never), naming the flag.
"""

from __future__ import annotations

import json

import pytest
from safetensors.torch import save_file

from deepinfer_core import LLM

from deepinfer_dspark import SequentialTemperatureScaling
from deepinfer_dspark.train.cli import main
from deepinfer_dspark.train.tiny import build_tiny_target

VOCAB = 128
TARGET = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": VOCAB, "hidden_size": 64,
          "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 512,
          "tie_word_embeddings": False, "eos_token_id": VOCAB - 1, "torch_dtype": "float32"}


def write_drafter(folder, tiny, **overrides):
    """A DeepSpec drafter folder without embedding and LM head (they are the target's)."""
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(**{"vocab_size": VOCAB, "num_target_layers": 4, "target_layer_ids": [0, 2],
                            "mask_token_id": VOCAB - 3, **overrides})
    state = random_state_dict(config, seed=3)
    del state["embed_tokens.weight"], state["lm_head.weight"]
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    save_file(state, str(folder / "model.safetensors"))
    return folder


@pytest.fixture
def folders(tmp_path, tiny):
    target = tmp_path / "target"
    target.mkdir()
    (target / "config.json").write_text(json.dumps(TARGET))
    (tmp_path / "empty").mkdir()
    (tmp_path / "not_a_profile.json").write_text(json.dumps({"batch_tokens": [1]}))
    SequentialTemperatureScaling((1.0, 1.0)).save(tmp_path / "two_temperatures.json")
    return target, write_drafter(tmp_path / "drafter", tiny), tmp_path


def build(target, spec) -> LLM:
    return LLM(str(target), load_format="dummy", dtype="float32", max_model_len=64, block_size=4,
               kv_cache_memory=8 << 20, speculative_config=spec)


NGRAM_CASES = [
    ({"prompt_lookup_min": "x"}, "prompt_lookup_min"),
    ({"prompt_lookup_min": 0}, "prompt_lookup_min"),
    ({"prompt_lookup_min": 2.5}, "prompt_lookup_min"),
    ({"prompt_lookup_min": True}, "prompt_lookup_min"),
    ({"prompt_lookup_max": "4"}, "prompt_lookup_max"),
    ({"prompt_lookup_min": 3, "prompt_lookup_max": 2}, "prompt_lookup_max"),
]


@pytest.mark.parametrize("extra,key", NGRAM_CASES)
def test_ngram_config_errors_name_the_key(folders, extra, key) -> None:
    target, _, _ = folders
    with pytest.raises(ValueError, match=f"speculative_config.{key}"):
        build(target, {"method": "ngram", "num_speculative_tokens": 3, **extra})


def test_ngram_null_keys_take_their_defaults(folders) -> None:
    """`null` means the default, as for every `speculative_config` key (1 and 4)."""
    target, _, _ = folders
    llm = build(target, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": None,
                         "prompt_lookup_max": None})
    lookup = llm.engine.speculative.proposer.lookup
    assert (lookup.min_n, lookup.max_n) == (1, 4)


# (overrides of the spec, key the message must name); "{tmp}" is the test's temporary folder.
DSPARK_CASES = [
    ({"model": 5}, "model"),
    ({"model": "{tmp}/empty"}, "model"),
    ({"model": "{tmp}/target"}, "model"),                    # config.json but no safetensors
    ({"scheduling": "confidence", "sps_profile": "{tmp}/missing.json"}, "sps_profile"),
    ({"scheduling": "confidence", "sps_profile": "{tmp}/not_a_profile.json"}, "sps_profile"),
    ({"scheduling": "confidence", "sps_profile": 5}, "sps_profile"),
    ({"calibration": "{tmp}/missing.json"}, "calibration"),
    ({"calibration": "{tmp}/not_a_profile.json"}, "calibration"),
    ({"calibration": "{tmp}/two_temperatures.json"}, "calibration"),  # the drafter's block_size is 4
    ({"num_speculative_tokens": 5}, "num_speculative_tokens"),        # > the drafter's block_size
]


@pytest.mark.parametrize("extra,key", DSPARK_CASES)
def test_dspark_config_errors_name_the_key(folders, extra, key) -> None:
    target, drafter, tmp = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
    spec.update({k: v.format(tmp=tmp) if isinstance(v, str) else v for k, v in extra.items()})
    with pytest.raises(ValueError, match=f"speculative_config.{key}"):
        build(target, spec)


# Checkable without the drafter or the target: raised before the target loads.
EARLY_CASES = [
    ({"method": "ngram", "prompt_lookup_maxx": 3}, "prompt_lookup_maxx"),
    ({"method": "ngram", "prompt_lookup_min": 0}, "prompt_lookup_min"),
    ({"method": "dspark", "model": "{drafter}", "prob_every": 2}, "prob_every"),
    ({"method": "dspark", "model": "{tmp}/missing"}, "model"),
    ({"method": "dspark", "model": "{drafter}", "scheduling": "confident"}, "scheduling"),
    ({"method": "dspark", "model": "{drafter}", "scheduling": "confidence", "sps_profile": 5}, "sps_profile"),
    ({"method": "dspark", "model": "{drafter}", "probe_every": -1}, "probe_every"),
    ({"method": "nope"}, "method"),
]


@pytest.mark.parametrize("spec,key", EARLY_CASES)
def test_config_errors_come_before_the_target_loads(folders, monkeypatch, spec, key) -> None:
    """The factories' `validate` (called by the engine before loading anything) names the key at
    once; a misspelt knob used to surface only after the weights loaded (~8 s for SmolLM2)."""
    import deepinfer_core.llm as llm_module

    target, drafter, tmp = folders

    def never(*args, **kwargs):
        raise AssertionError("the target was loaded before the speculative config was checked")

    monkeypatch.setattr(llm_module, "load_model_config", never)
    spec = {k: v.format(tmp=tmp, drafter=drafter) if isinstance(v, str) else v for k, v in spec.items()}
    with pytest.raises(ValueError, match=f"speculative_config.{key}"):
        build(target, {"num_speculative_tokens": 3, **spec})


def test_dspark_drafter_for_a_deeper_target_is_rejected_at_build(folders, tiny) -> None:
    target, _, tmp = folders  # the target has 4 layers; this drafter reads layer 8 of a 12-layer one
    deeper = write_drafter(tmp / "deeper", tiny, num_target_layers=12, target_layer_ids=[0, 8])
    with pytest.raises(ValueError, match="speculative_config"):
        build(target, {"method": "dspark", "model": str(deeper), "num_speculative_tokens": 4})


SMALL = ["--num-prompts", "2", "--max-prompt-chars", "80", "--max-new-tokens", "8", "--device", "cpu"]


@pytest.fixture(scope="module")
def tiny_target(tmp_path_factory):
    return build_tiny_target(tmp_path_factory.mktemp("tiny") / "target")


def test_calibrate_a_drafter_that_shares_the_targets_embedding(tiny_target, tmp_path, tiny) -> None:
    drafter = write_drafter(tmp_path / "drafter", tiny, vocab_size=259, mask_token_id=256)
    main(["calibrate", "--target", str(tiny_target), "--drafter", str(drafter), *SMALL, "--anchors", "2"])
    assert len(SequentialTemperatureScaling.load(drafter / "calibration.json").temperatures) == 4


TRAIN_FLAGS = [
    (["--device", "bogus"], "--device"),
    (["--num-prompts", "0"], "--num-prompts"),
    (["--num-prompts", "-3"], "--num-prompts"),
    (["--num-calibration-prompts", "-1"], "--num-calibration-prompts"),
    (["--max-new-tokens", "0"], "--max-new-tokens"),
    (["--max-prompt-chars", "0"], "--max-prompt-chars"),
    (["--max-num-seqs", "0"], "--max-num-seqs"),
    (["--layers", "0"], "--layers"),
    (["--block-size", "0"], "--block-size"),
    (["--markov-rank", "-1"], "--markov-rank"),
    (["--mask-token-id", "-1"], "--mask-token-id"),
    (["--calibration-anchors", "0"], "--calibration-anchors"),
    (["--target-layer-ids", ","], "--target-layer-ids"),
]


@pytest.mark.parametrize("flags,name", TRAIN_FLAGS)
def test_train_rejects_bad_flags_before_any_work(tmp_path, flags, name) -> None:
    # A missing target would fail the first piece of work: the flag must be named before it.
    with pytest.raises(ValueError, match=name):
        main(["train", "--target", str(tmp_path / "none"), "--out", str(tmp_path / "out"), *flags])


CALIBRATE_FLAGS = [
    (["--drafter", "{tmp}/missing"], "--drafter"),
    (["--drafter", "{tmp}"], "--drafter"),                     # a folder without config.json
    (["--drafter", "{drafter}", "--prompt-offset", "-1"], "--prompt-offset"),
    (["--drafter", "{drafter}", "--anchors", "0"], "--anchors"),
    (["--drafter", "{drafter}", "--num-prompts", "0"], "--num-prompts"),
    (["--drafter", "{drafter}", "--device", "bogus"], "--device"),
]


@pytest.mark.parametrize("flags,name", CALIBRATE_FLAGS)
def test_calibrate_rejects_bad_flags_before_any_work(tmp_path, tiny, flags, name) -> None:
    drafter = write_drafter(tmp_path / "drafter", tiny)
    flags = [f.format(tmp=tmp_path, drafter=drafter) for f in flags]
    with pytest.raises(ValueError, match=name):
        main(["calibrate", "--target", str(tmp_path / "none"), *flags])

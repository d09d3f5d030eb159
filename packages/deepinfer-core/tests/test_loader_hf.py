# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""HF folder loading: config translation against transformers' config objects, and bad paths."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from transformers import AutoConfig

from deepinfer_core.config import EngineConfig, ModelConfig
from deepinfer_core.loader import iter_weights, load_model_config
from deepinfer_core.loader.hf import iter_hf_weights
from safetensors.torch import load_file

FAMILIES = ["llama", "llama-linear", "qwen2", "qwen3"]


@pytest.mark.parametrize("family", FAMILIES)
def test_config_matches_transformers(family, tiny_checkpoint):
    folder = tiny_checkpoint(family)
    ours, ref = load_model_config(folder), AutoConfig.from_pretrained(str(folder))
    assert ours.architecture == ref.architectures[0] and ours.format == "hf"
    for field in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                  "num_key_value_heads", "max_position_embeddings", "tie_word_embeddings", "rms_norm_eps"):
        assert getattr(ours, field) == getattr(ref, field), field
    assert ours.head_dim == getattr(ref, "head_dim", ref.hidden_size // ref.num_attention_heads)
    rope = dict(ref.rope_parameters)
    assert ours.rope_theta == rope.pop("rope_theta")
    assert ours.rope_scaling == (None if rope.get("rope_type", "default") == "default" else rope)
    assert ours.checkpoint_dtype == torch.float32 and ours.eos_token_ids == (ref.eos_token_id,)


def test_weights_stream_every_safetensors_tensor(tiny_checkpoint):
    folder = tiny_checkpoint("qwen3")
    ref = load_file(str(folder / "model.safetensors"))
    ours = dict(iter_weights(load_model_config(folder)))
    assert ours.keys() == ref.keys()
    assert all(torch.equal(ours[k], ref[k]) for k in ref)


def test_legacy_v4_rope_keys_are_read(tmp_path):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 10, "hidden_size": 8,
           "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "rope_theta": 5e5,
           "rope_scaling": {"type": "linear", "factor": 4.0}, "torch_dtype": "bfloat16"}
    mc = ModelConfig.from_hf_dict(cfg, tmp_path)
    assert mc.rope_theta == 5e5 and mc.rope_scaling == {"rope_type": "linear", "factor": 4.0}
    assert mc.num_key_value_heads == 2 and mc.head_dim == 4 and mc.checkpoint_dtype == torch.bfloat16
    assert mc.resolve_dtype("auto", "cpu") == torch.bfloat16 and mc.resolve_dtype("float32", "cpu") == torch.float32


def test_generation_config_eos_is_merged(tiny_checkpoint, tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint("llama"), folder)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [258, 7]}))
    assert load_model_config(folder).eos_token_ids == (258, 7)


@pytest.mark.parametrize("case", ["missing", "no_config", "bad_json", "not_gguf_file", "no_weights", "no_arch"])
def test_bad_model_paths_raise_value_error_naming_model(case, tmp_path, tiny_checkpoint):
    path = tmp_path / "m"
    if case == "missing":
        pass
    elif case == "not_gguf_file":
        path = tmp_path / "weights.bin"
        path.write_bytes(b"\0")
    else:
        path.mkdir()
        if case == "bad_json":
            (path / "config.json").write_text("{not json")
        elif case == "no_arch":
            (path / "config.json").write_text(json.dumps({"hidden_size": 8}))
        elif case == "no_weights":
            shutil.copy(tiny_checkpoint("llama") / "config.json", path / "config.json")
    with pytest.raises(ValueError, match="model"):
        mc = load_model_config(path)
        list(iter_hf_weights(mc.path))


def test_unsupported_rope_type_named(tmp_path):
    cfg = {"architectures": ["LlamaForCausalLM"], "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
           "num_hidden_layers": 1, "num_attention_heads": 2, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    with pytest.raises(ValueError, match="dynamic.*supported"):
        ModelConfig.from_hf_dict(cfg, tmp_path)


@pytest.mark.parametrize("field,value", [("block_size", 0), ("kv_cache_memory", -1), ("dtype", "int8"),
                                         ("max_num_seqs", 1.5), ("max_model_len", 0), ("device", "nodevice")])
def test_engine_config_validation_names_field(field, value):
    with pytest.raises(ValueError, match=field):
        EngineConfig(**{field: value})

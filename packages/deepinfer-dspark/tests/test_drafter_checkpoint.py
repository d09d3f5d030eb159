# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepSpec checkpoint format: config keys, tensor names/shapes, errors, target aliasing."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from deepinfer_dspark.checkpoint import expected_shapes, load_checkpoint, load_state_dict
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.drafter import DSparkDrafter

REQUIRED = ["hidden_size", "num_attention_heads", "vocab_size", "intermediate_size",
            "num_hidden_layers", "block_size", "mask_token_id", "target_layer_ids", "markov_rank"]


def drafter_for(config: dict) -> DSparkDrafter:
    return DSparkDrafter(DSparkConfig.from_dict(config))


def test_config_fields(tiny):
    tiny_config = tiny[0]
    cfg = DSparkConfig.from_dict(tiny_config())
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size, cfg.markov_rank) == (64, 2, 128, 16)
    assert (cfg.head_dim, cfg.num_key_value_heads, cfg.block_size, cfg.mask_token_id) == (16, 2, 4, 127)
    assert cfg.target_layer_ids == (0, 2, 4) and cfg.feature_size == 192
    assert cfg.enable_confidence_head and cfg.confidence_head_with_markov
    assert cfg.rope_theta == 10000.0 and cfg.rope_scaling is None
    v5 = tiny_config(rope_parameters={"rope_type": "yarn", "rope_theta": 5e5, "factor": 4.0},
                     dspark_target_layer_ids=[1, 3])
    del v5["target_layer_ids"], v5["rope_theta"]
    cfg = DSparkConfig.from_dict(v5)
    assert cfg.rope_theta == 5e5 and cfg.rope_scaling == {"rope_type": "yarn", "factor": 4.0}
    assert cfg.target_layer_ids == (1, 3)
    no_markov = tiny_config(markov_rank=0, confidence_head_with_markov=False)
    assert DSparkConfig.from_dict(no_markov).markov_head_type == "none"


@pytest.mark.parametrize("key", REQUIRED)
def test_config_missing_key_is_named(tiny, key):
    config = tiny[0]()
    del config[key]
    with pytest.raises(ValueError, match=key):
        DSparkConfig.from_dict(config)


@pytest.mark.parametrize("override,key", [
    ({"markov_head_type": "lstm"}, "markov_head_type"),
    ({"target_layer_ids": [4, 2]}, "target_layer_ids"),
    ({"target_layer_ids": [0, 6]}, "target_layer_ids"),
    ({"mask_token_id": 128}, "mask_token_id"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"layer_types": ["sliding_attention", "full_attention"]}, "layer_types"),
    ({"markov_rank": 0}, "confidence_head_with_markov"),
    ({"block_size": 0}, "block_size"),
    ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "rope_type"),
])
def test_config_bad_value_is_named(tiny, override, key):
    with pytest.raises(ValueError, match=key):
        DSparkConfig.from_dict(tiny[0](**override))


@pytest.mark.parametrize("head_type", ["vanilla", "gated", "rnn"])
@pytest.mark.parametrize("with_markov", [True, False])
def test_key_table_and_round_trip(tiny, head_type, with_markov):
    tiny_config, deepspec_shapes, random_state_dict = tiny
    config = tiny_config(markov_head_type=head_type, confidence_head_with_markov=with_markov)
    drafter = drafter_for(config)
    assert expected_shapes(drafter) == deepspec_shapes(config)
    state = random_state_dict(config, seed=2)
    load_state_dict(drafter, state)
    for key, value in state.items():
        assert torch.equal(drafter.get_parameter(key), value), key


def test_no_markov_no_confidence(tiny):
    tiny_config, deepspec_shapes, random_state_dict = tiny
    config = tiny_config(markov_rank=0, enable_confidence_head=False)
    drafter = drafter_for(config)
    assert drafter.markov_head is None and drafter.confidence_head is None
    assert expected_shapes(drafter) == deepspec_shapes(config)
    load_state_dict(drafter, random_state_dict(config))


def test_missing_unexpected_and_shape_errors_name_the_key(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type="gated")
    state = random_state_dict(config)
    for key in ("layers.1.self_attn.k_norm.weight", "markov_head.gate_proj.bias", "fc.weight"):
        broken = {k: v for k, v in state.items() if k != key}
        with pytest.raises(ValueError, match="missing.*" + key.replace(".", r"\.")):
            load_state_dict(drafter_for(config), broken)
    for key in ("markov_head.joint_proj.weight", "d2t", "model.norm.weight"):
        with pytest.raises(ValueError, match="unexpected.*" + key.replace(".", r"\.")):
            load_state_dict(drafter_for(config), {**state, key: torch.ones(3)})
    bad = {**state, "layers.0.mlp.up_proj.weight": torch.ones(64, 96)}
    with pytest.raises(ValueError, match=r"layers\.0\.mlp\.up_proj\.weight"):
        load_state_dict(drafter_for(config), bad)


def test_compile_prefix_is_stripped(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config()
    state = random_state_dict(config, seed=4)
    prefixed = {("_orig_mod." + k if i % 2 else k): v for i, (k, v) in enumerate(state.items())}
    drafter = drafter_for(config)
    load_state_dict(drafter, prefixed)
    assert all(torch.equal(drafter.get_parameter(k), v) for k, v in state.items())


def test_embedding_and_head_alias_the_target(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config()
    state = random_state_dict(config, seed=5)
    target_embed, target_head = torch.randn(128, 64), torch.randn(128, 64)
    omitted = {k: v for k, v in state.items() if k not in ("embed_tokens.weight", "lm_head.weight")}

    drafter = drafter_for(config)
    load_state_dict(drafter, omitted, target_embed, target_head)
    assert drafter.embed_tokens.weight.data_ptr() == target_embed.data_ptr()
    assert drafter.lm_head.weight.data_ptr() == target_head.data_ptr()

    same = {**omitted, "embed_tokens.weight": target_embed.clone(), "lm_head.weight": target_head.clone()}
    drafter = drafter_for(config)
    load_state_dict(drafter, same, target_embed, target_head)
    assert drafter.lm_head.weight.data_ptr() == target_head.data_ptr()

    drafter = drafter_for(config)
    load_state_dict(drafter, state, target_embed, target_head)     # differing copies: kept
    assert drafter.lm_head.weight.data_ptr() != target_head.data_ptr()
    assert torch.equal(drafter.lm_head.weight, state["lm_head.weight"])
    assert not drafter.lm_head.weight.requires_grad

    tied = tiny_config(tie_word_embeddings=True)
    drafter = drafter_for(tied)
    load_state_dict(drafter, omitted, target_embed)
    assert drafter.lm_head.weight is drafter.embed_tokens.weight
    assert drafter.embed_tokens.weight.data_ptr() == target_embed.data_ptr()

    with pytest.raises(ValueError, match=r"missing.*embed_tokens\.weight"):
        load_state_dict(drafter_for(config), omitted, None, target_head)
    with pytest.raises(ValueError, match=r"lm_head\.weight"):
        load_state_dict(drafter_for(config), omitted, target_embed, torch.randn(127, 64))


def test_load_checkpoint_folder(tiny, tmp_path):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type="rnn")
    state = random_state_dict(config, seed=6)
    keys = sorted(state)
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file({k: state[k] for k in keys[::2]}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({k: state[k] for k in keys[1::2]}, str(tmp_path / "model-00002-of-00002.safetensors"))
    drafter = load_checkpoint(tmp_path)
    assert not drafter.training
    assert all(torch.equal(drafter.get_parameter(k), v) for k, v in state.items())
    (tmp_path / "config.json").unlink()
    with pytest.raises(ValueError, match="config.json"):
        load_checkpoint(tmp_path)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Model registry and weight-loading errors."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import iter_weights, load_model_config
from deepinfer_core.models.registry import build_model, get_model_class, supported_architectures


def test_supported_architectures():
    assert supported_architectures() == ["LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"]
    assert get_model_class("Qwen3ForCausalLM").qk_norm


def test_unsupported_architecture_names_it_and_the_supported_list(tiny_checkpoint, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(tiny_checkpoint("llama"), folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["architectures"] = ["MixtralForCausalLM"]
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"'MixtralForCausalLM'.*LlamaForCausalLM.*Qwen3ForCausalLM"):
        ModelRunner(load_model_config(folder), EngineConfig())


@pytest.fixture
def model_and_weights(tiny_checkpoint):
    cfg = load_model_config(tiny_checkpoint("qwen2"))
    return build_model(cfg, torch.float32, "cpu"), dict(iter_weights(cfg))


def test_loaded_weights_equal_checkpoint(model_and_weights):
    model, weights = model_and_weights
    model.load_weights(weights.items())
    attn = model.model.layers[1].self_attn
    q, k, v = attn.qkv_proj.split(attn.qkv_proj.weight.T)
    assert torch.equal(q.T, weights["model.layers.1.self_attn.q_proj.weight"])
    assert torch.equal(v.T, weights["model.layers.1.self_attn.v_proj.weight"])
    assert torch.equal(attn.qkv_proj.bias[-v.shape[1]:], weights["model.layers.1.self_attn.v_proj.bias"])
    up = model.model.layers[0].mlp.gate_up_proj.weight[model.config.intermediate_size:]
    assert torch.equal(up, weights["model.layers.0.mlp.up_proj.weight"])


def test_missing_weight_is_reported(model_and_weights):
    model, weights = model_and_weights
    del weights["model.layers.1.self_attn.k_proj.weight"]
    with pytest.raises(ValueError, match=r"weights: .*model.layers.1.self_attn.qkv_proj.weight#1"):
        model.load_weights(weights.items())


def test_unknown_weight_is_reported(model_and_weights):
    model, weights = model_and_weights
    weights["model.layers.0.self_attn.rel_bias.weight"] = torch.zeros(3)
    with pytest.raises(ValueError, match="rel_bias"):
        model.load_weights(weights.items())


def test_shape_mismatch_is_reported(model_and_weights):
    model, weights = model_and_weights
    weights["model.norm.weight"] = torch.ones(7)
    with pytest.raises(ValueError, match=r"model.norm.weight.*\(7,\)"):
        model.load_weights(weights.items())

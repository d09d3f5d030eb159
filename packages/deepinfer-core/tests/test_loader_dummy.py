# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`load_format="dummy"`: random weights for a folder holding only config.json."""

from __future__ import annotations

import pytest
import torch
import transformers

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.layers.norm import RMSNorm
from deepinfer_core.loader import load_model_config
from deepinfer_core.loader.dummy import INIT_STD


@pytest.fixture(scope="module")
def config_only(tmp_path_factory):
    folder = tmp_path_factory.mktemp("config-only-qwen3")
    cfg = transformers.Qwen3Config(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                   max_position_embeddings=256, eos_token_id=7, tie_word_embeddings=False,
                                   architectures=["Qwen3ForCausalLM"])
    cfg.save_pretrained(str(folder))
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]
    return folder


def runner(folder, seed=0) -> ModelRunner:
    return ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), load_format="dummy", seed=seed,
                                                               dtype="float32"))


def test_dummy_weights_follow_the_hf_init_convention(config_only):
    # HF's own default for these configs is initializer_range 0.02, normal matrices, unit norms.
    assert transformers.Qwen3Config().initializer_range == INIT_STD
    model = runner(config_only).model
    norms = {id(p) for m in model.modules() if isinstance(m, RMSNorm) for p in m.parameters()}
    assert norms
    for name, param in model.named_parameters():
        if id(param) in norms:
            assert torch.equal(param, torch.ones_like(param)), name
        elif param.numel() >= 4096:
            assert abs(param.float().std().item() - INIT_STD) < 0.1 * INIT_STD, name
            assert abs(param.float().mean().item()) < 0.1 * INIT_STD, name


def test_dummy_weights_are_seeded(config_only):
    a = dict(runner(config_only, seed=1).model.named_parameters())
    b = dict(runner(config_only, seed=1).model.named_parameters())
    c = dict(runner(config_only, seed=2).model.named_parameters())
    name = "model.layers.0.self_attn.o_proj.weight"
    assert torch.equal(a[name], b[name])
    assert not torch.equal(a[name], c[name])


def test_generate_on_config_only_folder(config_only):
    llm = LLM(model=str(config_only), load_format="dummy", dtype="float32", kv_cache_memory=2**20)
    assert len(llm.get_tokenizer()) == 300
    outs = llm.generate([{"prompt_token_ids": [5, 9, 33]}, {"prompt_token_ids": list(range(10, 30))}],
                        SamplingParams(temperature=0, max_tokens=6, ignore_eos=True))
    for out in outs:
        ids = out.outputs[0].token_ids
        assert len(ids) == 6 and all(0 <= t < 300 for t in ids)
        # the placeholder tokenizer decodes token i as "<i>"
        assert out.outputs[0].text.split() == [f"<{t}>" for t in ids]


def test_bad_load_format_is_named(config_only):
    with pytest.raises(ValueError, match="load_format"):
        LLM(model=str(config_only), load_format="pt")


def test_auto_load_format_still_needs_weights(config_only):
    with pytest.raises((ValueError, FileNotFoundError, OSError)):
        LLM(model=str(config_only), dtype="float32", kv_cache_memory=2**20)

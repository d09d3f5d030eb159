# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The real default model (SmolLM2-135M-Instruct, Q4_1 GGUF): greedy tokens equal transformers'.

Both sides read the same GGUF: transformers dequantizes it into its own LlamaForCausalLM
(float32); we load it through `assets.default_model_path()` into the ModelRunner. 32 greedy
tokens for three chat prompts must be identical (runner-level greedy loop, paged KV cache).
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from deepinfer_core import assets
from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import load_model_config

NEW_TOKENS = 32
CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Write a haiku about the sea."}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "List three prime numbers."}],
]


@pytest.fixture(scope="module")
def gguf_path():
    return assets.default_model_path()


@pytest.fixture(scope="module")
def hf_pair(gguf_path):
    kwargs = {"gguf_file": gguf_path.name}
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), **kwargs)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **kwargs).eval()
    return tokenizer, model


@pytest.fixture(scope="module")
def runner(gguf_path):
    runner = ModelRunner(load_model_config(gguf_path), EngineConfig(model=str(gguf_path), block_size=16))
    runner.allocate_kv_cache(16)
    return runner


@torch.no_grad()
def hf_greedy(model, prompt: list[int]) -> list[int]:
    out, cache, inp = [], None, torch.tensor([prompt])
    for _ in range(NEW_TOKENS):
        res = model(input_ids=inp, cache=cache, use_cache=True)
        cache = res.cache
        out.append(int(res.logits[0, -1].argmax()))
        inp = torch.tensor([[out[-1]]])
    return out


def runner_greedy(runner: ModelRunner, prompt: list[int]) -> list[int]:
    tokens, computed, blocks = list(prompt), 0, [7, 3, 11, 0, 5]  # 80 slots, scattered blocks
    for k, v in runner.kv_caches:
        k.fill_(float("nan"))
        v.fill_(float("nan"))
    for _ in range(NEW_TOKENS):
        out = runner.execute_model([ScheduledChunk(tokens[computed:], computed, blocks, sample=True)])
        computed = len(tokens)
        tokens.append(int(out.logits[0].argmax()))
    return tokens[len(prompt):]


def test_config_from_gguf_metadata(runner, hf_pair):
    cfg, hf_cfg = runner.model_config, hf_pair[1].config
    assert cfg.architecture == "LlamaForCausalLM" and cfg.format == "gguf"
    for field in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                  "num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings"):
        assert getattr(cfg, field) == getattr(hf_cfg, field), field
    assert cfg.rope_theta == pytest.approx(hf_cfg.rope_parameters["rope_theta"])
    assert cfg.rms_norm_eps == pytest.approx(hf_cfg.rms_norm_eps)


@pytest.mark.parametrize("chat", range(len(CHATS)))
def test_greedy_tokens_match_transformers(chat, runner, hf_pair):
    tokenizer, model = hf_pair
    text = tokenizer.apply_chat_template(CHATS[chat], add_generation_prompt=True, tokenize=False)
    prompt = tokenizer(text, add_special_tokens=False).input_ids
    expected = hf_greedy(model, prompt)
    assert runner_greedy(runner, prompt) == expected

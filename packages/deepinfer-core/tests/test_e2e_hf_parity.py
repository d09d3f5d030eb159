# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""End to end through `LLM.generate`: greedy tokens equal HF transformers' `generate`.

Tiny random-weight Llama / Qwen2 / Qwen3 checkpoints (conftest `tiny_checkpoint`), prompts of
different lengths alone, batched together, with chunked prefill forced by a small token
budget, and with preemption forced by a tiny KV pool.
"""

from __future__ import annotations

import zlib

import pytest
import torch
from transformers import AutoModelForCausalLM

from deepinfer_core import LLM, SamplingParams

STEPS = 32
BLOCK = 4
MAX_LEN = 96


def fresh_prompts(vocab: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (n,), generator=g).tolist() for n in (3, 11, 26, 45)]


def hf_greedy(folder, prompts: list[list[int]]) -> list[list[int]]:
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager")
    model.generation_config.eos_token_id = None  # run all STEPS, as ignore_eos does
    outs = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        gen = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=STEPS, do_sample=False,
                             pad_token_id=0)
        outs.append(gen[0, len(prompt):].tolist())
    return outs


def engine_greedy(llm: LLM, prompts: list[list[int]]) -> list[list[int]]:
    params = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True)
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params)
    assert all(o.error is None and o.outputs[0].finish_reason == "length" for o in outs)
    return [o.outputs[0].token_ids for o in outs]


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3"])
def test_greedy_parity_alone_batched_chunked_and_preempted(tiny_checkpoint, family: str) -> None:
    folder = tiny_checkpoint(family)
    roomy = LLM(str(folder), max_model_len=MAX_LEN, block_size=BLOCK, kv_cache_memory=64 << 20)
    prompts = fresh_prompts(roomy.engine.vocab_size, seed=zlib.crc32(family.encode()))
    expected = hf_greedy(folder, prompts)
    assert len({tuple(e) for e in expected}) == len(expected)  # the tiny model is not degenerate

    assert [engine_greedy(roomy, [p])[0] for p in prompts] == expected, "alone"
    assert engine_greedy(roomy, prompts) == expected, "batched"

    chunked = LLM(str(folder), max_model_len=MAX_LEN, block_size=BLOCK, kv_cache_memory=64 << 20,
                  max_num_batched_tokens=8)
    assert engine_greedy(chunked, prompts) == expected, "chunked prefill"

    # A pool of 30 blocks holds one 96-token sequence (24 blocks) but not four growing ones.
    per_block = roomy.engine.runner.kv_bytes_per_block()
    tiny = LLM(str(folder), max_model_len=MAX_LEN, block_size=BLOCK, kv_cache_memory=30 * per_block,
               max_num_batched_tokens=16)
    assert engine_greedy(tiny, prompts) == expected, "preemption"
    assert tiny.engine.num_preemptions > 0

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Batch invariance (`deterministic=True`): one request's tokens and logprobs are the same bits
alone and beside 1..64 random neighbours, with chunked prefill forced on or off, and with
preemption forced. Seeded sampling gives the same text alone and batched; different seeds differ.

A negative control runs the same comparison on the default kernels and expects a difference
(asserted on CUDA in fp32, where cuBLAS picks kernels by batch shape; skipped with a message where
the default kernels happen to be invariant for the shapes tried, e.g. H200 bf16).
The tests run on every device present: the CPU in CI, CUDA on the GPU machine.
"""

from __future__ import annotations

import random

import pytest
import torch

from deepinfer_core import LLM, SamplingParams

BLOCK = 4
MAX_LEN = 128
STEPS = 12
NEIGHBOURS = (1, 3, 8, 21, 64)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = {"cpu": ["float32"], "cuda": ["float32", "bfloat16"]}
CASES = [(d, t) for d in DEVICES for t in DTYPES[d]]


def neighbours(count: int, vocab: int, seed: int) -> list[tuple[list[int], SamplingParams]]:
    """Random prompts of random lengths with random lengths of output and sampling settings."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        prompt = [rng.randrange(vocab - 3) for _ in range(rng.randint(1, 60))]
        params = SamplingParams(temperature=rng.choice([0.0, 0.8, 1.0]), max_tokens=rng.randint(1, 20),
                                ignore_eos=True, seed=rng.randrange(1 << 30), logprobs=rng.choice([None, 2]))
        out.append((prompt, params))
    return out


def run_with(llm: LLM, target: list[int], params: SamplingParams, others, position: int):
    """Generates `target` at index `position` among `others`; returns (token ids, logprob bits)."""
    requests = [{"prompt_token_ids": p} for p, _ in others]
    plist = [q for _, q in others]
    requests.insert(position, {"prompt_token_ids": target})
    plist.insert(position, params)
    outs = llm.generate(requests, plist)
    assert all(o.error is None for o in outs), [o.error for o in outs if o.error]
    done = outs[position].outputs[0]
    logprobs = [sorted((tok, lp.logprob) for tok, lp in step.items()) for step in (done.logprobs or [])]
    return done.token_ids, logprobs


def first_difference(got, alone) -> str:
    """Where two run_with results first differ (for failure messages)."""
    for step, (a, b) in enumerate(zip(got[0], alone[0])):
        if a != b:
            return f"token {step}: {a} vs {b} alone; logprobs {got[1][step:step + 1]} vs {alone[1][step:step + 1]}"
    for step, (a, b) in enumerate(zip(got[1], alone[1])):
        if a != b:
            return f"logprobs {step}: {a} vs {b} alone (same tokens)"
    return f"lengths {len(got[0])} vs {len(alone[0])}"


def engines(folder, device: str, dtype: str, deterministic: bool) -> dict[str, LLM]:
    common = dict(max_model_len=MAX_LEN, block_size=BLOCK, device=device, dtype=dtype,
                  deterministic=deterministic, max_num_seqs=80, enforce_eager=False)
    roomy = LLM(str(folder), kv_cache_memory=64 << 20, **common)
    per_block = roomy.engine.runner.kv_bytes_per_block()
    return {
        "default": roomy,
        "chunked": LLM(str(folder), kv_cache_memory=64 << 20, max_num_batched_tokens=8, **common),
        "unchunked": LLM(str(folder), kv_cache_memory=64 << 20, enable_chunked_prefill=False,
                         max_num_batched_tokens=MAX_LEN, **common),
        # 40 blocks hold one 128-token sequence (32 blocks) but not a crowd: preemption happens.
        "preempting": LLM(str(folder), kv_cache_memory=40 * per_block, max_num_batched_tokens=16, **common),
    }


def collect(llms: dict[str, LLM], target: list[int], params: SamplingParams, vocab: int):
    """(config, neighbour count) -> result, plus the result of the target alone."""
    alone = run_with(llms["default"], target, params, [], 0)
    results = {}
    for name, llm in llms.items():
        for count in NEIGHBOURS:
            others = neighbours(count, vocab, seed=count * 31 + len(name))
            position = random.Random(count).randint(0, count)
            results[(name, count)] = run_with(llm, target, params, others, position)
    return alone, results


# Both families on CUDA (llama: llama3 RoPE, head size 16, no q/k norm; qwen3: fused q/k norm).
GREEDY_CASES = [(d, t, f) for d, t in CASES for f in (["qwen3", "llama"] if d == "cuda" else ["qwen3"])]


@pytest.mark.parametrize("device,dtype,family", GREEDY_CASES)
def test_greedy_tokens_and_logprobs_are_batch_invariant(tiny_checkpoint, device: str, dtype: str,
                                                        family: str) -> None:
    folder = tiny_checkpoint(family)
    llms = engines(folder, device, dtype, deterministic=True)
    vocab = llms["default"].engine.vocab_size
    target = [random.Random(7).randrange(vocab - 3) for _ in range(37)]
    params = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True, logprobs=3)
    alone, results = collect(llms, target, params, vocab)
    assert len(alone[0]) == STEPS and len(alone[1]) == STEPS
    assert llms["preempting"].engine.num_preemptions > 0
    for key, got in results.items():
        assert got == alone, f"differs in {key}: {first_difference(got, alone)}"


@pytest.mark.parametrize("device,dtype", CASES)
def test_seeded_sampling_is_batch_invariant(tiny_checkpoint, device: str, dtype: str) -> None:
    folder = tiny_checkpoint("llama")
    llms = engines(folder, device, dtype, deterministic=True)
    vocab = llms["default"].engine.vocab_size
    target = [random.Random(3).randrange(vocab - 3) for _ in range(19)]
    params = SamplingParams(temperature=1.0, top_p=0.95, max_tokens=STEPS, ignore_eos=True, seed=1234,
                            logprobs=1)
    alone, results = collect(llms, target, params, vocab)
    for key, got in results.items():
        assert got == alone, f"seeded output differs in {key}: {first_difference(got, alone)}"
    other_seed = SamplingParams(temperature=1.0, top_p=0.95, max_tokens=STEPS, ignore_eos=True, seed=4321)
    differs = [run_with(llms["default"], target, other_seed, [], 0)[0] != alone[0]]
    differs.append(run_with(llms["default"], target, SamplingParams(
        temperature=1.0, top_p=0.95, max_tokens=STEPS, ignore_eos=True, seed=99), [], 0)[0] != alone[0])
    assert any(differs), "different seeds gave the same text"


def medium_config(folder):
    """A 2-layer model at Qwen3-0.6B width (dummy weights): cuBLAS picks tiles by batch shape at
    this width, while the tiny fixture's 64-wide matmuls always take one kernel on the H200."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 4096, "hidden_size": 1024,
        "intermediate_size": 3072, "num_hidden_layers": 2, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 128, "rms_norm_eps": 1e-6, "max_position_embeddings": 512, "tie_word_embeddings": True,
        "eos_token_id": 4095}))
    return folder


@pytest.mark.parametrize("device,dtype", CASES)
def test_negative_control_default_kernels_depend_on_the_batch(tiny_checkpoint, tmp_path, device: str,
                                                             dtype: str) -> None:
    """The same comparison with the default kernels: the bits do change with the batch."""
    if device == "cuda":
        folder = medium_config(tmp_path / "medium")
        llms = {"default": LLM(str(folder), load_format="dummy", max_model_len=MAX_LEN, block_size=BLOCK,
                               device=device, dtype=dtype, max_num_seqs=80, kv_cache_memory=256 << 20)}
    else:
        folder = tiny_checkpoint("qwen3")
        llms = engines(folder, device, dtype, deterministic=False)
    vocab = llms["default"].engine.vocab_size
    target = [random.Random(7).randrange(vocab - 3) for _ in range(37)]
    params = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True, logprobs=3)
    alone, results = collect(llms, target, params, vocab)
    differing = [key for key, got in results.items() if got[1] != alone[1]]
    if device == "cuda" and dtype == "float32":
        assert differing, "default CUDA kernels were batch invariant here: the control cannot fail"
    elif not differing:  # seen on the H200 in bf16 at this width: cuBLAS kept one kernel per shape
        pytest.skip(f"the default {device}/{dtype} kernels happened to be batch invariant for these shapes")

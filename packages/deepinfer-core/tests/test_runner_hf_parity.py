# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ModelRunner (paged KV cache, block size 4) against HF transformers on tiny random checkpoints.

Every comparison is logits vs. HF's eager float32 forward (with HF's own KV cache for decode):
prefill, token-by-token decode fed with HF's argmax, several prompts batched in one call,
mixed prefill + decode steps, and a prompt prefilled in chunks across calls.
"""

from __future__ import annotations

import random

import pytest
import torch
from transformers import AutoModelForCausalLM

from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import load_model_config

FAMILIES = ["llama", "llama-linear", "qwen2", "qwen3"]
BLOCK_SIZE = 4
NUM_BLOCKS = 64
ATOL = 1e-4


class Sequence:
    """Test-side bookkeeping of one request: tokens, blocks and HF's cache."""

    def __init__(self, prompt: list[int], free_blocks: list[int]) -> None:
        self.tokens = list(prompt)
        self.computed = 0
        self.blocks: list[int] = []
        self.free_blocks = free_blocks
        self.hf_cache = None

    def chunk(self, n: int, sample: bool = True, prompt_logprobs: bool = False) -> ScheduledChunk:
        end = self.computed + n
        while len(self.blocks) * BLOCK_SIZE < end:
            self.blocks.append(self.free_blocks.pop())
        chunk = ScheduledChunk(self.tokens[self.computed:end], self.computed, list(self.blocks), sample,
                               prompt_logprobs)
        self.computed = end
        return chunk


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request, tiny_checkpoint):
    folder = tiny_checkpoint(request.param)
    hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    engine_config = EngineConfig(model=str(folder), block_size=BLOCK_SIZE, dtype="float32")
    runner = ModelRunner(load_model_config(folder), engine_config)
    return hf, runner


def fresh(runner: ModelRunner, seed: int) -> tuple[list[int], random.Random]:
    """Re-allocates (and poisons) the KV cache; returns shuffled free block ids."""
    runner.allocate_kv_cache(NUM_BLOCKS)
    for k, v in runner.kv_caches:
        k.fill_(float("nan"))
        v.fill_(float("nan"))
    rng = random.Random(seed)
    blocks = list(range(NUM_BLOCKS))
    rng.shuffle(blocks)  # non-contiguous block tables
    return blocks, rng


def random_prompt(rng: random.Random, n: int, vocab: int) -> list[int]:
    return [rng.randrange(vocab) for _ in range(n)]


@torch.no_grad()
def hf_step(hf, seq: Sequence, tokens: list[int]) -> torch.Tensor:
    """Feeds `tokens` to HF with the sequence's cache; returns `[len(tokens), V]` float32 logits."""
    out = hf(input_ids=torch.tensor([tokens]), cache=seq.hf_cache, use_cache=True)
    seq.hf_cache = out.cache
    return out.logits[0].float()


def assert_close(ours: torch.Tensor, ref: torch.Tensor) -> None:
    assert ours.dtype == torch.float32 and ours.shape == ref.shape
    assert torch.isfinite(ours).all()
    err = (ours - ref).abs().max().item()
    assert err <= ATOL, f"max abs error {err}"


def test_prefill_then_decode(pair):
    hf, runner = pair
    blocks, rng = fresh(runner, 1)
    seq = Sequence(random_prompt(rng, 11, runner.model_config.vocab_size), blocks)
    ref = hf_step(hf, seq, seq.tokens)
    out = runner.execute_model([seq.chunk(len(seq.tokens), prompt_logprobs=True)])
    assert_close(out.prompt_logits[0], ref)
    assert_close(out.logits, ref[-1:])
    generated = set()
    for _ in range(10):
        nxt = int(ref[-1].argmax())
        generated.add(nxt)
        seq.tokens.append(nxt)
        ref = hf_step(hf, seq, [nxt])
        out = runner.execute_model([seq.chunk(1)])
        assert_close(out.logits, ref)
    assert len(generated) > 1, "random weights should give varied greedy tokens"


def test_batched_prompts_then_mixed_steps(pair):
    hf, runner = pair
    blocks, rng = fresh(runner, 2)
    vocab = runner.model_config.vocab_size
    seqs = [Sequence(random_prompt(rng, n, vocab), blocks) for n in (5, 9, 2)]
    refs = [hf_step(hf, s, s.tokens) for s in seqs]
    out = runner.execute_model([s.chunk(len(s.tokens)) for s in seqs])
    assert_close(out.logits, torch.stack([r[-1] for r in refs]))

    # Decode-only step for all three (the decode kernel path, B = 3).
    for s, r in zip(seqs, refs):
        s.tokens.append(int(r[-1].argmax()))
    refs = [hf_step(hf, s, s.tokens[-1:]) for s in seqs]
    out = runner.execute_model([s.chunk(1) for s in seqs])
    assert_close(out.logits, torch.cat(refs))

    # Mixed step: a new prompt (prefill) next to two decodes; the middle request skips sampling.
    late = Sequence(random_prompt(rng, 7, vocab), blocks)
    for s, r in zip(seqs, refs):
        s.tokens.append(int(r[-1].argmax()))
    ref_late = hf_step(hf, late, late.tokens)
    ref0 = hf_step(hf, seqs[0], seqs[0].tokens[-1:])
    ref2 = hf_step(hf, seqs[2], seqs[2].tokens[-1:])
    out = runner.execute_model([seqs[0].chunk(1), late.chunk(7, prompt_logprobs=True), seqs[2].chunk(1)])
    assert_close(out.logits, torch.cat([ref0, ref_late[-1:], ref2]))
    assert_close(out.prompt_logits[1], ref_late)


def test_chunked_prefill(pair):
    hf, runner = pair
    blocks, rng = fresh(runner, 3)
    seq = Sequence(random_prompt(rng, 13, runner.model_config.vocab_size), blocks)
    ref = hf_step(hf, seq, seq.tokens)
    start = 0
    for n in (5, 3, 5):  # chunk boundaries inside and across blocks of 4
        out = runner.execute_model([seq.chunk(n, sample=start + n == 13, prompt_logprobs=True)])
        assert_close(out.prompt_logits[0], ref[start:start + n])
        start += n
    assert_close(out.logits, ref[-1:])
    for _ in range(3):
        seq.tokens.append(int(ref[-1].argmax()))
        ref = hf_step(hf, seq, seq.tokens[-1:])
        assert_close(runner.execute_model([seq.chunk(1)]).logits, ref)


def test_empty_logits_when_nothing_samples(pair):
    _, runner = pair
    blocks, rng = fresh(runner, 4)
    seq = Sequence(random_prompt(rng, 6, runner.model_config.vocab_size), blocks)
    out = runner.execute_model([seq.chunk(6, sample=False)])
    assert out.logits.shape == (0, runner.model_config.vocab_size) and out.prompt_logits == {}

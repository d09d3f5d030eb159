# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""QA regressions (session 2): a proposer that breaks the `Draft` contract or fails must fail only
the requests it drafted for (error set, the message names `speculative_config`), never crash the
engine (an out-of-vocabulary draft id used to reach the embedding: IndexError on the CPU, a
device-side assert on CUDA), and never change the other requests' outputs; a proposer that asks
for target layers the model does not have is rejected when the engine is built.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft

VOCAB = 259  # the tiny checkpoints' vocabulary (tests/conftest.py)
POISON = 7   # first prompt token of the request the faulty proposer mistreats
PROMPTS = [[POISON, 40, 41, 40, 41, 40], [11, 12, 13, 11, 12], [21, 22, 21, 22], [31, 90, 91, 92, 31]]


class FaultyProposer:
    """Drafts `bad(request)` for the poisoned request and a valid random draft for the others;
    `fail` (once, on the first call) replaces the whole answer."""

    def __init__(self, bad=None, fail=None) -> None:
        self.bad, self.fail = bad, fail
        self.calls = 0
        self.gen = torch.Generator().manual_seed(0)

    def propose(self, requests):
        self.calls += 1
        if self.fail is not None and self.calls == 1:
            return self.fail(requests)
        drafts = []
        for r in requests:
            if self.bad is not None and r.token_ids[0] == POISON:
                drafts.append(self.bad(r))
            else:
                drafts.append(Draft(torch.randint(0, VOCAB, (r.max_tokens,), generator=self.gen).tolist()))
        return drafts

    def commit(self, request_id, num_tokens):
        pass

    def remove(self, request_id):
        pass


def _raise(requests):
    raise RuntimeError("drafter exploded")


BAD_DRAFTS = {
    "out-of-vocabulary id": lambda r: Draft([VOCAB] * r.max_tokens),
    "negative id": lambda r: Draft([-1] * r.max_tokens),
    "bool id": lambda r: Draft([True] * r.max_tokens),
    "float id": lambda r: Draft([3.0] * r.max_tokens),
    "token_ids None": lambda r: Draft(None),
    "not a Draft": lambda r: [3] * r.max_tokens,
    "probs with a wrong vocabulary": lambda r: Draft([3] * r.max_tokens, torch.full((r.max_tokens, VOCAB + 1), 0.1)),
    "probs missing a row": lambda r: Draft([3] * r.max_tokens, torch.full((r.max_tokens - 1, VOCAB), 1 / VOCAB)),
    "probs float64": lambda r: Draft([3] * r.max_tokens, torch.full((r.max_tokens, VOCAB), 1 / VOCAB,
                                                                       dtype=torch.float64)),
    "probs a list": lambda r: Draft([3] * r.max_tokens, [[1 / VOCAB] * VOCAB] * r.max_tokens),
}

FAILURES = {
    "raises": _raise,
    "too many drafts": lambda requests: [Draft([])] * (len(requests) + 1),
    "too few drafts": lambda requests: [Draft([])] * (len(requests) - 1),
    "returns None": lambda requests: None,
}


def _build(folder, proposer=None) -> LLM:
    spec = None if proposer is None else {"proposer": proposer, "num_speculative_tokens": 3}
    return LLM(str(folder), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
               dtype="float32", speculative_config=spec)


def _generate(llm: LLM, params: list[SamplingParams]):
    outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params)
    return [(o.outputs[0].token_ids, o.error) for o in outs]


GREEDY = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
# Penalties keep a request from being drafted for: the proposer is never asked about it.
PENALISED = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True, repetition_penalty=1.3)


@pytest.fixture(scope="module")
def qwen3(tiny_checkpoint):
    return tiny_checkpoint("qwen3")


@pytest.fixture(scope="module")
def plain(qwen3):
    llm = _build(qwen3)
    return _generate(llm, [GREEDY] * 4), _generate(llm, [GREEDY, GREEDY, PENALISED, GREEDY])


@pytest.mark.parametrize("kind", list(BAD_DRAFTS))
def test_a_bad_draft_fails_only_its_request(qwen3, plain, kind: str) -> None:
    llm = _build(qwen3, FaultyProposer(bad=BAD_DRAFTS[kind]))
    got = _generate(llm, [GREEDY] * 4)
    tokens, error = got[0]
    assert error is not None and "speculative_config" in error, (kind, error)
    assert got[1:] == plain[0][1:], kind
    assert llm.engine.speculative.stats.verified > 0  # the other requests were drafted for
    llm.engine.speculative.proposer.bad = None  # the engine keeps serving
    assert _generate(llm, [GREEDY] * 4) == plain[0]


@pytest.mark.parametrize("kind", list(FAILURES))
def test_a_failing_proposer_fails_only_the_requests_it_drafted_for(qwen3, plain, kind: str) -> None:
    llm = _build(qwen3, FaultyProposer(fail=FAILURES[kind]))
    params = [GREEDY, GREEDY, PENALISED, GREEDY]
    got = _generate(llm, params)
    for i, (tokens, error) in enumerate(got):
        if i == 2:
            assert (tokens, error) == plain[1][2], kind  # never drafted for: untouched
        else:
            assert error is not None and "speculative_config.proposer" in error, (kind, error)
    assert _generate(llm, params) == plain[1]  # the proposer recovered: the engine serves as before


class LayerProposer(FaultyProposer):
    def __init__(self, layers) -> None:
        super().__init__()
        self.target_layer_ids = layers

    def observe(self, request_id, positions, features):
        pass


@pytest.mark.parametrize("layers", [(0, 2), (-2, 0), (1, 0), (0, 0), ("0",)])
def test_target_layers_the_model_lacks_are_rejected_at_build(qwen3, layers) -> None:
    with pytest.raises(ValueError, match="speculative_config"):
        _build(qwen3, LayerProposer(layers))  # the tiny model has 2 layers: ids -1, 0, 1


def test_valid_target_layers_are_accepted(qwen3) -> None:
    llm = _build(qwen3, LayerProposer((-1, 1)))
    assert llm.engine.runner.aux_layers == (-1, 1)


def test_draft_probs_on_the_engine_device_pass_whatever_its_spelling(qwen3, plain) -> None:
    # "cuda" and a tensor's "cuda:0" are the same device; "cpu:0" vs "cpu" is the CPU analogue.
    class WithProbs(FaultyProposer):
        def propose(self, requests):
            return [Draft([3] * r.max_tokens, torch.full((r.max_tokens, VOCAB), 1 / VOCAB)) for r in requests]

    llm = LLM(str(qwen3), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
              dtype="float32", device="cpu:0",
              speculative_config={"proposer": WithProbs(), "num_speculative_tokens": 3})
    assert _generate(llm, [GREEDY] * 4) == plain[0]
    assert llm.engine.speculative.stats.verified > 0

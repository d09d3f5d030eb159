# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Requests spread over a grammar's independently built llguidance templates.

A burst of requests admitted right after a compile all start on the first template (the others
are built in the background); mask fills then move them until no template holds 2 more live
matchers than another. A moved matcher replays its tokens, so its mask equals that of a matcher
that never moved (compared with llguidance's own single-matcher mask). Finished requests give
their slot back.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("llguidance")

from deepinfer_core import LLM  # noqa: E402
from deepinfer_core.engine.request import Request  # noqa: E402
from deepinfer_core.sampling_params import SamplingParams  # noqa: E402
from deepinfer_core.structured.backend import CompiledGrammar  # noqa: E402
from deepinfer_core.structured.manager import StructuredOutputManager  # noqa: E402
from deepinfer_core.structured.params import StructuredOutputs  # noqa: E402
from deepinfer_core.structured.state import GrammarState  # noqa: E402


def test_a_burst_is_spread_over_templates_and_masks_are_unchanged(tiny_checkpoint):
    llm = LLM(str(tiny_checkpoint("llama")), max_model_len=64, block_size=4, kv_cache_memory=8 << 20)
    backend = llm.engine.structured.backend
    spec = StructuredOutputs.from_value({"regex": r"[a-z]{2,6}-[0-9]{1,3}"})
    # One template, as right after a fresh compile (built here, so no background builder adds more).
    grammar = CompiledGrammar(spec.key(), backend.compile(spec)._templates[0])
    manager = StructuredOutputManager(lambda: backend)
    eos = llm.engine.eos_token_id
    requests = [Request(f"r{i}", [1, 2, 3], SamplingParams(max_tokens=8, structured_outputs=spec), i, eos)
                for i in range(9)]
    for r in requests:
        manager._states[r.request_id] = GrammarState(grammar)
    assert {manager.state(r.request_id).shard for r in requests} == {0}
    prefix = llm.tokenizer.encode("ab", add_special_tokens=False)
    for r in requests:
        r.output_token_ids.extend(prefix)       # consumed by the fill's catch-up, replayed by moves
    for _ in range(3):
        grammar.add_template(backend.compile(spec)._templates[0])
    masks = manager.fill_bitmask(requests)
    states = [manager.state(r.request_id) for r in requests]
    assert all(s.num_tokens == len(prefix) and s.error is None for s in states)
    counts = [[s.shard for s in states].count(k) for k in range(4)]
    assert max(counts) - min(counts) <= 1 and sum(counts) == 9, counts
    reference = grammar._templates[0].deep_copy()
    for t in prefix:
        assert reference.consume_token(t)
    want = torch.frombuffer(bytearray(reference.compute_bitmask()), dtype=torch.int32)
    assert int(want.ne(0).sum()) > 0
    for b in range(len(requests)):
        assert torch.equal(masks.bitmask[b, :want.numel()], want), b
    for r in requests[:5]:
        manager.release(r.request_id)
    assert sum(grammar._live) == 4

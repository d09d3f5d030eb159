# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`EngineConfig.packed_graph_inputs`: a graph-replayed decode step's inputs packed on the host and
uploaded in one copy (`executor.packed_inputs`, `DecodeBuffers.upload`, `DecodeGraphs.run_chunks`)
against the general path (`prepare_inputs`, the placeholder fill, `DecodeBuffers.load`). The
capture needs CUDA: here the graphs run their step function eagerly over the same static buffers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk, prepare_inputs
from deepinfer_core.executor.block_tables import PersistentBlockTables
from deepinfer_core.executor.cuda_graph import DecodeBuffers, DecodeGraphs
from deepinfer_core.executor.packed_inputs import PackedInputs, StepLayout
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.executor.verify_graph import VerifyBuffers, VerifyGraphs
from deepinfer_core.loader import load_model_config

BLOCK = 4
WIDTH = 12
POOL = 96


class EagerReplay:
    """A captured graph's stand-in: `replay` runs the step function on the static buffers (the
    first `size` requests, `tokens` rows) and writes its output into the static output tensors, as
    a replay does."""

    def __init__(self, step_fn, buffers, size: int, out, tokens: int | None = None) -> None:
        self.step_fn, self.buffers, self.size, self.out = step_fn, buffers, size, out
        self.tokens = size if tokens is None else tokens

    def replay(self) -> None:
        b, s, n = self.buffers, self.size, self.tokens
        with torch.inference_mode():
            fresh = self.step_fn(b.input_ids[:n], b.positions[:n], b.meta(s))
        for dst, src in zip(self.out if isinstance(self.out, tuple) else (self.out,),
                            fresh if isinstance(fresh, tuple) else (fresh,)):
            dst.copy_(src)


def eager_graphs(step_fn, sizes: list[int], width: int) -> DecodeGraphs:
    """`DecodeGraphs` over CPU buffers whose graphs are `EagerReplay`s (no capture)."""
    graphs = DecodeGraphs.__new__(DecodeGraphs)
    graphs.sizes, graphs.replays, graphs.pool = sorted(sizes), 0, None
    graphs.buffers = b = DecodeBuffers(graphs.sizes[-1], width, "cpu")
    with torch.inference_mode():   # (all slots -1: nothing is written to the KV cache)
        graphs.outputs = {s: step_fn(b.input_ids[:s], b.positions[:s], b.meta(s)) for s in graphs.sizes}
    graphs.graphs = {s: EagerReplay(step_fn, b, s, graphs.outputs[s]) for s in graphs.sizes}
    return graphs


def eager_verify_graphs(step_fn, sizes: list[int], query_len: int, width: int) -> VerifyGraphs:
    """`VerifyGraphs` over CPU buffers whose graphs are `EagerReplay`s (no capture)."""
    graphs = VerifyGraphs.__new__(VerifyGraphs)
    graphs.sizes, graphs.query_len, graphs.replays = sorted(sizes), query_len, 0
    graphs.buffers = b = VerifyBuffers(graphs.sizes[-1], query_len, width, BLOCK, "cpu")
    with torch.inference_mode():
        graphs.outputs = {s: step_fn(b.input_ids[:s * query_len], b.positions[:s * query_len], b.meta(s))
                          for s in graphs.sizes}
    graphs.graphs = {s: EagerReplay(step_fn, b, s, graphs.outputs[s], s * query_len) for s in graphs.sizes}
    return graphs


def general_path_refused(step):
    """Stands in for the graphs' `run` where every step must take `run_chunks`."""
    raise AssertionError("the general path replayed a step packed_graph_inputs should have packed")


def random_step(rng: np.random.Generator, live: dict, next_id: list, batch: int, fill_rows: int):
    """A decode step of `batch` requests: some kept from `live` (their tables grown, sometimes cut
    back: a rollback), the rest new; some carry a placeholder token (`fill_row`)."""
    keep = [rid for rid in live if rng.random() < 0.7][:batch]
    for rid in list(live):
        if rid not in keep:
            del live[rid]
    while len(live) < batch:
        rid = f"r{next_id[0]}"
        next_id[0] += 1
        live[rid] = (int(rng.integers(0, 3 * BLOCK)), [int(x) for x in rng.choice(POOL, WIDTH, replace=False)])
    chunks = []
    for rid in rng.permutation(list(live)):
        start, pool = live[rid]
        start += int(rng.integers(0, 3))
        if rng.random() < 0.1:   # cut back, as after rejected drafts
            start = max(0, start - 3)
        start = min(start, WIDTH * BLOCK - 2)
        live[rid] = (start, pool)
        need = start // BLOCK + 1
        blocks = pool[:min(WIDTH, need + int(rng.integers(0, 2)))]   # sometimes a block ahead
        fill = int(rng.integers(0, fill_rows)) if fill_rows and rng.random() < 0.8 else -1
        token = -1 if fill >= 0 else int(rng.integers(3, 200))
        chunks.append(ScheduledChunk([token], start, blocks, True, fill_row=fill, request_id=str(rid)))
    return chunks


def load_general(buffers: DecodeBuffers, chunks, size: int, tables, fill_from) -> None:
    """The general path into `buffers`: `prepare_inputs`, the placeholder fill, `load`."""
    step = prepare_inputs(chunks, BLOCK, "cpu", POOL, tables)
    filled = [(i, c.fill_row) for i, c in enumerate(chunks) if c.fill_row >= 0]
    if filled:
        index, rows = zip(*filled)
        step.input_ids[list(index)] = fill_from[list(rows)]
    buffers.load(step, size)


def test_layout_sections_are_aligned_and_disjoint():
    layout = StepLayout(5, 7)
    spans = sorted((off, off + count * np.dtype(dt).itemsize) for off, dt, count in layout.offsets.values())
    assert all(start % 16 == 0 for start, _ in spans)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))
    assert layout.prefix(5) == layout.nbytes - (-(-5 * 7 * 4 // 16) * 16 - 5 * 7 * 4)
    with pytest.raises(ValueError, match="max_batch"):
        StepLayout(0, 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_upload_fills_the_buffers_as_the_general_path(seed):
    """Step after step (requests joining, leaving, growing and cut back; batches padded), the
    graphs' inputs after `upload` equal those after the general path, both buffers poisoned first."""
    rng = np.random.default_rng(seed)
    sizes, live, next_id = [1, 2, 4, 8], {}, [0]
    general, packed = DecodeBuffers(8, WIDTH, "cpu"), DecodeBuffers(8, WIDTH, "cpu")
    tables_general, tables_packed = PersistentBlockTables(16, WIDTH), PersistentBlockTables(16, WIDTH)
    for t in (general.flat, packed.flat):
        t.copy_(torch.randint(0, 256, t.shape, dtype=torch.uint8))
    general.cu_seqlens_q.copy_(torch.arange(9, dtype=torch.int32))   # (constant, never loaded)
    checked = 0
    for _ in range(40):
        batch = int(rng.integers(1, 9))
        size = next(s for s in sizes if s >= batch)
        fill_from = torch.randint(3, 200, (int(rng.integers(1, 10)),))
        chunks = random_step(rng, live, next_id, batch, fill_from.shape[0])
        for rid in [r for r in tables_general.row_of if r not in live]:
            tables_general.release(rid)
            tables_packed.release(rid)
        load_general(general, chunks, size, tables_general, fill_from)
        packed.upload(chunks, size, BLOCK, POOL, tables_packed, fill_from)
        for name in ("input_ids", "positions", "slot_mapping", "seq_lens"):
            assert torch.equal(getattr(packed, name)[:size], getattr(general, name)[:size]), name
        assert torch.equal(packed.block_tables[:size], general.block_tables[:size])
        assert torch.equal(packed.cu_seqlens_q[:size + 1], general.cu_seqlens_q[:size + 1])
        filled = [c.fill_row for c in chunks if c.fill_row >= 0]
        assert packed.input_ids[:batch].min() >= 3   # no placeholder left
        checked += len(filled)
    assert checked > 20


def test_upload_errors_name_the_field_as_prepare_inputs_does():
    buffers, tables = DecodeBuffers(4, WIDTH, "cpu"), PersistentBlockTables(8, WIDTH)
    cases = [
        [ScheduledChunk([5], -1, [1], True, request_id="a")],
        [ScheduledChunk([5], 2 * BLOCK, [1, 2], True, request_id="b")],
        [ScheduledChunk([5], 0, [1], True, request_id="c"), ScheduledChunk([5], 0, [POOL], True, request_id="d")],
    ]
    for chunks in cases:
        with pytest.raises(ValueError) as general:
            prepare_inputs(chunks, BLOCK, "cpu", POOL, PersistentBlockTables(8, WIDTH))
        with pytest.raises(ValueError) as packed:
            buffers.upload(chunks, 4, BLOCK, POOL, tables)
        assert str(packed.value) == str(general.value)
    placeholder = [ScheduledChunk([-1], 0, [1], True, fill_row=2, request_id="e")]
    with pytest.raises(ValueError, match="fill_from"):
        buffers.upload(placeholder, 4, BLOCK, POOL, tables)
    with pytest.raises(ValueError, match="fill_row: chunk 0 reads row 2 of 2"):
        buffers.upload(placeholder, 4, BLOCK, POOL, tables, torch.tensor([7, 8]))
    with pytest.raises(ValueError, match="step"):
        buffers.upload(placeholder * 3, 2, BLOCK, POOL, tables, torch.tensor([7, 8, 9]))


def verify_steps(rng: np.random.Generator, steps: int, q: int):
    """Verification steps of 1-6 requests (some kept across steps, their tables grown or cut back),
    each scoring its last token and up to q - 1 drafts."""
    live, next_id = {}, [0]
    for _ in range(steps):
        chunks = random_step(rng, live, next_id, int(rng.integers(1, 7)), 0)
        out = []
        for c in chunks:
            n = int(rng.integers(1, q + 1))
            start = min(c.start_pos, WIDTH * BLOCK - n - 1)
            blocks = live[c.request_id][1][:min(WIDTH, -(-(start + n) // BLOCK) + int(rng.integers(0, 2)))]
            out.append(ScheduledChunk([int(t) for t in rng.integers(3, 200, n)], start, blocks, True, num_logits=n,
                                      request_id=c.request_id))
        if all(len(c.token_ids) == 1 for c in out):   # (a decode step: not the verification graphs')
            out[0] = ScheduledChunk(out[0].token_ids * 2, out[0].start_pos, out[0].block_ids, True, num_logits=2,
                                    request_id=out[0].request_id)
        yield out, live


def test_verify_upload_fills_the_buffers_as_the_general_path():
    """Verification steps: after `VerifyBuffers.upload` the padded layout and the returned rows
    equal `load`'s on `prepare_inputs`' step, both buffers poisoned first."""
    q, rng = 4, np.random.default_rng(7)
    general, packed = (VerifyBuffers(8, q, WIDTH, BLOCK, "cpu") for _ in range(2))
    tables_general, tables_packed = PersistentBlockTables(16, WIDTH), PersistentBlockTables(16, WIDTH)
    for b in (general, packed):
        b.packed.flat.copy_(torch.randint(0, 256, b.packed.flat.shape, dtype=torch.uint8))
    general.cu_seqlens_q.copy_(torch.arange(0, 8 * q + 1, q, dtype=torch.int32))   # (constant, never loaded)
    for chunks, live in verify_steps(rng, 30, q):
        for rid in [r for r in tables_general.row_of if r not in live]:
            tables_general.release(rid)
            tables_packed.release(rid)
        size = next(s for s in (1, 2, 4, 8) if s >= len(chunks))
        rows_general = general.load(prepare_inputs(chunks, BLOCK, "cpu", POOL, tables_general), size)
        rows_packed = packed.upload(chunks, size, BLOCK, POOL, tables_packed)
        assert torch.equal(rows_packed, rows_general)
        n = size * q
        for name in ("input_ids", "positions", "slot_mapping"):
            assert torch.equal(getattr(packed, name)[:n], getattr(general, name)[:n]), name
        for name in ("seq_lens", "block_tables"):
            assert torch.equal(getattr(packed, name)[:size], getattr(general, name)[:size]), name
        assert torch.equal(packed.cu_seqlens_q[:size + 1], general.cu_seqlens_q[:size + 1])
    inputs = PackedInputs(2, WIDTH, q, "cpu")   # a placeholder is its chunk's last token, wherever that lands
    inputs.upload([ScheduledChunk([9, 8, -1], 4, [1, 2], True, num_logits=3, fill_row=1, request_id="f"),
                   ScheduledChunk([-1], 2, [3], True, fill_row=0, request_id="g")], 2, BLOCK, POOL,
                  PersistentBlockTables(4, WIDTH), torch.tensor([41, 42]))
    assert inputs.views["input_ids"][:2 * q].tolist() == [9, 8, 42, 0, 41, 0, 0, 0]
    with pytest.raises(ValueError, match="^step: a chunk of 5 tokens"):
        packed.upload([ScheduledChunk([5] * 5, 0, [1, 2], True, num_logits=5, request_id="x")], 1, BLOCK, POOL,
                      tables_packed)


class DraftingProposer:
    """Drafts the known greedy continuation (`Proposer`), every third draft wrong."""

    def __init__(self, continuations: dict[tuple[int, ...], list[int]]) -> None:
        self.continuations, self.calls = continuations, 0

    def propose(self, requests):
        from deepinfer_core.interfaces import Draft

        drafts = []
        for r in requests:
            prompt = next(p for p in self.continuations if tuple(r.token_ids[:len(p)]) == p)
            done = len(r.token_ids) - len(prompt)
            tokens = list(self.continuations[prompt][done:done + r.max_tokens])
            self.calls += 1
            if tokens and self.calls % 3 == 0:
                tokens[-1] = (tokens[-1] + 1) % 250
            drafts.append(Draft(tokens))
        return drafts

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


def test_engine_with_drafts_packed_verification_gives_the_same_tokens(tiny_checkpoint):
    """Speculative decoding with packed decode and verification steps (eager replays standing in
    for the graphs): the greedy tokens of plain decoding."""
    folder = tiny_checkpoint("qwen3")
    common = dict(device="cpu", dtype="float32", block_size=BLOCK, max_num_seqs=8, kv_cache_memory=1 << 22,
                  deterministic=True, max_model_len=WIDTH * BLOCK)
    prompts = [[int(t) for t in np.random.default_rng(i).integers(3, 250, 3 + 3 * i)] for i in range(5)]
    params = [SamplingParams(temperature=0, max_tokens=8 + 4 * i, ignore_eos=True) for i in range(5)]
    plain = LLM(str(folder), **common)
    expected = [o.outputs[0].token_ids for o in plain.generate([{"prompt_token_ids": p} for p in prompts], params)]
    proposer = DraftingProposer({tuple(p): e for p, e in zip(prompts, expected)})
    llm = LLM(str(folder), packed_graph_inputs=True, speculative_config={"proposer": proposer,
                                                                          "num_speculative_tokens": 3}, **common)
    runner = llm.engine.runner
    runner.graphs = eager_graphs(runner._logits_step, [1, 2, 4, 8], WIDTH)
    runner.verify_graphs = eager_verify_graphs(runner._logits_step, [1, 2, 4, 8], 4, WIDTH)
    runner.graphs.run = runner.verify_graphs.run = general_path_refused
    got = [o.outputs[0].token_ids for o in llm.generate([{"prompt_token_ids": p} for p in prompts], params)]
    assert got == expected
    assert runner.verify_graphs.replays > 5 and llm.engine.speculative.stats.accepted > 0


def test_engine_config_flag():
    assert EngineConfig(device="cpu").packed_graph_inputs is False
    with pytest.raises(ValueError, match="packed_graph_inputs"):
        EngineConfig(device="cpu", packed_graph_inputs=1)


def runner_with_graphs(folder, packed: bool, aux: tuple[int, ...] = ()) -> ModelRunner:
    runner = ModelRunner(load_model_config(folder), EngineConfig(model=str(folder), dtype="float32", block_size=BLOCK,
                                                                 device="cpu", deterministic=True,
                                                                 packed_graph_inputs=packed))
    runner.allocate_kv_cache(POOL)
    runner.init_block_tables(16, WIDTH * BLOCK)
    runner.aux_layers = runner._graph_aux_layers = aux
    runner.graphs = eager_graphs(runner._logits_step, [1, 2, 4, 8], WIDTH)
    if aux:
        runner.plain_graphs = eager_graphs(runner._plain_logits_step, [1, 2, 4, 8], WIDTH)
    return runner


@pytest.mark.parametrize("aux", [(), (0, 1)])
def test_runner_packed_steps_match_the_general_path(tiny_checkpoint, aux):
    """Decode steps through `run_chunks` return the logits (and features) of the general path's
    replay and write the same KV cache; prefill steps and features declined pick as before."""
    folder = tiny_checkpoint("qwen3")
    runners = {packed: runner_with_graphs(folder, packed, aux) for packed in (False, True)}
    rng = np.random.default_rng(5)
    gen = torch.Generator().manual_seed(5)
    for runner in runners.values():
        for k, v in runner.kv_caches:
            k.normal_(generator=torch.Generator().manual_seed(9))
            v.normal_(generator=torch.Generator().manual_seed(10))
    live, next_id = {}, [0]
    for step in range(12):
        fill_from = torch.randint(3, 200, (6,), generator=gen)
        chunks = random_step(rng, live, next_id, int(rng.integers(1, 9)), 6)
        for runner in runners.values():
            for rid in [r for r in runner.block_tables.row_of if r not in live]:
                runner.release(rid)
        features = bool(step % 3)
        outs = {packed: runner.execute_model(chunks, fill_from=fill_from, features=features)
                for packed, runner in runners.items()}
        assert torch.equal(outs[True].logits, outs[False].logits)
        if aux and features:
            assert torch.equal(outs[True].aux_hidden, outs[False].aux_hidden)
            assert outs[True].cu_seqlens == outs[False].cu_seqlens == list(range(len(chunks) + 1))
        else:
            assert outs[True].aux_hidden is None and outs[False].aux_hidden is None
    for (k1, v1), (k2, v2) in zip(runners[True].kv_caches, runners[False].kv_caches):
        assert torch.equal(k1, k2) and torch.equal(v1, v2)
    packed = runners[True]
    replays = packed.graphs.replays + (packed.plain_graphs.replays if aux else 0)
    assert replays == 12
    prefill = [ScheduledChunk([5, 6, 7], 0, [1], True, request_id="p")]
    assert packed._packed_graphs(prefill, True) is None and runners[False]._packed_graphs(chunks, True) is None
    if aux:
        assert packed._packed_graphs(chunks, False) is packed.plain_graphs


def test_large_uploads_and_odd_chunks_take_the_general_path(tiny_checkpoint, monkeypatch):
    """`_packed_graphs` declines a step whose padded rows would upload more than `MAX_UPLOAD`
    bytes, a chunk without a request id or wider than the graphs, and an empty step."""
    import deepinfer_core.executor.model_runner as model_runner

    runner = runner_with_graphs(tiny_checkpoint("qwen3"), True)
    chunks = [ScheduledChunk([5], 3, [1], True, request_id=f"q{i}") for i in range(3)]
    assert runner._packed_graphs(chunks, True) is runner.graphs
    limit = runner.graphs.buffers.layout.prefix(4)
    monkeypatch.setattr(model_runner, "MAX_UPLOAD", limit - 1)
    assert runner._packed_graphs(chunks, True) is None                  # padded to 4 rows: over the budget
    assert runner._packed_graphs(chunks[:2], True) is runner.graphs     # 2 rows: within it
    assert runner._packed_graphs([ScheduledChunk([5], 3, [1], True)], True) is None
    assert runner._packed_graphs([ScheduledChunk([5], 3, list(range(WIDTH + 1)), True, request_id="w")], True) is None
    assert runner._packed_graphs([], True) is None
    for odd in (ScheduledChunk([5], 3, [1], False, request_id="s"),                        # not sampled
                ScheduledChunk([5], 3, [1], True, prompt_logprobs=True, request_id="l"),   # prompt logprobs
                ScheduledChunk([5, 6], 3, [1], True, request_id="p")):                     # a prefill chunk
        assert runner._packed_graphs(chunks[:1] + [odd], True) is None
    runner.aux_layers = (0,)   # (features asked for that the graphs were not captured with)
    assert runner._packed_graphs(chunks[:2], True) is None
    runner.aux_layers = ()
    monkeypatch.setattr(model_runner, "MAX_UPLOAD", 1 << 20)
    runner.verify_graphs = eager_verify_graphs(runner._logits_step, [1, 2, 4], 4, WIDTH)
    step = [ScheduledChunk([5, 6, 7], 3, [1, 2], True, num_logits=3, request_id="v"), chunks[0]]
    assert runner._packed_verify(step) and not runner._packed_verify(chunks[:2])   # (decode: not verification)
    for odd in (ScheduledChunk([5, 6], 3, [1, 2], True, num_logits=1, request_id="n"),           # not all logits
                ScheduledChunk([5, 6, -1], 3, [1, 2], True, num_logits=3, fill_row=0, request_id="f"),
                ScheduledChunk([5, 6], 3, [1, 2], True, num_logits=2),                            # no request id
                ScheduledChunk([5] * 5, 3, [1, 2], True, num_logits=5, request_id="q")):          # more than Q
        assert not runner._packed_verify(step[:1] + [odd])
    runner.engine_config.packed_graph_inputs = False
    assert not runner._packed_verify(step) and runner._packed_graphs(chunks[:2], True) is None


def test_engine_greedy_output_is_the_same_with_packed_inputs(tiny_checkpoint):
    """End to end with asynchronous scheduling (placeholder ids filled on the device) and
    requests finishing at different lengths: the same greedy tokens as without graphs."""
    folder = tiny_checkpoint("llama")
    common = dict(device="cpu", dtype="float32", block_size=BLOCK, max_num_seqs=8, kv_cache_memory=1 << 22,
                  deterministic=True, seed=3)
    prompts = [{"prompt_token_ids": [int(t) for t in np.random.default_rng(i).integers(3, 250, 3 + 2 * i)]}
               for i in range(6)]
    params = [SamplingParams(temperature=0, max_tokens=6 + 3 * i, ignore_eos=True) for i in range(6)]
    eager = LLM(str(folder), **common)
    expected = [o.outputs[0].token_ids for o in eager.generate(prompts, params)]
    llm = LLM(str(folder), packed_graph_inputs=True, **common)
    runner = llm.engine.runner
    runner.graphs = eager_graphs(runner._logits_step, [1, 2, 4, 8], runner.block_tables.table.shape[1])
    runner.graphs.run = general_path_refused
    got = [o.outputs[0].token_ids for o in llm.generate(prompts, params)]
    assert got == expected
    assert runner.graphs.replays >= 15 and llm.engine.num_overlapped_steps > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="captures CUDA graphs (GPU_TESTS.md)")
@pytest.mark.parametrize("spec", [None, {"method": "ngram", "num_speculative_tokens": 3}])
def test_packed_inputs_give_the_same_tokens_on_cuda(tiny_checkpoint, spec):
    """Real graphs, pinned uploads, asynchronous scheduling: the same greedy tokens with and without
    `packed_graph_inputs` (deterministic kernels), also with n-gram drafts (packed verification
    steps between packed decode steps); the general path's `run` is never called."""
    folder = tiny_checkpoint("qwen3")
    common = dict(device="cuda", dtype="float32", deterministic=True, block_size=BLOCK, max_model_len=256,
                  max_num_seqs=8, kv_cache_memory=64 << 20, speculative_config=spec)
    packed, general = LLM(str(folder), packed_graph_inputs=True, **common), LLM(str(folder), **common)
    runner = packed.engine.runner
    runner.graphs.run = general_path_refused
    if spec is not None:
        runner.verify_graphs.run = general_path_refused
    rng = np.random.default_rng(4)
    requests = [{"prompt_token_ids": [int(t) for t in rng.integers(3, 50, int(rng.integers(4, 40)))]}
                for _ in range(12)]   # (a small alphabet: prompts repeat, n-gram drafts)
    params = [SamplingParams(temperature=0, max_tokens=int(rng.integers(8, 40)), ignore_eos=True) for _ in range(12)]
    got = [o.outputs[0].token_ids for o in packed.generate(requests, params)]
    want = [o.outputs[0].token_ids for o in general.generate(requests, params)]
    assert got == want
    assert runner.graphs.replays > 0
    if spec is not None:
        assert runner.verify_graphs.replays > 0

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`ObserveGraphs`: the context projection over bucketed static buffers equals `context_kv`.

On the CPU the bucketed projection runs eagerly (padding, bucket reuse with fewer rows than
the previous step, errors); the captured CUDA graphs are checked only where CUDA is available.
Through the runner, `test_draft_graph.py` checks drafts made from contexts projected this way.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_dspark.checkpoint import load_state_dict
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.draft_runner import DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.observe_graph import OBSERVE_BUCKETS, ObserveGraphs, observe_bucket, row_chunks

torch.set_num_threads(1)


def make_drafter(tiny, device: str = "cpu") -> DSparkDrafter:
    tiny_config, _, random_state_dict = tiny
    config = tiny_config()
    drafter = DSparkDrafter(DSparkConfig.from_dict(config))
    load_state_dict(drafter, random_state_dict(config, seed=5))
    return drafter.to(device).eval()


def test_buckets() -> None:
    assert [observe_bucket(n) for n in (1, 8, 9, 512)] == [8, 8, 16, 512]
    assert observe_bucket(513) is None and OBSERVE_BUCKETS == tuple(sorted(OBSERVE_BUCKETS))


def check_steps(drafter: DSparkDrafter, graphs: ObserveGraphs, atol: float) -> None:
    """Steps of decreasing and increasing size through shared buckets (stale padding rows)."""
    gen = torch.Generator().manual_seed(1)
    width, limit = drafter.config.feature_size, drafter.config.max_position_embeddings
    for rows in (9, 16, 3, 1, 8, 100, 17, 512):
        feats = torch.randn(rows, width, generator=gen).to(drafter.cos_sin.device)
        positions = torch.randint(0, limit, (rows,), generator=gen).tolist()
        k, v = graphs.run(feats, positions)
        with torch.no_grad():
            want_k, want_v = drafter.context_kv(feats, torch.tensor(positions, device=feats.device))
        assert k.shape == want_k.shape == (drafter.config.num_hidden_layers, rows,
                                           drafter.config.num_key_value_heads, drafter.config.head_dim)
        torch.testing.assert_close(k, want_k, rtol=0, atol=atol)
        torch.testing.assert_close(v, want_v, rtol=0, atol=atol)


def test_bucketed_projection_equals_context_kv(tiny) -> None:
    drafter = make_drafter(tiny)
    graphs = ObserveGraphs(drafter)
    assert not graphs.capture
    check_steps(drafter, graphs, atol=1e-5)
    assert sorted(graphs.buffers) == [8, 16, 32, 128, 512]


def test_errors(tiny) -> None:
    drafter = make_drafter(tiny)
    graphs = ObserveGraphs(drafter)
    width = drafter.config.feature_size
    with pytest.raises(ValueError, match="positions"):
        graphs.run(torch.zeros(0, width), [])
    with pytest.raises(ValueError, match="positions"):
        graphs.run(torch.zeros(513, width), list(range(513)))
    with pytest.raises(ValueError, match="positions"):
        graphs.run(torch.zeros(3, width), [0, 1])
    with pytest.raises(ValueError, match="capture"):
        ObserveGraphs(drafter, capture=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_captured_projection_equals_context_kv(tiny) -> None:
    drafter = make_drafter(tiny, "cuda")
    graphs = ObserveGraphs(drafter)
    assert graphs.capture
    check_steps(drafter, graphs, atol=1e-4)
    assert graphs.replays == 8 and len(graphs.graphs) == 5


def test_row_chunks_match_row_by_row() -> None:
    gen = torch.Generator().manual_seed(3)
    for _ in range(50):
        counts = [(f"r{i}", int(n)) for i, n in enumerate(torch.randint(0, 40, (int(torch.randint(1, 8, (1,))),),
                                                                       generator=gen))]
        size = int(torch.randint(1, 50, (1,), generator=gen))
        chunks = row_chunks(counts, size)
        owners = [rid for rid, n in counts for _ in range(n)]
        assert [hi - lo for lo, hi, _ in chunks[:-1]] == [size] * (len(chunks) - 1)
        assert [lo for lo, _, _ in chunks] == list(range(0, len(owners), size))
        for lo, hi, chunk in chunks:   # each chunk's items own its rows, in order, ids distinct
            assert [rid for rid, n in chunk for _ in range(n)] == owners[lo:hi]
            assert len({rid for rid, _ in chunk}) == len(chunk) and all(n > 0 for _, n in chunk)
    assert row_chunks([], 4) == [] and row_chunks([("a", 0)], 4) == []
    for size in (0, 2.5, True):
        with pytest.raises(ValueError, match="size"):
            row_chunks([("a", 1)], size)
    for counts in ([("a", -3), ("b", 2)], [("a", 1.5)], [("a", 1), ("a", 2)]):
        with pytest.raises(ValueError, match="counts"):
            row_chunks(counts, 4)


def test_flush_beyond_largest_bucket_goes_through_buckets(tiny) -> None:
    """A flush of more rows than the largest bucket is projected in bucket-sized chunks (never an
    eager `context_kv` over a new row count) and stores what the eager projection stores. As on
    CUDA, each bucket's outputs are views of one buffer that its next run overwrites: each chunk
    must be written before the next one runs."""
    drafter = make_drafter(tiny)
    eager, bucketed = DSparkDraftRunner(drafter, graphs=False), DSparkDraftRunner(drafter, graphs=True)
    run, outputs = bucketed.observe_graphs.run, {}

    def graph_like(features, positions):   # returns views of the bucket's one output buffer
        k, v = run(features, positions)
        size = observe_bucket(len(positions))
        if size not in outputs:
            outputs[size] = tuple(torch.empty((t.shape[0], size) + tuple(t.shape[2:]), dtype=t.dtype) for t in (k, v))
        for buffer, t in zip(outputs[size], (k, v)):
            buffer[:, :t.shape[1]].copy_(t)
        return tuple(buffer[:, :k.shape[1]] for buffer in outputs[size])

    bucketed.observe_graphs.run = graph_like
    calls: list[int] = []
    context_kv = drafter.context_kv

    def recorded(features, positions):
        calls.append(features.shape[0])
        return context_kv(features, positions)

    gen = torch.Generator().manual_seed(4)
    width = drafter.config.feature_size
    limit = drafter.config.max_position_embeddings
    lengths = {"a": 300, "b": 500, "c": 7, "d": 420}   # 1,227 rows: the 512 bucket twice, then 256
    assert sum(lengths.values()) <= 3 * 512 and max(lengths.values()) < limit
    items = [(rid, list(range(n)), torch.randn(n, width, generator=gen)) for rid, n in lengths.items()]
    eager.observe_batch(items)
    drafter.context_kv = recorded
    try:
        bucketed.observe_batch(items)
    finally:
        del drafter.context_kv
    assert calls == [512, 512, 256]
    for rid in lengths:
        want_k, want_v = eager.context_of(rid)
        k, v = bucketed.context_of(rid)
        torch.testing.assert_close(k, want_k, rtol=0, atol=1e-5)
        torch.testing.assert_close(v, want_v, rtol=0, atol=1e-5)

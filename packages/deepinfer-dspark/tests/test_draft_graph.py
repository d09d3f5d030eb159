# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`DraftGraphs`: the greedy draft round over bucketed static buffers equals the eager round.

On the CPU `DSparkDraftRunner(graphs=True)` runs the static round eagerly on the bucketed,
padded buffers, so the bucketing, padding and buffer reuse are checked here against
`graphs=False` (the eager path, itself checked against a float64 reference in
test_drafter_model.py). The captured CUDA graphs are checked only where CUDA is available.
"""

from __future__ import annotations

import random

import pytest
import torch

from deepinfer_dspark.checkpoint import load_state_dict
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.draft_graph import EAGER_USES, DraftGraphs, context_bucket, greedy_round, row_bucket
from deepinfer_dspark.draft_runner import DraftRequest, DraftSampling, DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter

torch.set_num_threads(1)

# (markov_head_type, markov_rank, enable_confidence_head, confidence_head_with_markov)
HEADS = {
    "vanilla+conf": ("vanilla", 16, True, True),
    "rnn+conf": ("rnn", 16, True, True),
    "gated+plain-conf": ("gated", 16, True, False),
    "no-heads": ("vanilla", 0, False, False),
}


def drafter_for(tiny, heads: str, device: str = "cpu", seed: int = 3) -> tuple[dict, DSparkDrafter]:
    tiny_config, _, random_state_dict = tiny
    head_type, rank, conf, conf_markov = HEADS[heads]
    config = tiny_config(markov_head_type=head_type, markov_rank=rank, enable_confidence_head=conf,
                         confidence_head_with_markov=conf_markov)
    drafter = DSparkDrafter(DSparkConfig.from_dict(config))
    load_state_dict(drafter, random_state_dict(config, seed=seed))
    return config, drafter.to(device).eval()


class Pair:
    """A bucketed runner and an eager runner over one drafter, fed the same features."""

    def __init__(self, drafter: DSparkDrafter, bucketed: bool | None = True) -> None:
        self.graphs = DSparkDraftRunner(drafter, torch.tensor([0.8, 1.5, 1.0, 2.0]), graphs=bucketed)
        self.eager = DSparkDraftRunner(drafter, torch.tensor([0.8, 1.5, 1.0, 2.0]), graphs=False)
        self.width = drafter.config.feature_size
        self.gen = torch.Generator().manual_seed(0)

    def observe(self, rid: str, n: int) -> None:
        start = self.eager.num_positions(rid)
        feats = torch.randn(n, self.width, generator=self.gen)
        for runner in (self.graphs, self.eager):
            runner.observe(rid, list(range(start, start + n)), feats)

    def rollback(self, rid: str, n: int) -> None:
        for runner in (self.graphs, self.eager):
            runner.rollback(rid, n)

    def check(self, requests: list[DraftRequest], num_tokens: int, atol: float = 1e-5) -> None:
        rounds = self.graphs.graphs.rounds
        got = self.graphs.draft(requests, num_tokens)
        want = self.eager.draft(requests, num_tokens)
        assert self.graphs.graphs.rounds == rounds + 1   # the bucketed path ran
        for req, a, b in zip(requests, got, want, strict=True):
            assert a.tokens.device.type == "cpu" and a.probs is None and b.probs is None
            assert a.tokens.tolist() == b.tokens.cpu().tolist(), req
            if b.confidence_logits is None:
                assert a.confidence_logits is None and a.confidences is None
                continue
            torch.testing.assert_close(a.confidence_logits, b.confidence_logits.cpu(), atol=atol, rtol=0)
            torch.testing.assert_close(a.confidences, b.confidences.cpu(), atol=atol, rtol=0)


def requests_for(lengths: dict[str, int], rng: random.Random, vocab: int) -> list[DraftRequest]:
    return [DraftRequest(rid, rng.randrange(vocab), n) for rid, n in lengths.items()]


def test_buckets() -> None:
    assert [row_bucket(n) for n in (1, 2, 3, 5, 9, 33, 64)] == [1, 2, 4, 8, 16, 64, 64]
    assert row_bucket(65) is None
    assert [context_bucket(n, 512) for n in (0, 1, 16, 17, 100, 256, 257, 500, 512)] == \
        [16, 16, 16, 32, 128, 256, 512, 512, 512]
    assert context_bucket(513, 512) is None
    assert context_bucket(300, 400) == 400 and context_bucket(5, 8) == 8   # capped by max_context


@pytest.mark.parametrize("heads", list(HEADS))
def test_bucketed_equals_eager(tiny, heads) -> None:
    config, drafter = drafter_for(tiny, heads)
    pair, rng = Pair(drafter), random.Random(heads)
    block, vocab = config["block_size"], config["vocab_size"]
    for count in (1, 3, 5, 9):                       # 3, 5 and 9 leave padding rows
        lengths = {f"r{count}-{i}": rng.choice([0, 1, 7, 16, 17, 40, 70]) for i in range(count)}
        for rid, n in lengths.items():
            pair.observe(rid, n + rng.randrange(3))  # the cache may hold more than the anchor sees
        for num_tokens in (1, block):
            pair.check(requests_for(lengths, rng, vocab), num_tokens)
    assert len(pair.graphs.graphs.buffers) >= 4      # several (rows, context) buckets were used


def test_reused_buffers_hide_stale_context(tiny) -> None:
    """Rounds reuse one (4, 64) bucket with shorter contexts in rows that held longer ones, and
    after rollbacks: an entry left over from an earlier round must stay invisible."""
    config, drafter = drafter_for(tiny, "rnn+conf")
    pair, rng = Pair(drafter), random.Random(1)
    vocab = config["vocab_size"]
    for rid, n in (("a", 60), ("b", 10), ("c", 37), ("d", 50)):
        pair.observe(rid, n)
    pair.check(requests_for({"a": 60, "b": 10, "c": 37, "d": 50}, rng, vocab), 4)
    pair.check(requests_for({"b": 10, "c": 37, "a": 60}, rng, vocab), 4)   # row 3 now padding
    pair.rollback("a", 25)
    pair.observe("a", 5)                             # positions 35..39 of "a" are new features now
    pair.check(requests_for({"b": 10, "a": 40, "c": 20}, rng, vocab), 4)
    pair.rollback("d", 30)
    pair.check(requests_for({"d": 20, "b": 3, "c": 37, "a": 33}, rng, vocab), 3)
    buffers = pair.graphs.graphs.buffers
    assert list(buffers) == [(4, 64)]
    last, pool = buffers[(4, 64)], pair.graphs.context
    assert bool(pool.k[:, pool.block_table("b")[0], 3:10].abs().sum() > 0)   # stale entries are there...
    index = torch.arange(64)
    for row, n in enumerate((20, 3, 37, 33)):
        assert torch.equal(last.context_valid[row], index < n)      # ...and hidden
    tokens, positions = last.tokens[:, 0].tolist(), last.positions[:, 0].tolist()
    assert positions == [20, 3, 37, 33] and len(tokens) == 4


def test_non_finite_stale_entries_do_not_reach_other_requests(tiny) -> None:
    """A request whose context holds an inf leaves it in the bucket's buffers; a later request
    reusing that row with a shorter context must not see it (0 weight x inf = NaN otherwise)."""
    config, drafter = drafter_for(tiny, "vanilla+conf")
    pair, rng = Pair(drafter), random.Random(4)
    bad = torch.randn(20, pair.width)
    bad[18] = float("inf")                           # e.g. an overflowed 16-bit target feature
    for runner in (pair.graphs, pair.eager):
        runner.observe("a", list(range(20)), bad)
    pair.graphs.draft(requests_for({"a": 20}, rng, config["vocab_size"]), 4)   # bucket (1, 32)
    for runner in (pair.graphs, pair.eager):
        runner.remove("a")
    pair.observe("b", 17)                            # bucket (1, 32) again: entry 18 is stale
    pool = pair.graphs.context
    stale = pool.v[:, pool.block_table("b")[0], 18]
    assert not bool(torch.isfinite(stale).all())
    pair.check(requests_for({"b": 17}, rng, config["vocab_size"]), 4)
    out = pair.graphs.draft(requests_for({"b": 17}, rng, config["vocab_size"]), 4)[0]
    assert bool(torch.isfinite(out.confidences).all())


def test_round_checks_its_lists(tiny) -> None:
    _, drafter = drafter_for(tiny, "no-heads")
    runner = DSparkDraftRunner(drafter, graphs=False)
    runner.observe("a", [0, 1, 2], torch.randn(3, drafter.config.feature_size))
    graphs = DraftGraphs(drafter, runner.context, capture=False)
    with pytest.raises(ValueError, match="anchor_tokens, lengths: one entry per request"):
        graphs.run(["a"], [1, 2], [0], 2)
    with pytest.raises(ValueError, match="request_ids, lengths: one entry per request"):
        graphs.run(["a"], [1, 2], [0, 1], 2)
    with pytest.raises(ValueError, match="request_id: 'b' has no draft context"):
        graphs.run(["b"], [1], [0], 2)


def test_padding_rows_do_not_change_real_rows(tiny) -> None:
    """The static round over a padded bucket equals the same round over exactly the real rows."""
    config, drafter = drafter_for(tiny, "vanilla+conf")
    runner = DSparkDraftRunner(drafter, graphs=False)
    graphs = DraftGraphs(drafter, runner.context)
    gen = torch.Generator().manual_seed(2)
    for rid, n in (("a", 9), ("b", 0), ("c", 21)):
        runner.observe(rid, list(range(n)), torch.randn(n, drafter.config.feature_size, generator=gen))
    rids, lengths, anchors = ["a", "b", "c"], [9, 0, 21], [5, 6, 7]
    tokens, conf = graphs.run(rids, anchors, lengths, 4)
    assert tokens.shape == (3, 4) and conf.shape == (3, 4) and tokens.dtype == torch.int64
    padded = graphs.buffers[(4, 32)]
    assert padded.context_valid[3].sum() == 0 and padded.positions[3].tolist() == [0, 1, 2, 3]
    context_k, context_v = runner.context.gather(padded.blocks, 4, 32)
    exact_tokens, exact_conf = greedy_round(drafter, padded.tokens[:3], padded.positions[:3], context_k[:, :3],
                                            context_v[:, :3], padded.context_valid[:3], 4)
    assert torch.equal(tokens, exact_tokens)
    torch.testing.assert_close(conf, exact_conf, atol=1e-5, rtol=0)


def test_eager_path_when_not_greedy_or_too_large(tiny) -> None:
    config, drafter = drafter_for(tiny, "vanilla+conf")
    pair = Pair(drafter)
    for i in range(65):
        pair.observe(f"r{i}", 3)
    graphs = pair.graphs.graphs
    mixed = [DraftRequest("r0", 1, 3), DraftRequest("r1", 2, 3, DraftSampling(temperature=1.0, seed=3))]
    outs = pair.graphs.draft(mixed, 2)
    assert graphs.rounds == 0 and outs[1].probs is not None      # a sampled row: eager, with probs
    many = [DraftRequest(f"r{i}", i, 3) for i in range(65)]
    got, want = pair.graphs.draft(many, 2), pair.eager.draft(many, 2)
    assert graphs.rounds == 0                                    # 65 rows fit no bucket
    assert all(torch.equal(a.tokens, b.tokens) for a, b in zip(got, want))
    assert not graphs.fits(65, 3) and graphs.fits(64, 512) and not graphs.fits(1, 513)
    pair.check(many[:64], 2)                                     # 64 rows: the largest bucket


def test_errors(tiny) -> None:
    _, drafter = drafter_for(tiny, "no-heads")
    runner = DSparkDraftRunner(drafter, graphs=True)
    with pytest.raises(ValueError, match="capture"):
        DraftGraphs(drafter, runner.context, capture=True)
    with pytest.raises(ValueError, match="max_context"):
        DraftGraphs(drafter, runner.context, max_context=0)
    graphs = DraftGraphs(drafter, runner.context, max_context=32)
    runner.observe("e", [], torch.zeros(0, drafter.config.feature_size))
    with pytest.raises(ValueError, match="lengths"):
        graphs.run(["e"], [1], [33], 2)
    with pytest.raises(ValueError, match="num_tokens"):
        graphs.run(["e"], [1], [0], 5)
    tokens, conf = graphs.run(["e"], [1], [0], 2)
    assert tokens.shape == (1, 2) and conf is None
    runner.observe("r", [0, 1, 2], torch.zeros(3, drafter.config.feature_size))
    for bad, field in ((DraftRequest("r", 1, 3.0), "anchor_position"), (DraftRequest("r", True, 3), "anchor_token")):
        with pytest.raises(ValueError, match=f"{field}: must be an int"):
            runner.draft([bad], 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
@pytest.mark.parametrize("heads", ["vanilla+conf", "no-heads"])
def test_captured_graphs_equal_eager(tiny, heads) -> None:
    config, drafter = drafter_for(tiny, heads, device="cuda")
    pair, rng = Pair(drafter, bucketed=None), random.Random(7)  # graphs default to on with CUDA
    graphs = pair.graphs.graphs
    assert graphs is not None and graphs.capture
    block, vocab = config["block_size"], config["vocab_size"]
    for count in (1, 3, 5, 9):
        lengths = {f"r{count}-{i}": rng.choice([0, 1, 7, 16, 17, 40, 70]) for i in range(count)}
        for rid, n in lengths.items():
            pair.observe(rid, n)
        for num_tokens in (1, block):
            for _ in range(EAGER_USES + 1):   # eager rounds, then the capture
                pair.check(requests_for(lengths, rng, vocab), num_tokens, atol=1e-4)
            captured = len(graphs.graphs)
            pair.check(requests_for(lengths, rng, vocab), num_tokens, atol=1e-4)  # a replay
            assert len(graphs.graphs) == captured
    rid = next(iter(lengths))
    pair.rollback(rid, lengths[rid] // 2)
    lengths[rid] -= lengths[rid] // 2
    pair.check(requests_for(lengths, rng, vocab), block, atol=1e-4)
    eager = sum(min(uses, EAGER_USES) for uses in graphs.uses.values())   # the rounds before each capture
    assert graphs.replays == graphs.rounds - eager > 0
    assert graphs.captures == len(graphs.graphs)
    # The pool outgrows its blocks: its tensors move, so the graphs must be re-captured.
    generation, pool, captures = graphs.generation, pair.graphs.context, graphs.captures
    for i in range(pool.num_blocks + 1):
        pair.observe(f"grow{i}", pool.block_size)
    assert pool.generation > generation
    pair.check(requests_for(lengths, rng, vocab), block, atol=1e-4)
    assert graphs.generation == pool.generation and graphs.captures == captures + 1 == captures + len(graphs.graphs)


class FakeGraph:
    """A stand-in for a captured graph on the CPU: `replay` re-runs the call into its outputs."""

    def __init__(self, fn, outputs: torch.Tensor) -> None:
        self.fn, self.outputs, self.replays = fn, outputs, 0

    def replay(self) -> None:
        self.replays += 1
        fresh = self.fn()
        for out, new in zip(*((self.outputs, fresh) if isinstance(fresh, tuple) else ((self.outputs,), (fresh,)))):
            out.copy_(new)


def fake_captures(monkeypatch, *modules) -> list[FakeGraph]:
    """Replaces `capture_graph` in `modules` with a stand-in that runs the call once and returns
    a `FakeGraph`; the list it returns collects every stand-in made."""
    fakes: list[FakeGraph] = []

    def fake_capture(fn, device, pool):
        outputs = fn()
        fakes.append(FakeGraph(fn, outputs))
        return fakes[-1], outputs

    for module in modules:
        monkeypatch.setattr(module, "capture_graph", fake_capture)
    return fakes


def test_graphs_are_captured_after_eager_uses_and_kept_counting_across_pool_moves(tiny, monkeypatch) -> None:
    """A bucket runs eagerly `EAGER_USES` times, is captured on the next use and replayed after;
    when the context pool moves every graph is dropped, and a bucket used before is re-captured on
    its next use. Every round equals the eager runner's (the stand-in graph re-runs the round)."""
    import deepinfer_dspark.draft_graph as draft_graph

    fakes = fake_captures(monkeypatch, draft_graph)
    config, drafter = drafter_for(tiny, "vanilla+conf")
    pair, rng = Pair(drafter), random.Random(5)
    graphs = pair.graphs.graphs
    graphs.capture = True   # the capture path, with the stand-in
    block, vocab = config["block_size"], config["vocab_size"]
    lengths = {f"r{i}": rng.choice([3, 9, 20]) for i in range(3)}
    for rid, n in lengths.items():
        pair.observe(rid, n)
    captures = []
    for _ in range(EAGER_USES + 3):
        pair.check(requests_for(lengths, rng, vocab), block)
        captures.append(graphs.captures)
    assert captures == [0] * EAGER_USES + [1, 1, 1] and graphs.replays == 3 and fakes[0].replays == 3
    pair.check(requests_for({"r0": lengths["r0"]}, rng, vocab), block)   # another bucket: eager
    assert graphs.captures == 1 and graphs.uses[(1, 32, block)] == 1
    pool, generation = pair.graphs.context, pair.graphs.context.generation
    for i in range(pool.num_blocks + 1):   # the pool outgrows its blocks: its tensors move
        pair.observe(f"grow{i}", pool.block_size)
    assert pool.generation > generation
    pair.check(requests_for(lengths, rng, vocab), block)   # used before: re-captured at once
    assert graphs.captures == 2 and len(graphs.graphs) == 1 and graphs.generation == pool.generation


def test_bucket_keys_cover_every_round_that_fits(tiny) -> None:
    """`bucket_keys` lists, largest first and once each, the key of every round of <= max_rows
    requests with contexts of <= max_length positions, and nothing larger."""
    _, drafter = drafter_for(tiny, "vanilla+conf")
    graphs = DraftGraphs(drafter, DSparkDraftRunner(drafter, graphs=False).context, max_context=300)
    for max_rows, max_length in ((1, 1), (5, 40), (64, 300), (200, 1000), (3, 17)):
        keys = graphs.bucket_keys(3, max_rows, max_length)
        assert len(set(keys)) == len(keys) and keys == sorted(keys, reverse=True)
        wanted = {(row_bucket(rows), context_bucket(n, 300), 3)
                  for rows in range(1, min(max_rows, 64) + 1) for n in range(0, min(max_length, 300) + 1)}
        assert set(keys) == wanted, (max_rows, max_length)
    for name, args in (("max_rows", (3, 0, 5)), ("max_length", (3, 4, 0)), ("num_tokens", (0, 4, 5)),
                       ("num_tokens", (drafter.config.block_size + 1, 4, 5))):
        with pytest.raises(ValueError, match=name):
            graphs.bucket_keys(*args)
        with pytest.raises(ValueError, match=name):   # checked on the CPU too
            graphs.capture_all(*args)
    assert DraftGraphs(drafter, graphs.context).capture_all(3, 4, 40) == 0   # the CPU: nothing to capture


def test_capture_all_leaves_no_capture_or_eager_round_to_serving(tiny, monkeypatch) -> None:
    """After `capture_all` every round that fits replays a graph captured before serving (no
    eager first uses, no capture), its result equal to the eager runner's; the context
    projections replay graphs captured up front too."""
    import deepinfer_dspark.draft_graph as draft_graph
    import deepinfer_dspark.observe_graph as observe_graph

    fakes = fake_captures(monkeypatch, draft_graph, observe_graph)
    config, drafter = drafter_for(tiny, "rnn+conf")
    pair, rng = Pair(drafter), random.Random(9)
    graphs, observe = pair.graphs.graphs, pair.graphs.observe_graphs
    graphs.capture = observe.capture = True   # the capture paths, with the stand-in
    block, vocab = config["block_size"], config["vocab_size"]
    pool = pair.graphs.context
    pool.reserve(pool.num_blocks + 1)   # the pool moved before the captures: they must follow it
    captured = pair.graphs.capture_all(block, 6, 70)
    assert captured == len(graphs.bucket_keys(block, 6, 70)) + len(observe_graph.OBSERVE_BUCKETS) == len(fakes)
    outputs = [t for f in fakes for t in (f.outputs if isinstance(f.outputs, tuple) else (f.outputs,))]
    assert not any(t.requires_grad for t in outputs)   # no autograd history kept in the pool
    for count in (1, 2, 3, 6):
        lengths = {f"r{count}-{i}": rng.randrange(0, 70) for i in range(count)}
        for rid, n in lengths.items():
            pair.observe(rid, n)
        pair.check(requests_for(lengths, rng, vocab), block)
    assert graphs.captures == len(graphs.graphs) == captured - len(observe_graph.OBSERVE_BUCKETS)
    assert graphs.replays == graphs.rounds == 4 and observe.replays > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_capture_all_on_cuda_replays_from_the_first_round(tiny) -> None:
    config, drafter = drafter_for(tiny, "vanilla+conf", device="cuda")
    pair, rng = Pair(drafter, bucketed=None), random.Random(11)
    graphs, block, vocab = pair.graphs.graphs, config["block_size"], config["vocab_size"]
    captured = pair.graphs.capture_all(block, 5, 70)
    assert captured == graphs.captures + len(pair.graphs.observe_graphs.graphs) > 0
    for count in (1, 3, 5):
        lengths = {f"r{count}-{i}": rng.randrange(0, 70) for i in range(count)}
        for rid, n in lengths.items():
            pair.observe(rid, n)
        pair.check(requests_for(lengths, rng, vocab), block, atol=1e-4)
    assert graphs.replays == graphs.rounds == 3 and graphs.captures == len(graphs.graphs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_a_capture_survives_garbage_collection_of_an_older_graph() -> None:
    """An older graph that turns into cyclic garbage during a capture must not be freed by an
    automatic collection there (a graph's destructor invalidates the capture in progress): the
    captured call drops such a graph and allocates enough to trigger collections at every
    threshold; the capture must still succeed and replay."""
    import gc

    from deepinfer_dspark.graph_capture import WARMUP_RUNS, capture_graph

    device = torch.device("cuda")
    x = torch.ones(4, device=device)
    holder = [capture_graph(lambda: x * 2, device, None)[0]]
    calls = [0]

    def fn():
        calls[0] += 1
        if calls[0] == WARMUP_RUNS + 1:          # the captured call
            cycle = [holder.pop()]
            cycle.append(cycle)
            del cycle                            # garbage now, for the cyclic collector only
            junk = [[] for _ in range(10_000)]   # allocations that trigger collections
            del junk
        return x + 1

    thresholds = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        graph, out = capture_graph(fn, device, None)
    finally:
        gc.set_threshold(*thresholds)
    x.fill_(5.0)
    graph.replay()
    assert out.tolist() == [6.0] * 4 and not holder

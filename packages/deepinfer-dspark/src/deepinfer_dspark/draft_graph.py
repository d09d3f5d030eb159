# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The greedy DSpark draft round over fixed-shape buffers, replayed as CUDA graphs.

An eager draft round is about 1,250 small aten calls (the backbone, then γ steps of Markov
head, argmax and confidence head); on a GPU with a slow host that is dispatch time. The round of
an all-greedy batch has no data-dependent control flow once its shapes are fixed, so it can be
captured once per shape and replayed:

  rows      R requests are padded to the bucket Rb in `ROW_BUCKETS` (1, 2, 4, ..., 64);
  context   the longest context n is padded to Nb = the next power of two >= max(n, 16),
            capped at `max_context` (default: the drafter's `max_position_embeddings`);
  draft     k = `num_tokens` is fixed per proposer; the k steps unroll inside the graph.

Per (Rb, Nb) one `DraftBuffers` (zeroed once) holds the round's inputs; per (Rb, Nb, k) one
graph reads them. Each round writes its anchors, positions, visibility and block ids into the
buffers (`DraftBuffers.load`: one host-to-device copy), replays (the graph gathers the rows'
contexts from the `ContextPool`, one `index_select` per K/V tensor), and reads one packed
`[Rb, 2k]` float64 output back with one device-to-host copy.

Padding: a padded row (index >= R) has anchor `mask_token_id` at position 0 and no visible
context; its block positions are always visible, so its softmax is finite, and its outputs are
discarded. Context entries of a row past its length are whatever the pool holds there (block 0
as padding, the rest of a partly filled block, another request's old positions); they are
hidden by `context_valid`, which every round rewrites, so their softmax weight is exactly 0 and
`drafter.attend` zeroes their values (a non-finite stale entry cannot leak in as 0 * inf).

Kernel ops under capture: `deepinfer_kernels` ops check value ranges only for CPU tensors
(`ops._checks.host_values`), so on CUDA their dispatch reads no device values; triton kernels
compile and the `cuda` backend's library loads during the warm-up runs, before capture, as for
the core's `DecodeGraphs`. Everything else in the round (embedding, linear, einsum, softmax,
argmax) is plain aten with static shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from deepinfer_dspark.context_pool import ContextPool
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.graph_capture import capture_graph

ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
MIN_CONTEXT = 16
DEFAULT_MAX_CONTEXT = 4096   # SmolLM2's drafter at Rb=64: 2 x 2 x 64 x 4096 x 3 x 64 x 2 B = 384 MiB of K/V
EAGER_USES = 2   # rounds a bucket runs eagerly before its graph is captured (see `DraftGraphs`)

Choose = Callable[[int, torch.Tensor], torch.Tensor]
"""(draft index k, corrected logits `[R, V]` float32) -> chosen tokens `[R]` int64."""


def greedy_choice(k: int, logits: torch.Tensor) -> torch.Tensor:
    """`ops.sample`'s greedy rule (the first maximum) without random draws: `[R, V]` -> `[R]` int64."""
    return logits.argmax(dim=-1)


def draft_loop(drafter: DSparkDrafter, hidden: torch.Tensor, anchor_tokens: torch.Tensor,
               choose: Choose) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The sequential pass of a round: Markov bias, choice, confidence logit, per position.

    Args:
        drafter: the drafter (its LM head, Markov head and confidence head).
        hidden: `[R, γ, d]` backbone outputs h_1..h_γ.
        anchor_tokens: `[R]` int64, x0 of each row.
        choose: picks x_{k+1} from the corrected logits of position k (`greedy_choice`, or a
            sampler that may record its distributions).

    Returns:
        `(tokens [R, γ] int64, confidence logits [R, γ] float32)`; the logits are None without a
        confidence head.
    """
    rows, gamma = hidden.shape[:2]
    base = drafter.compute_logits(hidden)                              # [R, γ, V] float32
    head = drafter.markov_head
    state = None if head is None else head.initial_state(rows, hidden)
    prev = anchor_tokens
    tokens, conf = [], []
    for k in range(gamma):
        logits = base[:, k]
        if head is not None:
            bias, state = head.step(prev, hidden[:, k], state)
            logits = logits + bias
        token = choose(k, logits)
        conf.append(drafter.confidence_logits(hidden[:, k], prev))
        tokens.append(token)
        prev = token
    conf_t = None if drafter.confidence_head is None else torch.stack(conf, dim=1)
    return torch.stack(tokens, dim=1), conf_t


def greedy_round(drafter: DSparkDrafter, tokens: torch.Tensor, positions: torch.Tensor,
                 context_k: torch.Tensor, context_v: torch.Tensor, context_valid: torch.Tensor,
                 num_tokens: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One all-greedy draft round with static shapes (what the CUDA graphs capture).

    Args:
        drafter: the drafter.
        tokens: `[R, G]` int64, `[x0, MASK, ...]` per row.
        positions: `[R, G]` int64 block positions `s .. s+G-1`.
        context_k, context_v: `[L, R, N, H_kv, D]` in the drafter dtype.
        context_valid: `[R, N]` bool; every row must see its block, which it always does.
        num_tokens: γ in [1, G].

    Returns:
        `(draft tokens [R, γ] int64, raw confidence logits [R, γ] float32 or None)`.
    """
    hidden = drafter(tokens, positions, context_k, context_v, context_valid)[:, :num_tokens]
    return draft_loop(drafter, hidden, tokens[:, 0], greedy_choice)


def row_bucket(rows: int) -> int | None:
    """The smallest of `ROW_BUCKETS` >= `rows`, or None when `rows` exceeds them all."""
    return next((size for size in ROW_BUCKETS if size >= rows), None)


def context_bucket(longest: int, max_context: int) -> int | None:
    """Nb: the next power of two >= max(`longest`, 16), capped at `max_context`; None when
    `longest` exceeds `max_context`."""
    if longest > max_context:
        return None
    return min(1 << (max(longest, MIN_CONTEXT) - 1).bit_length(), max_context)


class DraftBuffers:
    """The inputs of a round of `[rows, G]` blocks over `[rows, width]` contexts, zeroed once.

    Args:
        drafter: sets G, the device and the mask token.
        rows: R' rows (a bucket, or a round's exact count).
        width: N' context positions per row.
        block_size: B of the `ContextPool` the contexts are read from.

    Attributes:
        tokens: `[R', G]` int64; column 0 is rewritten by `load`, the rest stay `mask_token_id`.
        positions: `[R', G]` int64.
        context_valid: `[R', N']` bool.
        blocks: `[R' * ceil(N' / B)]` int64, the `ContextPool.gather_index` of the round.
    """

    def __init__(self, drafter: DSparkDrafter, rows: int, width: int, block_size: int) -> None:
        cfg, device = drafter.config, drafter.cos_sin.device
        self.rows, self.width, self.mask = rows, width, cfg.mask_token_id
        self.tokens = torch.full((rows, cfg.block_size), cfg.mask_token_id, dtype=torch.int64, device=device)
        self.positions = torch.zeros((rows, cfg.block_size), dtype=torch.int64, device=device)
        self.context_valid = torch.zeros((rows, width), dtype=torch.bool, device=device)
        self.blocks = torch.zeros(rows * -(-width // block_size), dtype=torch.int64, device=device)
        self._offsets = torch.arange(cfg.block_size, device=device)[None, :]
        self._index = torch.arange(width, device=device)[None, :]

    def load(self, anchor_tokens: Sequence[int], lengths: Sequence[int], blocks: Sequence[int]) -> None:
        """Writes a round of R <= `rows` requests in place; rows R.. become padding.

        Args:
            anchor_tokens: x0 per request.
            lengths: n_r = s_r per request (the anchor position: context positions 0..s_r-1).
            blocks: the round's `ContextPool.gather_index(ids, rows, width)`.

        Raises:
            ValueError: more requests than rows, a context longer than `width`, lists of
                different lengths or a block index of another size (names the argument).
        """
        count, pad = len(lengths), self.rows - len(lengths)
        if len(anchor_tokens) != count:
            raise ValueError(f"anchor_tokens, lengths: one entry per request, got {len(anchor_tokens)}, {count}")
        if pad < 0 or max(lengths, default=0) > self.width or min(lengths, default=0) < 0:
            raise ValueError(f"lengths: {count} rows of {min(lengths, default=0)}..{max(lengths, default=0)} "
                             f"positions do not fit {self.rows} x {self.width} buffers")
        if len(blocks) != self.blocks.numel():
            raise ValueError(f"blocks: {len(blocks)} block ids, the buffers take {self.blocks.numel()}")
        host = torch.tensor(list(anchor_tokens) + [self.mask] * pad + list(lengths) + [0] * pad + list(blocks),
                            dtype=torch.int64)
        if self.tokens.device.type == "cuda":
            host = host.pin_memory()
        # One host-to-device copy for the anchors, the lengths and the block ids; pinned and
        # non-blocking: no wait for the kernels already queued.
        packed = host.to(self.tokens.device, non_blocking=True)
        anchors, lens = packed[:self.rows], packed[self.rows:2 * self.rows, None]
        self.tokens[:, 0].copy_(anchors)
        torch.add(lens, self._offsets, out=self.positions)
        torch.lt(self._index, lens, out=self.context_valid)   # every row, so no stale entry stays visible
        self.blocks.copy_(packed[2 * self.rows:])


def buffered_round(drafter: DSparkDrafter, pool: ContextPool, buffers: DraftBuffers, num_tokens: int
                   ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`greedy_round` over the buffers' rows, reading the contexts from `pool` (one gather per
    K/V tensor, inside the graph when captured)."""
    context_k, context_v = pool.gather(buffers.blocks, buffers.rows, buffers.width)
    return greedy_round(drafter, buffers.tokens, buffers.positions, context_k, context_v,
                        buffers.context_valid, num_tokens)


class DraftGraphs:
    """Bucketed static buffers for greedy rounds and, with `capture`, a CUDA graph per bucket.

    All graphs share one memory pool. The engine captures every bucket it can use before
    serving (`capture_all`, through the runner's factory). Otherwise a bucket's buffers are made
    on its first use and its graph is captured on its use after `EAGER_USES` eager rounds: a
    capture costs two warm-up rounds and the capture itself, mid-serving, and the rare buckets
    (the last requests of a batch, a probe at an unusual load) may never come back. Without
    `capture` (the CPU) every round runs eagerly on the bucketed buffers. Graphs read
    `context.k` / `context.v` in place: when the context pool reallocates them (its
    `generation` changes), every graph is dropped; a bucket captured up front or already used
    `EAGER_USES` times is re-captured on its next use.

    Args:
        drafter: the drafter, on its final device, with its final weights (graphs read the
            parameters in place).
        context: the `ContextPool` holding the requests' draft contexts.
        capture: capture CUDA graphs (needs the drafter on CUDA); default: whether it is.
        max_context: the largest Nb (default: `max_position_embeddings`, at most
            `DEFAULT_MAX_CONTEXT`); longer contexts do not `fit` (they run eagerly). It bounds the
            gathered context: `2 * L * 64 * Nb * H_kv * D` elements at the largest row bucket.

    Attributes:
        rounds: rounds run through the buckets so far.
        replays: graph replays so far.
        captures: graphs captured so far (each costs warm-up runs and a capture; `capture_all`'s
            and the re-captures after the context pool grew included).
        uses: rounds run per graph key (row bucket, context bucket, num_tokens).
        prepared: the keys `capture_all` captured (re-captured at once when dropped).

    Raises:
        ValueError: `capture` with the drafter off CUDA, or `max_context` < 1 (named).
    """

    def __init__(self, drafter: DSparkDrafter, context: ContextPool, capture: bool | None = None,
                 max_context: int | None = None) -> None:
        device = drafter.cos_sin.device
        capture = device.type == "cuda" if capture is None else capture
        if capture and device.type != "cuda":
            raise ValueError(f"capture: CUDA graphs need the drafter on CUDA, it is on {device}")
        if max_context is None:
            max_context = min(drafter.config.max_position_embeddings, DEFAULT_MAX_CONTEXT)
        self.max_context = max_context
        if self.max_context < 1:
            raise ValueError(f"max_context: must be >= 1, got {self.max_context}")
        self.drafter, self.context, self.capture, self.device = drafter, context, capture, device
        self.pool = torch.cuda.graph_pool_handle() if capture else None
        self.buffers: dict[tuple[int, int], DraftBuffers] = {}
        self.graphs: dict[tuple[int, int, int], torch.cuda.CUDAGraph] = {}
        self.outputs: dict[tuple[int, int, int], torch.Tensor] = {}
        self.generation = context.generation
        self.rounds = 0
        self.replays = 0
        self.captures = 0
        self.uses: dict[tuple[int, int, int], int] = {}
        self.prepared: set[tuple[int, int, int]] = set()

    def fits(self, rows: int, longest: int) -> bool:
        """Whether a round of `rows` requests whose longest context is `longest` has a bucket."""
        return 1 <= rows and row_bucket(rows) is not None and context_bucket(longest, self.max_context) is not None

    @torch.no_grad()
    def run(self, request_ids: Sequence[str], anchor_tokens: Sequence[int], lengths: Sequence[int],
            num_tokens: int, while_running: Callable[[], None] | None = None
            ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One all-greedy round of R requests.

        Args:
            request_ids: the requests (known to the context pool, distinct).
            anchor_tokens: x0 per request.
            lengths: n_r = s_r per request (context positions 0..s_r-1; at most what the pool holds).
            num_tokens: γ in [1, block_size].
            while_running: called once after the round's device work is launched and before the
                host waits for its result (host work overlapped with the drafter's forward on
                CUDA; on the CPU after the round).

        Returns:
            `(tokens [R, γ] int64, raw confidence logits [R, γ] float32 or None)`, fresh CPU
            tensors (one device-to-host copy for the round).

        Raises:
            ValueError: the round does not `fit`, a bad `num_tokens`, or an unknown request
                (named).
        """
        rows, longest = len(lengths), max(lengths, default=0)
        if not self.fits(rows, longest):
            raise ValueError(f"lengths: {rows} requests up to {longest} positions fit no bucket "
                             f"(rows <= {ROW_BUCKETS[-1]}, context <= {self.max_context})")
        if not 1 <= num_tokens <= self.drafter.config.block_size:
            raise ValueError(f"num_tokens: must be in [1, {self.drafter.config.block_size}], got {num_tokens}")
        if len(request_ids) != rows:
            raise ValueError(f"request_ids, lengths: one entry per request, got {len(request_ids)}, {rows}")
        shape = (row_bucket(rows), context_bucket(longest, self.max_context))
        buffers = self.buffers.get(shape)
        if buffers is None:
            buffers = self.buffers[shape] = DraftBuffers(self.drafter, *shape, self.context.block_size)
        buffers.load(anchor_tokens, lengths, self.context.gather_index(request_ids, *shape))
        self.rounds += 1
        if self.capture:
            self._follow_pool()
            key = shape + (num_tokens,)
            self.uses[key] = self.uses.get(key, 0) + 1
            if key not in self.graphs and (key in self.prepared or self.uses[key] > EAGER_USES):
                self._capture(key, buffers)
            if key in self.graphs:
                self.graphs[key].replay()
                self.replays += 1
                packed = self.outputs[key][:rows]
            else:
                packed = self._packed_round(buffers, num_tokens)[:rows]
            if while_running is not None:   # the host's turn while the device drafts
                while_running()
            packed = packed.cpu()   # copied before the next replay overwrites it
        else:
            packed = self._packed_round(buffers, num_tokens)[:rows]
            if while_running is not None:
                while_running()
        tokens = packed[:, :num_tokens].to(torch.int64)
        conf = packed[:, num_tokens:].to(torch.float32) if packed.shape[1] > num_tokens else None
        return tokens, conf

    def bucket_keys(self, num_tokens: int, max_rows: int, max_length: int) -> list[tuple[int, int, int]]:
        """The graph keys `(Rb, Nb, num_tokens)` a round of <= `max_rows` requests with contexts of
        <= `max_length` positions can use, largest first (rows above `ROW_BUCKETS` and contexts
        above `max_context` run eagerly and have none).

        Raises:
            ValueError: `max_rows` or `max_length` < 1, or `num_tokens` outside [1, block_size]
                (named).
        """
        for name, value in (("max_rows", max_rows), ("max_length", max_length)):
            if value < 1:
                raise ValueError(f"{name}: must be >= 1, got {value}")
        if not 1 <= num_tokens <= self.drafter.config.block_size:
            raise ValueError(f"num_tokens: must be in [1, {self.drafter.config.block_size}], got {num_tokens}")
        top_rows = row_bucket(min(max_rows, ROW_BUCKETS[-1]))
        top_context = context_bucket(min(max_length, self.max_context), self.max_context)
        widths = sorted({context_bucket(min(1 << i, top_context), self.max_context)
                         for i in range(top_context.bit_length() + 1)}, reverse=True)
        rows = [r for r in reversed(ROW_BUCKETS) if r <= top_rows]
        return [(r, w, num_tokens) for r in rows for w in widths]

    @torch.no_grad()
    def capture_all(self, num_tokens: int, max_rows: int, max_length: int) -> int:
        """Captures, before serving, the graph of every bucket in `bucket_keys`, as the core
        captures its own at start-up: no round then pays a capture or eager first uses
        mid-serving (on the H200 with SmolLM2-135M such rounds took 6-66 ms against ~3 ms for a
        replayed one: BENCHMARKS.md, session 13). Largest first, so that smaller graphs reuse
        the memory pool. A graph dropped later (the context pool grew) is re-captured on its
        bucket's next use.

        Returns:
            Graphs captured (0 without `capture`: nothing to do on the CPU).

        Raises:
            ValueError: as `bucket_keys`.
        """
        keys = self.bucket_keys(num_tokens, max_rows, max_length)
        if not self.capture:
            return 0
        self._follow_pool()
        missing = [key for key in keys if key not in self.graphs]
        for key in missing:
            buffers = self.buffers.get(key[:2])
            if buffers is None:
                buffers = self.buffers[key[:2]] = DraftBuffers(self.drafter, *key[:2], self.context.block_size)
            self._capture(key, buffers)
        self.prepared.update(keys)
        return len(missing)

    def _follow_pool(self) -> None:
        """Drops every graph when the context pool moved (they would read stale tensors)."""
        if self.generation != self.context.generation:
            self.graphs.clear()
            self.outputs.clear()
            self.generation = self.context.generation

    def _packed_round(self, buffers: DraftBuffers, num_tokens: int) -> torch.Tensor:
        """`buffered_round` with both outputs in one `[Rb, γ or 2γ]` float64 tensor, so one copy
        reads them back. NOTE: exact: token ids are < 2**53 and float32 widens exactly."""
        tokens, conf = buffered_round(self.drafter, self.context, buffers, num_tokens)
        return torch.cat([tokens.double()] + ([] if conf is None else [conf.double()]), dim=1)

    def _capture(self, key: tuple[int, int, int], buffers: DraftBuffers) -> None:
        self.captures += 1
        self.graphs[key], self.outputs[key] = capture_graph(
            lambda: self._packed_round(buffers, key[2]), self.device, self.pool)

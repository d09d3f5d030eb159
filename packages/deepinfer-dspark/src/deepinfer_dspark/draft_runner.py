# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DSparkDraftRunner: the requests' draft contexts (a `ContextPool`) and the batched `draft()` round.

One speculative round for request r with anchor x0 at position s (DeepSpec's evaluation
dataflow, Cheng et al. 2026, "DSpark", section 3):
  1. `observe` has projected the target features of positions 0 .. s-1 into the request's
     context in the `ContextPool` (every draft layer's context K/V);
  2. one batched block forward over `[x0, MASK, ...]` at positions s .. s+G-1 gives h_k and the
     base logits U_k;
  3. a left-to-right pass samples x_1..x_γ from `q_k = filter(softmax((U_k + B_k) / T))` (the
     Markov-corrected, temperature/top-k/top-p/min-p filtered law) and computes confidences.
After verification the engine `observe`s the newly committed positions, or `rollback`s.

Randomness: draft k (0-based) of a request is drawn by `ops.sample` keyed by
`(seed ^ DRAFT_STREAM, step + k)`. The XOR gives the drafter its own stream, independent of
the target's sampling and verification streams for the same (seed, step) (speculative
sampling needs the draft draw independent of the accept/residual draws). A row's draws depend
only on its own inputs, so draws are seeded and batch invariant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from deepinfer_kernels import ops

from deepinfer_dspark.confidence import calibrated_confidence
from deepinfer_dspark.context_pool import ContextPool, integer
from deepinfer_dspark.draft_graph import DraftBuffers, DraftGraphs, draft_loop, greedy_choice
from deepinfer_dspark.draft_types import DraftOutput, DraftRequest, DraftSampling  # noqa: F401 (re-exported)
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.observe_graph import OBSERVE_BUCKETS, ObserveGraphs, row_chunks

# Mixed into each request's seed for draft draws: an arbitrary constant below 2**62, so
# `seed ^ DRAFT_STREAM` of an int64 seed is again an int64.
DRAFT_STREAM = 0x3C6EF372FE94F82B


class DSparkDraftRunner:
    """Owns the drafter's context pool and runs batched draft rounds.

    Args:
        drafter: a loaded `DSparkDrafter`.
        confidence_temperatures: STS temperatures T_1..T_G (`[block_size]`, > 0), or None for 1.
        graphs: run all-greedy rounds of <= 64 requests through `DraftGraphs`, and context
            projections through `ObserveGraphs`, in chunks of 512 rows above that (captured CUDA
            graphs on CUDA; on the CPU the same bucketed static work, eagerly: for tests).
            None: on when the drafter is on CUDA.
        block_size: positions per block of the context pool.
        num_blocks: blocks the context pool starts with (it doubles when full; each growth
            drops the captured draft graphs, see `reserve_blocks`).

    Attributes:
        context: the `ContextPool` (every request's draft context K/V).
        graphs: the `DraftGraphs`, or None when disabled.
        observe_graphs: the `ObserveGraphs`, or None when disabled.

    Raises:
        ValueError: bad `confidence_temperatures` (named).
    """

    def __init__(self, drafter: DSparkDrafter, confidence_temperatures: torch.Tensor | None = None,
                 graphs: bool | None = None, block_size: int = 32, num_blocks: int = 64) -> None:
        self.drafter = drafter
        cfg = drafter.config
        self.context = ContextPool(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim, drafter.dtype,
                                   drafter.cos_sin.device, block_size, num_blocks)
        self.confidence_temperatures: torch.Tensor | None = None
        self.set_confidence_temperatures(confidence_temperatures)
        if graphs is None:
            graphs = drafter.cos_sin.device.type == "cuda"
        self.graphs: DraftGraphs | None = DraftGraphs(drafter, self.context) if graphs else None
        self.observe_graphs: ObserveGraphs | None = ObserveGraphs(drafter) if graphs else None

    @torch.no_grad()
    def capture_all(self, num_tokens: int, max_rows: int, max_length: int) -> int:
        """Captures before serving every draft graph a round of <= `max_rows` requests drafting
        `num_tokens` over contexts of <= `max_length` positions can use, and every context
        projection graph (`DraftGraphs.capture_all`, `ObserveGraphs.capture_all`). Returns the
        graphs captured (0 on the CPU or without graphs)."""
        drafts = 0 if self.graphs is None else self.graphs.capture_all(num_tokens, max_rows, max_length)
        return drafts + (0 if self.observe_graphs is None else self.observe_graphs.capture_all())

    def set_confidence_temperatures(self, temperatures: torch.Tensor | None) -> None:
        """Installs per-position STS temperatures `[block_size]` (None: all 1).

        Raises:
            ValueError: wrong shape or a value <= 0 (names `confidence_temperatures`).
        """
        if temperatures is not None:
            temperatures = torch.as_tensor(temperatures, dtype=torch.float32).cpu()
            size = self.drafter.config.block_size
            if temperatures.shape != (size,) or not bool((temperatures > 0).all()):
                raise ValueError(f"confidence_temperatures: need {size} values > 0, got "
                                 f"{temperatures.tolist()}")
        self.confidence_temperatures = temperatures

    def num_positions(self, request_id: str) -> int:
        """Positions in the request's draft context (0 for an unknown request)."""
        return self.context.length(request_id)

    @torch.no_grad()
    def observe(self, request_id: str, positions: Sequence[int], target_features: torch.Tensor) -> None:
        """Appends committed positions' target features to the request's draft context.

        Args:
            request_id: registered on first use.
            positions: the absolute positions of the rows, consecutive and starting at
                `num_positions(request_id)`.
            target_features: `[n, m*d]` concatenated features of the target layers
                `target_layer_ids` at those positions.

        Raises:
            ValueError: positions not consecutive from the context length, beyond the RoPE
                table, or features of the wrong shape (names the field).
        """
        self.observe_batch([(request_id, positions, target_features)])

    @torch.no_grad()
    def observe_batch(self, items: Sequence[tuple[str, Sequence[int], torch.Tensor]]) -> None:
        """`observe` for several requests with one context projection over all their rows and
        one write into the pool per 512 rows (a step's worth of committed tokens: a few large
        kernels, none per request).

        Raises:
            ValueError: as `observe`, for the first bad item; nothing is stored then. (A device
                error, e.g. out of memory, in a later chunk leaves the earlier chunks stored.)
        """
        feature_size = self.drafter.config.feature_size
        for request_id, positions, target_features in items:
            if target_features.shape != (len(positions), feature_size):
                raise ValueError(f"target_features: shape {tuple(target_features.shape)}, expected "
                                 f"{(len(positions), feature_size)} for request {request_id!r}")
        parts = [f for _, positions, f in items if len(positions)]
        device = self.drafter.cos_sin.device
        features = (torch.cat([f.to(device) for f in parts]) if len(parts) > 1 else parts[0] if parts
                    else torch.zeros(0, feature_size, dtype=self.drafter.dtype, device=device))
        self.observe_rows([(request_id, positions) for request_id, positions, _ in items], features)

    @torch.no_grad()
    def observe_rows(self, items: Sequence[tuple[str, Sequence[int]]], features: torch.Tensor) -> None:
        """`observe_batch` with the features already joined: item i owns the next `len(positions)`
        rows of `features` `[sum n, m*d]` (no per-request tensor slices).

        Raises:
            ValueError: positions not consecutive from a request's context length, beyond the
                RoPE table, a repeated request, or a row count that does not match (names the
                field); nothing is stored then.
        """
        cfg, drafter = self.drafter.config, self.drafter
        flat: list[int] = []
        for request_id, positions in items:
            n, start = len(positions), self.context.length(request_id)
            if n and (positions[0] != start or positions[-1] != start + n - 1 or
                      list(positions) != list(range(start, start + n))):
                raise ValueError(f"positions: must be {start}..{start + n - 1} for request "
                                 f"{request_id!r}, got {list(positions)[:8]}")
            if start + n > cfg.max_position_embeddings:
                raise ValueError(f"positions: {start + n - 1} >= max_position_embeddings "
                                 f"({cfg.max_position_embeddings})")
            flat.extend(positions)
        if features.shape != (len(flat), cfg.feature_size):
            raise ValueError(f"target_features: shape {tuple(features.shape)}, "
                             f"expected {(len(flat), cfg.feature_size)}")
        ids = [request_id for request_id, _ in items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"request_id: repeated in one observation: {ids[:8]}")
        for request_id in ids:  # an empty observation still registers the request
            self.context.add(request_id)
        if not flat:
            return
        features = features.to(drafter.cos_sin.device, drafter.dtype)
        counts = [(request_id, len(positions)) for request_id, positions in items if len(positions)]
        if self.observe_graphs is None:
            k, v = drafter.context_kv(features, torch.tensor(flat, dtype=torch.int64, device=features.device))
            self.context.write(counts, k, v)
            return
        # Through the bucketed graphs, in chunks of the largest bucket when the rows exceed it (a
        # flush after a long pause): on the H200 the first eager projection of a new row count ran
        # 4-8 ms slower than a repeat of it (benchmarks/flush_cost.py); the buckets are fixed shapes.
        for lo, hi, chunk in row_chunks(counts, OBSERVE_BUCKETS[-1]):
            k, v = self.observe_graphs.run(features[lo:hi], flat[lo:hi])   # views: written at once
            self.context.write(chunk, k, v)

    def rollback(self, request_id: str, num_positions: int) -> None:
        """Forgets the last `num_positions` positions of the request's draft context.

        Raises:
            ValueError: unknown `request_id`, or `num_positions` outside [0, context length].
        """
        held = self._length(request_id)
        count = integer(num_positions)
        if count is None or not 0 <= count <= held:
            raise ValueError(f"num_positions: must be an int in [0, {held}], got {num_positions!r}")
        self.context.crop(request_id, held - count)

    def remove(self, request_id: str) -> None:
        """Frees the request's draft context (a no-op for an unknown request)."""
        self.context.release(request_id)

    def context_of(self, request_id: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The request's draft context `(keys, values)`, each `[L, n, H_kv, D]` (copies).

        Raises:
            ValueError: unknown `request_id`.
        """
        return self.context.context(request_id)

    @torch.no_grad()
    def draft(self, requests: Sequence[DraftRequest], num_tokens: int,
              while_running: Callable[[], None] | None = None) -> list[DraftOutput]:
        """Drafts `num_tokens` tokens for every request in one batched block forward.

        The block is always `block_size` positions long, as in training; the first
        `num_tokens` outputs are sampled. An all-greedy round that fits `DraftGraphs` runs there
        (a graph replay on CUDA) and returns CPU tensors; other rounds run eagerly on the device.

        Args:
            requests: one `DraftRequest` per request (distinct ids).
            num_tokens: γ in [1, block_size].
            while_running: called once per round with requests, after the round's device work is
                launched and before the host waits for it (all-greedy rounds: host work runs
                during the drafter's forward on CUDA); after the round otherwise, or on the CPU.

        Returns:
            One `DraftOutput` per request, in order.

        Raises:
            ValueError: bad `num_tokens`, unknown or repeated `request_id`, an anchor token
                outside the vocabulary, or an anchor position the context does not reach or the
                RoPE table does not cover (names the field).
        """
        cfg = self.drafter.config
        if not 1 <= num_tokens <= cfg.block_size:
            raise ValueError(f"num_tokens: must be in [1, {cfg.block_size}], got {num_tokens}")
        if not requests:
            return []
        self._check_requests(requests)
        lengths = [r.anchor_position for r in requests]
        if (self.graphs is not None and all(r.sampling.temperature == 0 for r in requests)
                and self.graphs.fits(len(requests), max(lengths))):
            tokens, conf_logits = self.graphs.run([r.request_id for r in requests],
                                                  [r.anchor_token for r in requests], lengths, num_tokens,
                                                  while_running)
            return self._outputs(tokens, None, conf_logits)
        hidden = self._block_hidden(requests)                          # [R, G, d]
        return self._sample(requests, hidden[:, :num_tokens], while_running)

    def _check_requests(self, requests: Sequence[DraftRequest]) -> None:
        cfg = self.drafter.config
        ids = [r.request_id for r in requests]
        if len(set(ids)) != len(ids):
            raise ValueError(f"request_id: repeated in one draft call: {ids}")
        for r in requests:
            held = self._length(r.request_id)
            for name in ("anchor_token", "anchor_position"):
                value = getattr(r, name)
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"{name}: must be an int, got {type(value).__name__} {value!r}")
            if not 0 <= r.anchor_token < cfg.vocab_size:
                raise ValueError(f"anchor_token: {r.anchor_token} outside [0, {cfg.vocab_size})")
            if not 0 <= r.anchor_position <= held:
                raise ValueError(f"anchor_position: {r.anchor_position} of {r.request_id!r} needs "
                                 f"the draft context to hold positions 0..{r.anchor_position - 1}, "
                                 f"it holds {held}")
            if r.anchor_position + cfg.block_size > cfg.max_position_embeddings:
                raise ValueError(f"anchor_position: {r.anchor_position} + block_size exceeds "
                                 f"max_position_embeddings ({cfg.max_position_embeddings})")

    def _block_hidden(self, requests: Sequence[DraftRequest]) -> torch.Tensor:
        """Pads the requests' contexts to one batch `[R, longest]` and runs the parallel backbone."""
        lengths, ids = [r.anchor_position for r in requests], [r.request_id for r in requests]
        rows, width = len(requests), max(max(lengths), 1)
        buffers = DraftBuffers(self.drafter, rows, width, self.context.block_size)
        buffers.load([r.anchor_token for r in requests], lengths, self.context.gather_index(ids, rows, width))
        context_k, context_v = self.context.gather(buffers.blocks, rows, width)
        return self.drafter(buffers.tokens, buffers.positions, context_k, context_v, buffers.context_valid)

    def _sample(self, requests: Sequence[DraftRequest], hidden: torch.Tensor,
                while_running: Callable[[], None] | None = None) -> list[DraftOutput]:
        """The sequential pass (`draft_loop`): Markov bias, filtered law, seeded draw, confidence
        (`while_running` called once: before the greedy round's copy to the host, else at the end)."""
        device = hidden.device
        anchors = torch.tensor([r.anchor_token for r in requests], dtype=torch.int64, device=device)
        if all(r.sampling.temperature == 0 for r in requests):
            tokens, conf_logits = draft_loop(self.drafter, hidden, anchors, greedy_choice)
            packed = torch.cat([tokens.double()] + ([] if conf_logits is None else [conf_logits.double()]), dim=1)
            if while_running is not None:
                while_running()
            packed = packed.cpu()   # one device-to-host copy for the round (exact, see DraftGraphs)
            gamma = tokens.shape[1]
            return self._outputs(packed[:, :gamma].to(torch.int64), None,   # q one-hot: left implicit
                                 None if conf_logits is None else packed[:, gamma:].to(torch.float32))
        params = _sampling_tensors([r.sampling for r in requests], device)
        greedy = (params["temperature"] == 0)[:, None]
        probs = []

        def choose(k: int, logits: torch.Tensor) -> torch.Tensor:
            q = ops.sampling_probs(logits, params["temperature"], params["top_k"], params["top_p"],
                                   params["min_p"])
            token = ops.sample(logits, params["temperature"], params["top_k"], params["top_p"],
                               params["min_p"], params["seeds"], params["steps"] + k)
            probs.append(torch.where(greedy, torch.nn.functional.one_hot(token, q.shape[1]).float(), q))
            return token

        tokens, conf_logits = draft_loop(self.drafter, hidden, anchors, choose)
        if while_running is not None:
            while_running()
        return self._outputs(tokens, torch.stack(probs, dim=1), conf_logits)

    def _outputs(self, tokens: torch.Tensor, probs: torch.Tensor | None, conf_logits: torch.Tensor | None
                 ) -> list[DraftOutput]:
        """Per-row `DraftOutput`s of a round (`[R, γ]` tokens and logits, `[R, γ, V]` probs),
        with the logits calibrated by the STS temperatures."""
        confidences = None
        if conf_logits is not None:
            temps = self.confidence_temperatures
            confidences = calibrated_confidence(conf_logits, None if temps is None else temps.to(conf_logits.device))
        return [DraftOutput(tokens[i], None if probs is None else probs[i],
                            None if confidences is None else confidences[i],
                            None if conf_logits is None else conf_logits[i]) for i in range(tokens.shape[0])]

    def _length(self, request_id: str) -> int:
        if request_id not in self.context:
            raise ValueError(f"request_id: {request_id!r} has no draft context (observe it first)")
        return self.context.length(request_id)


def _sampling_tensors(sampling: Sequence[DraftSampling], device: torch.device) -> dict[str, torch.Tensor]:
    """Per-row sampling parameters as the tensors `ops.sample` takes (draft stream seeds)."""
    def column(name: str, dtype: torch.dtype) -> torch.Tensor:
        return torch.tensor([getattr(s, name) for s in sampling], dtype=dtype, device=device)

    return {
        "temperature": column("temperature", torch.float32),
        "top_k": column("top_k", torch.int64),
        "top_p": column("top_p", torch.float32),
        "min_p": column("min_p", torch.float32),
        "seeds": torch.tensor([s.seed ^ DRAFT_STREAM for s in sampling], dtype=torch.int64,
                              device=device),
        "steps": column("step", torch.int64),
    }

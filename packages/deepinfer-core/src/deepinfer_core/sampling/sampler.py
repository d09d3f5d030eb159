# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Sampler: logits processors (penalties, min_tokens bans) + `ops.sample` + logprobs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from deepinfer_kernels import ops

from deepinfer_core.executor.transfer import to_device
from deepinfer_core.sampling.logprobs import TokenLogprobs, token_logprobs
from deepinfer_core.sampling.penalties import PenaltyState, apply_penalties

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request
    from deepinfer_core.structured.manager import TokenBitmask


@dataclasses.dataclass
class SamplerOutput:
    """One sampled token per row.

    Attributes:
        token_ids: B sampled ids.
        logprobs: per row, the raw-distribution logprobs (None where not asked).
    """

    token_ids: list[int]
    logprobs: list[TokenLogprobs | None]


class Sampler:
    """Samples the next token of each request from its last-position logits.

    Per step: (1) raw logprobs are taken for rows that asked (vLLM V1 default: the model's
    distribution before any processing); (2) penalties (see `penalties.py`); (3) structured-output
    masks (`ops.apply_token_bitmask`): tokens the request's grammar forbids get -inf; (4) EOS and
    `stop_token_ids` get -inf while fewer than `min_tokens` tokens exist, unless that would leave
    a row with no allowed token (a grammar that only allows EOS wins); (5) `ops.sample` with
    temperature / top-k / top-p / min-p and the draw keyed by (request seed, output length), so
    a request's tokens depend only on its own logits, seed and step (batch invariant).

    Per-request penalty statistics live here (keyed by request id); call `release` when a
    request ends.
    """

    def __init__(self) -> None:
        self._penalties: dict[str, PenaltyState] = {}

    def release(self, request_id: str) -> None:
        """Drops the request's sampling state (after it finished or was aborted)."""
        self._penalties.pop(request_id, None)

    def __call__(self, logits: torch.Tensor, requests: list[Request],
                 masks: TokenBitmask | None = None) -> SamplerOutput:
        """Samples one token per row.

        Args:
            logits: [B, V] float32, row b belongs to `requests[b]`; modified in place.
            requests: B requests (each with a resolved `seed`).
            masks: structured-output bitmasks ([B, ceil(V/32)] int32 and the [B'] rows they
                apply to, on the CPU; moved to the logits' device here), or None.

        Returns:
            B token ids and the optional logprobs.
        """
        if logits.shape[0] != len(requests):
            raise ValueError(f"logits has {logits.shape[0]} rows for {len(requests)} requests")
        device = logits.device
        params = [r.sampling_params for r in requests]
        lp_rows = [b for b, p in enumerate(params) if p.logprobs is not None]
        raw = logits[lp_rows] if lp_rows else None  # advanced indexing copies

        pen_rows = [b for b, p in enumerate(params) if p.has_penalties]
        if pen_rows:
            self._apply_penalties(logits, [requests[b] for b in pen_rows], pen_rows)
        if masks is not None:
            _apply_masks(logits, masks)
        self._ban_stop_tokens(logits, requests)

        sampled = self._draw(logits, requests)
        logprobs: list[TokenLogprobs | None] = [None] * len(requests)
        if lp_rows:
            rows = torch.tensor(lp_rows, dtype=torch.int64, device=device)
            for b, lp in zip(lp_rows, token_logprobs(raw, sampled[rows], [params[b].logprobs for b in lp_rows])):
                logprobs[b] = lp
        return SamplerOutput(sampled.tolist(), logprobs)

    def sample_ids(self, logits: torch.Tensor, requests: list[Request], masks: TokenBitmask | None = None
                   ) -> torch.Tensor:
        """Samples one token per row and leaves the ids on the logits' device (no host sync).

        For requests without penalties or logprobs (the asynchronous engine path); structured
        output masks and `min_tokens` bans apply as in `__call__`. `logits` is modified in place.
        The masks' host buffer must stay unchanged until the step's ids are read (the copy to
        the device does not block).

        Returns:
            `[B]` int64 token ids on `logits.device`.
        """
        return self.prepare_ids(logits, requests)(masks)

    def prepare_ids(self, logits: torch.Tensor, requests: list[Request]) -> Callable[[TokenBitmask | None], torch.Tensor]:
        """`sample_ids` in two halves: what it reads from the requests (output lengths for the
        seeded draw and the `min_tokens` bans) is captured now, and the returned function applies
        the masks and draws later (the asynchronous engine samples a step's grammar rows only
        when their masks are filled, after the requests got the step's placeholders).

        Raises:
            ValueError: `logits` rows differ from `len(requests)`.
        """
        if logits.shape[0] != len(requests):
            raise ValueError(f"logits has {logits.shape[0]} rows for {len(requests)} requests")
        bans = self._stop_bans(requests)
        draw = self._draw_args(requests, logits.device)

        def finish(masks: TokenBitmask | None) -> torch.Tensor:
            if masks is not None:
                _apply_masks(logits, masks)
            _apply_bans(logits, *bans)
            return logits.argmax(dim=-1) if draw is None else ops.sample(logits, *draw)
        return finish

    @staticmethod
    def _draw(logits: torch.Tensor, requests: list[Request]) -> torch.Tensor:
        draw = Sampler._draw_args(requests, logits.device)
        return logits.argmax(dim=-1) if draw is None else ops.sample(logits, *draw)

    @staticmethod
    def _draw_args(requests: list[Request], device: torch.device) -> tuple[torch.Tensor, ...] | None:
        """`ops.sample`'s per-row arguments after the logits, or None when every row is greedy
        (`argmax`: ops.sample's greedy rule, the first maximum, without random draws)."""
        params = [r.sampling_params for r in requests]
        if all(p.greedy for p in params):
            return None
        return (
            to_device([0.0 if p.greedy else float(p.temperature) for p in params], torch.float32, device),
            to_device([p.top_k for p in params], torch.int64, device),
            to_device([float(p.top_p) for p in params], torch.float32, device),
            to_device([float(p.min_p) for p in params], torch.float32, device),
            to_device([r.seed for r in requests], torch.int64, device),
            to_device([r.num_output_tokens for r in requests], torch.int64, device),
        )

    def _apply_penalties(self, logits: torch.Tensor, requests: list[Request], rows: list[int]) -> None:
        vocab = logits.shape[1]
        states = []
        for r in requests:
            state = self._penalties.get(r.request_id)
            if state is None:
                state = self._penalties[r.request_id] = PenaltyState(r.prompt_token_ids, vocab, logits.device)
            state.sync(r.output_token_ids)
            states.append(state)
        index = torch.tensor(rows, dtype=torch.int64, device=logits.device)

        def column(name: str) -> torch.Tensor:
            return torch.tensor([float(getattr(r.sampling_params, name)) for r in requests], dtype=torch.float32,
                                device=logits.device)

        logits[index] = apply_penalties(
            logits[index],
            torch.stack([s.prompt_mask for s in states]),
            torch.stack([s.output_counts for s in states]),
            column("repetition_penalty"), column("presence_penalty"), column("frequency_penalty"))

    @staticmethod
    def _ban_stop_tokens(logits: torch.Tensor, requests: list[Request]) -> None:
        _apply_bans(logits, *Sampler._stop_bans(requests))

    @staticmethod
    def _stop_bans(requests: list[Request]) -> tuple[list[int], list[int]]:
        """(rows, token ids) of EOS and `stop_token_ids` while a row has fewer than `min_tokens`."""
        rows: list[int] = []
        cols: list[int] = []
        for b, r in enumerate(requests):
            params = r.sampling_params
            if len(r.output_token_ids) >= params.min_tokens:   # (not the property: every request, every step)
                continue
            banned = set(r.stop_token_ids)
            if r.eos_token_id is not None and not params.ignore_eos:
                banned.add(r.eos_token_id)
            rows.extend([b] * len(banned))
            cols.extend(banned)
        return rows, cols


def _apply_bans(logits: torch.Tensor, rows: list[int], cols: list[int]) -> None:
    """Sets `logits[rows[i], cols[i]]` to -inf, built on the host (no device sync), except
    where that leaves a row with no finite logit: it keeps EOS then (its grammar allows nothing
    else)."""
    if rows:
        device = logits.device
        unique = sorted(set(rows))
        slot = {b: i for i, b in enumerate(unique)}
        unique_rows = to_device(unique, torch.int64, device)
        banned = logits[unique_rows]  # a copy
        banned[to_device([slot[b] for b in rows], torch.int64, device), to_device(cols, torch.int64, device)] \
            = float("-inf")
        keep = torch.isfinite(banned).any(dim=-1, keepdim=True)
        logits[unique_rows] = torch.where(keep, banned, logits[unique_rows])


def _apply_masks(logits: torch.Tensor, masks: TokenBitmask) -> None:
    """`ops.apply_token_bitmask` with host masks copied without a device sync (pinned sources:
    a copy from pageable memory would wait for every kernel already queued)."""
    device = logits.device
    rows = masks.rows
    if rows.numel() == 0:
        return
    if device.type == "cuda" and not rows.is_pinned():
        rows = rows.pin_memory()
    ops.apply_token_bitmask(logits, masks.bitmask.to(device, non_blocking=True), rows.to(device, non_blocking=True))

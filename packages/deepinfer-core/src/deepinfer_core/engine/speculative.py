# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Speculative decoding inside the engine: ask a proposer for drafts, verify them losslessly.

Per step: requests about to decode get drafts from the `Proposer` (stored on the request; the
scheduler appends them behind the request's last token and trims them to the budget); the model
computes logits for the last token and every draft in one pass; `verify` accepts a prefix of the
drafts and adds one correction/bonus token, so each verification emits 1..k+1 tokens drawn
exactly from the target distribution (Leviathan et al. 2023; Chen et al. 2023). The scheduler
then rolls the KV of rejected drafts back.

Requests with penalties, `min_tokens`, or structured output decode without drafts (their
logits processors depend on every previous token; verifying through them is future work).
A proposer that raises, or returns a draft that breaks the `Draft` contract (an id outside the
vocabulary, probs of the wrong shape, dtype or device), fails only the requests concerned
(finish reason "error", the message names `speculative_config.proposer`); nothing bad reaches
the model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from deepinfer_core.engine.dormant_steps import DormantSteps
from deepinfer_core.engine.proposer_plugins import load_proposer
from deepinfer_core.engine.spec_types import SpecStats, TokenView, spec_eligible
from deepinfer_core.executor.transfer import to_device
from deepinfer_core.interfaces import Draft, DraftRequest, Proposer
from deepinfer_core.sampling.logprobs import TokenLogprobs, token_logprobs

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request


class SpeculativeDecoder:
    """Drafts for decoding requests and verifies the drafts.

    Args:
        proposer: the draft source.
        num_speculative_tokens: most drafts per request per step (k >= 1).
        max_model_len: longest sequence; drafts never run past it or past `max_tokens`.
        vocab_size: V of the target; draft ids must lie in [0, V), draft probs be `[n, V]`.
        device: the target's device, where draft probs must live.

    Attributes:
        stats: engine-wide counters; `request_stats` holds per-request counters until `remove`.
    """

    def __init__(self, proposer: Proposer, num_speculative_tokens: int, max_model_len: int,
                 vocab_size: int, device: torch.device | str = "cpu") -> None:
        if num_speculative_tokens < 1:
            raise ValueError(f"num_speculative_tokens: must be >= 1, got {num_speculative_tokens}")
        self.proposer = proposer
        self.k = num_speculative_tokens
        self.max_model_len = max_model_len
        self.vocab_size = vocab_size
        self.device = torch.empty(0, device=device).device  # as tensors report it: "cuda" -> cuda:0
        self.stats = SpecStats()
        self.request_stats: dict[str, SpecStats] = {}
        self._reported: dict[str, tuple[int, int, int]] = {}
        self.dormant = DormantSteps(proposer)   # stretches that ask the proposer nothing
        self._forgotten: set[str] = set()        # requests the proposer forgot before `remove`

    def propose(self, requests: list[Request]) -> dict[str, str]:
        """Stores drafts on the requests that will decode next step (`spec_token_ids`, `spec_probs`).

        Returns:
            request id -> error message (names `speculative_config.proposer`) for each request the
            proposer failed: it raised, returned the wrong number of drafts, or returned a draft
            that breaks the `Draft` contract. The engine fails those requests alone.
        """
        idle_round = getattr(self.proposer, "idle_round", None)
        if idle_round is not None and self.idle_rounds() > 0:  # a paused round: nothing per request
            try:
                idle_round(len(requests))
            except Exception as exc:  # noqa: BLE001 - reported on each request it could have drafted for
                message = f"speculative_config.proposer: idle_round failed: {type(exc).__name__}: {exc}"
                return {r.request_id: message for r in requests if not r.is_finished}
            return {}
        asks: list[DraftRequest] = []
        targets: list[Request] = []
        for r in requests:
            room = self._room(r)
            if room <= 0:
                continue
            p = r.sampling_params
            asks.append(DraftRequest(r.request_id, TokenView(r.all_token_ids), room, 0.0 if p.greedy else float(p.temperature),
                                     int(p.top_k), float(p.top_p), float(p.min_p), int(r.seed), r.num_output_tokens))
            targets.append(r)
        if not asks:   # no request to ask (none eligible, or no room left): an idle round for the proposer
            if idle_round is not None and requests:
                try:
                    idle_round(len(requests))
                except Exception as exc:  # noqa: BLE001 - reported on each request it could have drafted for
                    message = f"speculative_config.proposer: idle_round failed: {type(exc).__name__}: {exc}"
                    return {r.request_id: message for r in requests if not r.is_finished}
            return {}
        try:  # a plug-in's failure must not take down the requests it was not asked about
            running = getattr(self.proposer, "running", None) if len(asks) < len(requests) else None
            if running is not None:
                running(len(requests))   # the round's batch holds requests it is not asked about
            drafts = self.proposer.propose(asks)
            if not isinstance(drafts, (list, tuple)):
                raise TypeError(f"returned {type(drafts).__name__}, expected a list of {len(asks)} Drafts")
            if len(drafts) != len(asks):
                raise ValueError(f"returned {len(drafts)} drafts for {len(asks)} requests")
        except Exception as exc:  # noqa: BLE001 - reported on each request it drafted for
            message = f"speculative_config.proposer: propose failed: {type(exc).__name__}: {exc}"
            return {r.request_id: message for r in targets}
        errors: dict[str, str] = {}
        for r, ask, d in zip(targets, asks, drafts):
            problem = self._check_draft(d)
            if problem is not None:
                errors[r.request_id] = f"speculative_config.proposer: {problem}"
                continue
            tokens = list(d.token_ids)[:ask.max_tokens]
            r.spec_token_ids = tokens
            r.spec_probs = None if d.probs is None or not tokens else d.probs[:len(tokens)]
            self._stats(r.request_id).proposed += len(tokens)
            self.stats.proposed += len(tokens)
        return errors

    def _room(self, r: Request) -> int:
        """Drafts the request may get this step: 0 unless it decodes next with spec-eligible
        sampling; emitting accepted + 1 tokens must stay within max_tokens and max_model_len."""
        if r.is_finished or r.num_computed_tokens != r.num_tokens - 1 or not spec_eligible(r):
            return 0
        room = min(self.k, self.max_model_len - r.num_tokens - 1)
        if r.max_tokens is not None:
            room = min(room, r.max_tokens - r.num_output_tokens - 1)
        return room

    def _check_draft(self, draft: object) -> str | None:
        """What breaks the `Draft` contract in a proposer's answer (None when it is valid)."""
        if not isinstance(draft, Draft):
            return f"expected a Draft, got {type(draft).__name__}"
        tokens = draft.token_ids
        if not isinstance(tokens, (list, tuple)) or not all(
                isinstance(t, int) and not isinstance(t, bool) and 0 <= t < self.vocab_size for t in tokens):
            return f"draft token_ids must be a list of ints in [0, {self.vocab_size}), got {tokens!r:.80}"
        q = draft.probs
        if q is not None and not (isinstance(q, torch.Tensor) and q.dtype == torch.float32
                                  and q.shape == (len(tokens), self.vocab_size) and q.device == self.device):
            got = (f"{q.dtype} {tuple(q.shape)} on {q.device}" if isinstance(q, torch.Tensor)
                   else type(q).__name__)
            return (f"draft probs must be None or a [{len(tokens)}, {self.vocab_size}] float32 tensor on "
                    f"{self.device}, got {got}")
        return None

    def verify(self, logits: torch.Tensor, requests: list[Request], drafts: list[list[int]]
               ) -> tuple[list[list[int]], list[list[TokenLogprobs] | None]]:
        """Accepts a prefix of each request's drafts and appends a correction/bonus token.

        Args:
            logits: `[sum(len(d) + 1), V]` float32: per request, the rows of its last known token
                and of each draft, in order.
            requests: R requests (each with its `spec_probs` for these drafts, or None).
            drafts: the R draft lists the step verified.

        Returns:
            Per request the emitted tokens (accepted drafts + 1), and their logprobs (None unless
            the request asked for logprobs).
        """
        from deepinfer_core.spec.rejection import verify, verify_greedy

        device = logits.device
        params = [r.sampling_params for r in requests]
        if all(p.greedy for p in params):   # known on the host: no parameter tensors, one device read
            emitted = verify_greedy(logits, drafts)
        else:
            # Two pinned copies (`to_device`), no wait for the queued verification pass.
            floats = to_device([[0.0 if p.greedy else float(p.temperature) for p in params],
                                [float(p.top_p) for p in params], [float(p.min_p) for p in params]],
                               torch.float32, device)
            ints = to_device([[p.top_k for p in params], [r.seed for r in requests],
                              [r.num_output_tokens for r in requests]], torch.int64, device)
            emitted = verify(logits, drafts, [r.spec_probs for r in requests], floats[0], ints[0], floats[1],
                             floats[2], ints[1], ints[2])
        logprobs: list[list[TokenLogprobs] | None] = []
        offset = 0
        for r, d, out in zip(requests, drafts, emitted):
            num_accepted = len(out) - 1
            self._stats(r.request_id).add(len(d), num_accepted)
            self.stats.add(len(d), num_accepted)
            if r.sampling_params.logprobs is not None:
                rows = logits[offset:offset + len(out)]
                targets = torch.tensor(out, dtype=torch.int64, device=device)
                logprobs.append(token_logprobs(rows, targets, [r.sampling_params.logprobs] * len(out)))
            else:
                logprobs.append(None)
            offset += len(d) + 1
            r.spec_probs = None
        return emitted, logprobs

    def idle_rounds(self) -> int:
        """Upcoming `propose` calls the proposer declares draft-free (0 when it declares nothing)."""
        idle = getattr(self.proposer, "idle_rounds", None)
        try:
            return max(0, int(idle())) if idle is not None else 0
        except Exception:  # noqa: BLE001 - a faulty plug-in only loses the overlap
            return 0

    def wants_features(self) -> bool:
        """Whether the next step must capture the proposer's target features
        (`Proposer.wants_features`). True without the method, and when it raises or returns
        anything but False: features are then captured as always (nothing is lost)."""
        wants = getattr(self.proposer, "wants_features", None)
        if wants is None:
            return True
        try:
            return wants() is not False
        except Exception:  # noqa: BLE001 - a faulty plug-in only keeps its features
            return True

    @property
    def target_layer_ids(self) -> tuple[int, ...]:
        """Target layers whose features the proposer reads (empty for n-gram and other model-free ones).

        Raises:
            ValueError: the proposer's `target_layer_ids` is not a sequence (names `speculative_config`).
        """
        layers = getattr(self.proposer, "target_layer_ids", ()) or ()
        if isinstance(layers, (str, bytes)) or not isinstance(layers, (list, tuple, Sequence)):
            raise ValueError(f"speculative_config: the proposer's target_layer_ids must be a sequence of "
                             f"layer indices, got {type(layers).__name__} {layers!r:.40}")
        return tuple(layers)

    def observe(self, scheduled: list[tuple[Request, int]], drafts: dict[str, list[int]],
                emitted: dict[str, list[int]], aux_hidden: torch.Tensor, cu_seqlens: list[int]) -> dict[str, str]:
        """Hands the proposer the target features of the tokens this step committed.

        A prefill chunk commits all its tokens; a verification commits its first token and the
        accepted drafts (the features of rejected drafts are dropped). A proposer with
        `observe_step` gets the whole step unsliced; one with `observe_many(items)` gets it in one
        call; otherwise `observe` is called per request.

        Returns:
            request id -> error message (names `speculative_config.proposer`) for the requests of
            a call that raised; empty when it did not.
        """
        # Called after the scheduler's update: num_computed_tokens already counts these tokens.
        # A plain step: columns at once (for an unfinished request the loop below gives the same).
        if not drafts and not any(req.is_finished for req, _ in scheduled):
            ids = [req.request_id for req, _ in scheduled]
            counts = [n for _, n in scheduled]
            firsts = [req.num_computed_tokens - n for req, n in scheduled]
            starts = cu_seqlens[:len(scheduled)]
        else:
            ids, firsts, counts, starts = [], [], [], []
            for i, (req, num_new) in enumerate(scheduled):
                if req.is_finished:
                    continue
                count = len(emitted[req.request_id]) if req.request_id in drafts else num_new
                ids.append(req.request_id)
                firsts.append(req.num_computed_tokens - count)
                counts.append(count)
                starts.append(cu_seqlens[i])
        try:
            step = getattr(self.proposer, "observe_step", None)
            if step is not None:  # the whole step, unsliced (cheap while a drafter is paused)
                step(ids, firsts, counts, starts, aux_hidden)
                return {}
            items = [(rid, list(range(first, first + n)), aux_hidden[row:row + n])
                     for rid, first, n, row in zip(ids, firsts, counts, starts)]
            many = getattr(self.proposer, "observe_many", None)
            if many is not None:  # one call per step (a drafter can batch its context projection)
                many(items)
            else:
                for item in items:
                    self.proposer.observe(*item)
        except Exception as exc:  # noqa: BLE001 - fails the requests it was told about, alone
            message = f"speculative_config.proposer: observe failed: {type(exc).__name__}: {exc}"
            return {request_id: message for request_id in ids}
        return {}

    def track(self, request: Request) -> None:
        """Hands a proposer that has `track` the request's live token list (prompt + output, as
        the engine extends it; see `Proposer`), once, when the request is added. A proposer that
        raises only loses what it would have read there."""
        track = getattr(self.proposer, "track", None)
        if track is None:
            return
        try:
            track(request.request_id, TokenView(request.all_token_ids))
        except Exception:  # noqa: BLE001, S110 - the request runs either way
            pass

    def draining(self, flag: bool) -> None:
        """Tells a proposer that has `draining` whether the engine only drains the requests it
        holds (see `Proposer`). A proposer that raises is ignored: every request runs either way."""
        draining = getattr(self.proposer, "draining", None)
        if draining is None:
            return
        try:
            draining(flag)
        except Exception:  # noqa: BLE001, S110 - a pricing hint only
            pass

    def commit(self, request: Request) -> str | None:
        """Tells the proposer how many tokens of the request are final after this step.

        Returns:
            None, or an error message (names `speculative_config.proposer`) if the proposer raised.
        """
        try:
            self.proposer.commit(request.request_id, request.num_tokens)
        except Exception as exc:  # noqa: BLE001 - fails this request alone
            return f"speculative_config.proposer: commit failed: {type(exc).__name__}: {exc}"
        return None

    def forget(self, request_id: str) -> None:
        """The request will run no more steps (a length limit ended it while its last token is
        still in flight): the proposer forgets it now, its counters stay until `remove`. A
        proposer that counts the requests it holds (DSpark's gapped batches) would otherwise
        count it for one more step, also when a new request has taken its place."""
        if request_id not in self._forgotten:
            self._forgotten.add(request_id)
            self._remove_from_proposer(request_id)

    def remove(self, request_id: str) -> SpecStats | None:
        """Forgets a finished request; returns its counters. A proposer that raises here is
        ignored (the request is over either way)."""
        if request_id in self._forgotten:
            self._forgotten.discard(request_id)
        else:
            self._remove_from_proposer(request_id)
        self._reported.pop(request_id, None)
        return self.request_stats.pop(request_id, None)

    def _remove_from_proposer(self, request_id: str) -> None:
        try:
            self.proposer.remove(request_id)
        except Exception:  # noqa: BLE001, S110 - nothing left to fail
            pass

    def take_counts(self, request_id: str) -> tuple[int, int, int]:
        """(proposed, verified, accepted) draft tokens of the request since the last call."""
        stats = self._stats(request_id)
        now = (stats.proposed, stats.verified, stats.accepted)
        before = self._reported.get(request_id, (0, 0, 0))
        self._reported[request_id] = now
        return now[0] - before[0], now[1] - before[1], now[2] - before[2]

    def _stats(self, request_id: str) -> SpecStats:
        return self.request_stats.setdefault(request_id, SpecStats())


def build_speculative(config, model_config, runner, max_model_len: int, eos: int | None) -> SpeculativeDecoder | None:
    """The engine's SpeculativeDecoder for `config.speculative_config` (None when unset, or when
    the proposer is `retired`: see `Proposer`).

    The proposer factory gets the target's facts and its embedding and LM head tensors (drafters
    such as DSpark, EAGLE and MTP share them); the runner is told which target layers' hidden
    states to return every step.
    """
    spec = config.speculative_config
    if spec is None:
        return None
    info = dict(vocab_size=model_config.vocab_size, hidden_size=model_config.hidden_size,
                max_num_seqs=config.max_num_seqs, max_model_len=max_model_len, deterministic=config.deterministic,
                kv_cache_tokens=config.kv_cache_memory // runner.kv_bytes_per_block() * config.block_size,
                num_hidden_layers=model_config.num_hidden_layers, eos_token_id=eos,
                model_path=str(model_config.path), device=str(runner.device), dtype=runner.dtype,
                embed_tokens=runner.model.model.embed_tokens.weight, lm_head=runner.model.lm_head.weight)
    proposer = load_proposer(spec, info)
    if getattr(proposer, "retired", False) is True:
        logger.warning("speculative_config: the proposer declares that it never drafts here (%s); "
                       "running without speculation", getattr(proposer, "retired_reason", "retired"))
        return None
    decoder = SpeculativeDecoder(proposer, spec["num_speculative_tokens"], max_model_len,
                                 model_config.vocab_size, runner.device)
    layers, count = decoder.target_layer_ids, model_config.num_hidden_layers
    if not all(isinstance(i, int) and not isinstance(i, bool) and -1 <= i < count for i in layers) \
            or any(b <= a for a, b in zip(layers, layers[1:])):
        raise ValueError(f"speculative_config: the proposer's target_layer_ids {list(layers)} must be strictly "
                         f"increasing ints in [-1, {count - 1}] (this target has {count} layers; a drafter "
                         f"trained for another target?)")
    runner.aux_layers = layers
    runner.feature_free_graphs = getattr(proposer, "wants_features", None) is not None   # it may decline them
    return decoder

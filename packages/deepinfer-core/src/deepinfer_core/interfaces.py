# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What sibling packages may rely on besides `deepinfer_core.__all__`.

Data types of requests and outputs, the progress-callback shape, and the Protocols plug-ins
implement. Everything else in deepinfer_core is private.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from deepinfer_core.outputs import CompletionOutput, Logprob, RequestMetrics, RequestOutput
from deepinfer_core.sampling_params import SamplingParams

# on_progress(done_requests, total_requests, new_tokens_this_step), called after every step.
ProgressCallback = Callable[[int, int, int], None]


@dataclass(frozen=True)
class DraftRequest:
    """One request the engine asks a proposer to draft for.

    Attributes:
        request_id: the request.
        token_ids: prompt + output so far; the last token (the anchor) has no KV yet: it is
            computed in the verification step together with the drafts. The request's own list,
            shared to avoid a copy per step: read it, never modify it.
        max_tokens: draft at most this many tokens (remaining length and budget already applied).
        temperature, top_k, top_p, min_p: the request's sampling filters (see `SamplingParams`);
            a proposer that samples must draw from the SAME filters applied to its own logits
            (`deepinfer_kernels.ops.sampling_probs`), and report that distribution.
        seed: the request's sampling seed (int64).
        step: output index of the first draft token (keys seeded draws).
    """

    request_id: str
    token_ids: Sequence[int]
    max_tokens: int
    temperature: float
    top_k: int
    top_p: float
    min_p: float
    seed: int
    step: int


@dataclass
class Draft:
    """A proposer's answer for one request.

    Attributes:
        token_ids: draft tokens, at most `DraftRequest.max_tokens` (may be empty).
        probs: `[len(token_ids), V]` float32: the exact distribution each draft token was drawn
            from, or None when the proposal is deterministic (n-gram lookup, greedy drafting):
            verification then treats each draft as drawn from a one-hot distribution.
    """

    token_ids: list[int]
    probs: Any = None


@runtime_checkable
class Proposer(Protocol):
    """A speculative-decoding draft source, found by name in entry-point group `deepinfer.proposers`.

    The entry point names a factory `factory(spec_config: dict, model_info: dict) -> Proposer`
    (optionally with an attribute `validate(spec_config: dict) -> None`, called before the
    engine loads the target so that a bad key fails at once: it raises `ValueError` naming
    `speculative_config.<key>`; the factory still checks everything itself);
    `model_info` holds `vocab_size`, `hidden_size`, `num_hidden_layers`, `eos_token_id`,
    `model_path` of the target, and the engine's `max_num_seqs`, `max_model_len`,
    `kv_cache_tokens` (the tokens its KV cache holds, all requests together) and `deterministic`
    (a proposer should then make its decisions from its inputs only, not from timings). The
    engine calls `propose` once per step for the requests about to
    decode, verifies the drafts against the target (lossless rejection sampling, exact match at
    temperature 0), then reports each request's committed length with `commit` so the proposer
    can roll its own state back past rejected drafts. `remove` is called when a request ends.

    Optional, for drafters that read the target's hidden states (DSpark, EAGLE-style): an attribute
    `target_layer_ids: tuple[int, ...]` (decoder-layer indices, -1 = embedding output) and a method
    `observe(request_id, positions: list[int], features: Tensor [n, len(target_layer_ids) * H])`,
    called after every step with the features of the tokens that step committed, in position order
    (or, when the proposer has it, `observe_many(list of (request_id, positions, features))` once
    per step, or, preferred over both, `observe_step(request_ids, first_positions, counts,
    row_starts, features)`: the step's whole `[T, len(target_layer_ids) * H]` feature tensor,
    request i's rows being `features[row_starts[i]:row_starts[i] + counts[i]]` at positions
    `first_positions[i] ...`; nothing is sliced per request).

    Optional, for proposers that pause (e.g. DSpark's confidence scheduling under load): a method
    `idle_rounds() -> int`, the number of upcoming `propose` calls that will return no drafts
    whatever the token ids. While it is > 0, an engine with asynchronous scheduling keeps
    overlapping its steps and may call `propose` before the last step's token ids are known
    (they then read -1); once it is 0, the engine waits for the ids before the next `propose`.
    With it, a method `idle_round(num_requests: int) -> None` is called instead of `propose` for
    each such round, with the number of running requests: the engine then builds no per-request
    `DraftRequest` (a paused round costs nothing per request). It is also called for a round in
    which no running request can be asked (none may be drafted for, or none has room left).

    Optional, for proposers that read features but can tell they will not need them for a while
    (e.g. DSpark while even accepting every draft could not beat plain decoding at the current
    load): a method `wants_features() -> bool`, asked before every step without drafts. When it
    returns False, that step captures no features (the target replays its feature-free decode
    graphs) and no `observe*` call reports it: the proposer then lacks those positions' features
    and must not draft for a request from a context with a gap. Steps with drafts always capture
    them. Any other return value, or an exception, counts as True.

    Optional, with both of the above, for proposers that can tell that a stretch of steps will be
    paused rounds without features (e.g. DSpark paused where it declines the features): a method
    `dormant_rounds(num_requests: int) -> int`, asked before a step without drafts, with the
    number of running requests. When it returns m > 0, that step and up to m - 1 more, while the
    number of running requests stays `num_requests`, are dormant: the engine asks nothing else for
    them (no `wants_features`, `observe*`, `idle_rounds`, `idle_round` or `propose` calls), they
    capture no features and carry no drafts. The engine reports the steps it ran with
    `dormant_passed(num_requests: int, rounds: int) -> None` before any other call but `commit`
    and `remove`; a step that finishes requests ends the stretch right after its update, and is
    reported at the number of requests then running (as `idle_round` would have heard it), the
    stretch's earlier steps at `num_requests`. A return value that is not an integer, or an
    exception, counts as 0; a `dormant_passed` that raises ends dormancy for that engine (its
    steps ran plain either way).

    Optional, with the above, for proposers whose dormant stretch holds over a range of counts
    (e.g. DSpark, whose pauses are per bucket of batch sizes): a method `dormant_floor(num_requests:
    int) -> int`, asked right after `dormant_rounds(num_requests)` declared a stretch. When it
    returns f < `num_requests`, the stretch goes on while the number of running requests stays
    within [f, `num_requests`] (requests that finish do not end it), and all its steps are
    reported in one `dormant_passed` at the number of requests running after the last of them:
    the proposer declares a floor only where its bookkeeping does not tell those counts apart.
    Anything else (not an integer, out of range, an exception) counts as `num_requests`. At 64
    requests whose replies end one by one, a stretch otherwise ended every step or two, each end
    an ask and a report (~10 us a step of DSpark's on this repository's CPU, 7% of a step's host
    work; session 51).

    Optional, with the above, for proposers paused where they keep the features (e.g. DSpark
    paused at a load where drafting may pay later): a method `quiet_rounds(num_requests: int) ->
    int`, asked when `dormant_rounds` returned 0. When it returns m > 0, the stretch is quiet: as a
    dormant one, except that its steps capture the features and the engine hands them over with
    `observe*` after each step (and calls nothing else but `commit` and `remove`); it is reported
    with `quiet_passed(num_requests: int, rounds: int) -> None`, as `dormant_passed` is.

    Optional, for proposers that read a request's tokens while they are asked nothing (e.g. DSpark
    looking for text that repeats itself during dormant stretches): a method `track(request_id:
    str, token_ids: Sequence[int]) -> None`, called once when a request is added, with a read-only
    view of its prompt + output tokens that the engine keeps extending (with asynchronous
    scheduling the last token may read -1 until its step is resolved; rejected drafts are
    removed). Read it, never modify it; `remove` ends it. An exception is ignored.

    Optional, for proposers that price a round by its batch (e.g. DSpark, whose pauses and
    profiles are per number of running requests, the count `idle_round` and `dormant_rounds`
    hear): a method `running(num_requests: int) -> None`, called right before a `propose` that
    is not asked about every running request (some cannot be drafted for: penalties, structured
    output, `min_tokens`, no room left, or they are prefilling), with the number of running
    requests. An exception fails the requests asked, as one from `propose` does.

    Optional, for proposers that price a round by when the batch ends (e.g. prompt lookup's
    tail weights: with no request waiting and none to come, tokens one request gains ahead of the
    others mostly idle its slot later): a method `draining(flag: bool) -> None`, called with True
    when the engine will only drain the requests it holds (`LLM.generate`, after adding its
    prompts) and with False when that ends. Never called by a driver that keeps adding requests.
    An exception is ignored.

    Optional, for proposers that can tell at load time that they will never draft (e.g. DSpark when
    its measured profiles show that even accepting every draft cannot beat plain decoding at any
    batch size): an attribute `retired: bool`. When it is True after the factory returns, the
    engine runs without speculation (no features captured, no `propose` calls): exactly the
    engine without `speculative_config`, and says so in its log.
    """

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        """One Draft per request, in order."""
        ...

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request's first `num_tokens` tokens (prompt + output) are final; later ones are gone."""
        ...

    def remove(self, request_id: str) -> None:
        """Forget the request."""
        ...


__all__ = [
    "CompletionOutput",
    "Draft",
    "DraftRequest",
    "Logprob",
    "ProgressCallback",
    "Proposer",
    "RequestMetrics",
    "RequestOutput",
    "SamplingParams",
]

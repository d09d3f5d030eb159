# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A step's token masks (`TokenBitmask`) and the mask thread's job that produces them (`FillJob`)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading

import torch


@dataclasses.dataclass
class TokenBitmask:
    """Masks of one step's sampling rows.

    Attributes:
        bitmask: [B, ceil(V/32)] int32 on the CPU (pinned when CUDA is available); rows not in
            `rows` hold stale words and must not be applied.
        rows: [B'] int64, the rows (sampling order) that carry a grammar.
        errors: request id -> message, for grammars that rejected a token consumed before the
            fill (their rows are not in `rows`; the engine fails those requests).
    """

    bitmask: torch.Tensor
    rows: torch.Tensor
    errors: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class InflightIds:
    """Token ids of a launched step that the mask thread reads itself, once they reach the host.

    Attributes:
        host: `[R]` int64 pinned host tensor the device copies the ids into.
        ready: CUDA event recorded after that copy; None when the copy is already done.
        rows: request id -> (row in `host`, index of that token in the request's output).
    """

    host: torch.Tensor
    ready: torch.cuda.Event | None
    rows: dict[str, tuple[int, int]]


class FillJob:
    """One mask fill in the mask thread: it consumes the tokens its grammars have not seen (some
    read from an `InflightIds` as soon as they reach the host), then fills the masks.

    Attributes:
        consumed_ids: requests whose in-flight token this job consumes.
        errors: request id -> message for grammars that rejected a consumed token (complete once
            `wait_consumed` returns; the engine may pop the ones it reports itself).
    """

    def __init__(self, consumed_ids: set[str]) -> None:
        self.consumed_ids = consumed_ids
        self.errors: dict[str, str] = {}
        self._consumed = threading.Event()
        self.future: concurrent.futures.Future[TokenBitmask | None] | None = None

    def mark_consumed(self) -> None:
        """Called by the mask thread when the consume phase is over (also when it raised)."""
        self._consumed.set()

    def wait_consumed(self) -> dict[str, str]:
        """Blocks until every token of the job is consumed; returns `errors`."""
        self._consumed.wait()
        return self.errors

    def result(self) -> TokenBitmask | None:
        """The masks (None when no row carries a grammar); re-raises the mask thread's error."""
        return self.future.result()

    def done(self) -> bool:
        return self.future.done()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""FrozenHeap: the objects alive when an engine call starts, kept out of the garbage collector's
passes during it (`EngineConfig.freeze_heap`).

A call of the engine (`LLM.generate`, `LLM.chat`) allocates many short-lived objects a step (the
outputs, the scheduler's lists, a proposer's bookkeeping), so CPython's cyclic collector runs
often: about twice a step at 256 requests. Now and then a pass becomes a full one, which walks
every tracked object of the process: after start-up ~228,000 with a tiny engine (torch,
transformers, the model's modules), ~100 ms a pass on this repository's 2-core CPU, and none of
them garbage (`packages/deepinfer-dspark/benchmarks/gc_passes.py`; packages/deepinfer-core/BENCHMARKS.md).

`gc.freeze()` moves every tracked object into a permanent generation that collections skip, and
`gc.unfreeze()` returns them to the oldest generation (Python's `gc` module documentation). vLLM's
engine core freezes its start-up heap once, in a process of its own; this engine runs in the
caller's process, so it freezes for the call only and unfreezes after it, also when the call
raises. The price: a cycle that was alive when a call started and became garbage since is only
found by a full pass that runs outside a call, and a loop of calls leaves few of those (a caller
dropping a cycle between 300 small calls kept all 300). So a call ends with one real
`gc.collect()` once `collect_every` full passes have run shortened by the frozen heap (`debt`), or
`collect_after_s` seconds after the last real one: cyclic garbage is found at least that often,
at the price of one full pass (~100 ms above) per that many passes or seconds. A process that
froze objects itself (`gc.get_freeze_count() > 0`: another engine's call in another thread, too)
or disabled the collector is left as it is.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator

COLLECT_EVERY = 8   # shortened full passes before a real one
COLLECT_AFTER_S = 10.0   # seconds after the last real one (at ~100 ms a pass: at most 1% of the time)


class FrozenHeap:
    """One engine's calls with the heap frozen (see the module docstring).

    Args:
        enabled: False leaves the collector as it is (`EngineConfig.freeze_heap`).
        collect_every: full passes run with the heap frozen before a call ends with a real
            `gc.collect()` (>= 1).
        collect_after_s: seconds after the last real collection (or the start) before a call
            ends with one (>= 0).
        clock: seconds, monotonic (`time.monotonic`; tests pass their own).

    Attributes:
        debt: full passes run with the heap frozen since the last real collection.
        collections: real collections this engine ran (metrics, tests).

    Raises:
        ValueError: `collect_every` < 1 or `collect_after_s` < 0 or not finite (names it).
    """

    def __init__(self, enabled: bool = True, collect_every: int = COLLECT_EVERY,
                 collect_after_s: float = COLLECT_AFTER_S, clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(collect_every, int) or collect_every < 1:
            raise ValueError(f"collect_every: must be an int >= 1, got {collect_every!r}")
        if not isinstance(collect_after_s, (int, float)) or not math.isfinite(collect_after_s) or collect_after_s < 0:
            raise ValueError(f"collect_after_s: must be a finite number >= 0, got {collect_after_s!r}")
        self.enabled = enabled
        self.collect_every = collect_every
        self.collect_after_s = collect_after_s
        self.clock = clock
        self.debt = 0
        self.collections = 0
        self._last = clock()

    @contextlib.contextmanager
    def call(self) -> Iterator[bool]:
        """Freezes the tracked objects for the `with` block and unfreezes them after it.

        Yields:
            Whether this block froze the heap (False when disabled, when the collector is off,
            or when objects were frozen already: those stay frozen after the block).
        """
        if not (self.enabled and gc.isenabled() and gc.get_freeze_count() == 0):
            yield False
            return
        full = gc.get_stats()[-1]["collections"]
        gc.freeze()
        try:
            yield True
        finally:
            gc.unfreeze()
            self.debt += gc.get_stats()[-1]["collections"] - full
            if self.debt >= self.collect_every or self.clock() - self._last >= self.collect_after_s:
                self.debt = 0
                self.collections += 1
                gc.collect()
                self._last = self.clock()

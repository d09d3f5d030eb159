# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""frozen_heap: the objects alive when a run starts, kept out of the garbage collector's passes
during it (`EngineConfig.freeze_heap`).

A run of the engine (`LLM.generate`, `LLM.chat`) allocates many short-lived objects a step (the
outputs, the scheduler's lists, a proposer's bookkeeping), so CPython's cyclic collector runs
often: about twice a step at 256 requests. Every tenth collection of the middle generation may
become a full one, which walks every tracked object of the process: after start-up ~228,000 with
a tiny engine (torch, transformers, the model's modules), ~100 ms a pass on this repository's
2-core CPU, and none of them garbage. At 256 requests such passes took 9-11% of every call
(`packages/deepinfer-dspark/benchmarks/gc_passes.py`; packages/deepinfer-core/BENCHMARKS.md),
and which engine met them depended on how many objects its calls left alive.

`gc.freeze()` moves every tracked object into a permanent generation that collections skip, and
`gc.unfreeze()` returns them to the oldest generation (Python's `gc` module documentation); both
splice lists, in constant time. vLLM's engine core freezes its start-up heap once, in a process of
its own; this engine runs in the caller's process, so it freezes for the run only and unfreezes
after it, also when the run raises: a caller's `del llm; gc.collect()` frees an engine as before.
A process that froze objects itself (`gc.get_freeze_count() > 0`: another run in progress in
another thread, too) or disabled the collector is left as it is.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen_heap(enabled: bool = True) -> Iterator[bool]:
    """Freezes the tracked objects for the `with` block and unfreezes them after it.

    Args:
        enabled: False leaves the collector as it is (`EngineConfig.freeze_heap`).

    Yields:
        Whether this block froze the heap (False when disabled, when the collector is off, or
        when objects were frozen already: those stay frozen after the block).
    """
    froze = enabled and gc.isenabled() and gc.get_freeze_count() == 0
    if froze:
        gc.freeze()
    try:
        yield froze
    finally:
        if froze:
            gc.unfreeze()

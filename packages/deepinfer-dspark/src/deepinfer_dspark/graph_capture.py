# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`capture_graph`: one static call captured as a CUDA graph, for the drafter's graphs
(`draft_graph.py`, `observe_graph.py`)."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator

import torch

WARMUP_RUNS = 2

_gc_lock = threading.Lock()
_gc_pauses = [0, False]   # [captures in progress, whether the collector was on before the first]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while any capture of this module runs (in any
    thread), back to its former state when the last one ends, also on an exception.

    A collection during a capture can free a graph of an engine dropped earlier (still in a
    reference cycle), and a graph's destructor is not permitted while a stream captures: it
    invalidates the capture (`cudaErrorStreamCaptureInvalidated`; seen on the H200 when a test
    built its fourth engine). torch 2.11 no longer collects before a capture unless
    `torch.compiler.config.force_cudagraph_gc`. An explicit `gc.collect()` still runs. The core
    pauses the collector around its own captures (saving and restoring its state, no counter:
    its captures run at start-up, in the thread building the engine).
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if _gc_pauses[0] == 0 and _gc_pauses[1]:
                gc.enable()


def capture_graph(fn: Callable[[], object], device: torch.device, pool: object
                  ) -> tuple[torch.cuda.CUDAGraph, object]:
    """Captures `fn()` (static inputs, static shapes) as a CUDA graph in memory pool `pool`,
    with the garbage collector paused (`gc_paused`).

    Warms up `WARMUP_RUNS` times on a side stream first (triton compilation, library loads,
    cuBLAS workspaces), as the core's `DecodeGraphs` does. The caller turns autograd off: a
    graph's outputs with autograd history would keep every saved activation in the pool.

    Returns:
        `(graph, outputs)`: the outputs of the captured call, rewritten by each `graph.replay()`.

    NOTE: the drafter's graphs may be captured lazily, mid-serving, when other threads (the
    structured-output mask thread: pinned buffers, event waits) may call CUDA; the
    "thread_local" mode forbids unsafe calls in this thread only.
    """
    current = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(WARMUP_RUNS):
            fn()
    current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with gc_paused(), torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
        outputs = fn()
    return graph, outputs

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""StepPhases: one engine step's host time split by what ran in it, for `bench_dspark.py --step-log-phases`.

Session 72 found the default's loss at 8 requests on an H100 partly in calls that drafted nothing:
their median step matched plain decoding's, but twice as many of their steps ran slow (above 1.6
ms; `loss_by_call_kind.py`). A step's `ms` alone cannot say whether the host did more (which
phase) or waited longer on the device. This wraps, on one engine's instances, the calls a step of
`deepinfer_core`'s asynchronous engine makes and adds each call's exclusive wall time (its own,
less that of the wrapped calls inside it) to its phase:

- `schedule`: `Scheduler.schedule`; `update`: `Scheduler.update_from_output`;
- `launch`: `ModelRunner.execute_model` (the forward's launch; a graph replay or eager kernels);
- `wait`: the host waiting on the device for a step's sampled ids (the `torch.cuda.Event` that
  `_to_host` records; nothing off CUDA, where the copy is synchronous);
- `resolve`: the rest of `_resolve` (placing ids, stop rules, finishing requests);
- `sample`: `_sample` (the device sampler's launch and the ids' copy);
- `spec`: the speculative decoder's hooks (`propose`, `idle_rounds`, `wants_features`, `observe`,
  `track`, `draining`, `commit`, `forget`, `remove`) and its dormant stretches' (`step`, `ran`);
- `gc`: the garbage collector's passes (`gc.callbacks`), whatever phase they interrupt;
- the step's `ms` less their sum is the rest (`other`, by the reader): the engine's own code between
  them, and in a synchronous step (one that verifies drafts: `_run`, neither `_sample` nor
  `_resolve`) its sampler, its verification and its wait on the device too.

Only the thread that built it is timed: the grammar mask thread also waits on the ids' event, while
the engine's thread launches the next step (that wait is not the step's host time).

Each wrapper costs ~1 us of host time a call (~10-20 calls a step), in traced and untraced rounds
alike and more in a speculative engine (its hooks): a reading of where a slow step's time went,
not of the engines' relative speed. Device-free: runs on the CPU (no `wait` there).
"""

from __future__ import annotations

import functools
import gc
import threading
import time

PHASES = ("schedule", "launch", "wait", "resolve", "sample", "update", "spec", "gc")
SPEC_HOOKS = ("propose", "idle_rounds", "wants_features", "observe", "track", "draining", "commit", "forget", "remove")


class _TimedEvent:
    """A `torch.cuda.Event` whose `synchronize` is timed as `wait`."""

    def __init__(self, event, phases: StepPhases) -> None:
        self._event, self._phases = event, phases

    def synchronize(self) -> None:
        with self._phases.timed("wait"):
            self._event.synchronize()

    def __getattr__(self, name):
        return getattr(self._event, name)


class StepPhases:
    """Exclusive host time by phase (see the module docstring) of the steps of `engine` (a
    `deepinfer_core` engine core: `llm.engine`) since the last `take`.

    Args:
        engine: the engine core; its instances' methods are wrapped in place (for the process's life).

    Raises:
        AttributeError: an engine without the asynchronous core's `_resolve`, `_sample` and `_to_host`.
    """

    def __init__(self, engine) -> None:
        self.totals = dict.fromkeys(PHASES, 0.0)   # seconds since the last `take`
        self._stack: list[list] = []   # [phase, start, seconds of wrapped calls inside]
        self._thread = threading.get_ident()   # the engine's thread: the only one timed
        self._wrap(engine.scheduler, "schedule", "schedule")
        self._wrap(engine.scheduler, "update_from_output", "update")
        self._wrap(engine.runner, "execute_model", "launch")
        self._wrap(engine, "_resolve", "resolve")
        self._wrap(engine, "_sample", "sample")
        to_host = engine._to_host

        def timed_to_host(ids):
            host, ready = to_host(ids)
            return host, None if ready is None else _TimedEvent(ready, self)
        engine._to_host = timed_to_host
        speculative = getattr(engine, "speculative", None)
        if speculative is not None:
            for name in SPEC_HOOKS:
                self._wrap(speculative, name, "spec")
            dormant = getattr(speculative, "dormant", None)
            if dormant is not None:
                self._wrap(dormant, "step", "spec")
                self._wrap(dormant, "ran", "spec")
        self._gc_started: float | None = None
        gc.callbacks.append(self._on_gc)

    def _wrap(self, owner, name: str, phase: str) -> None:
        method = getattr(owner, name)

        @functools.wraps(method)
        def timed(*args, **kwargs):
            with self.timed(phase):
                return method(*args, **kwargs)
        setattr(owner, name, timed)

    def timed(self, phase: str):
        return _Span(self, phase)

    def _enter(self, phase: str) -> None:
        self._stack.append([phase, time.perf_counter(), 0.0])

    def _exit(self) -> None:
        phase, start, inner = self._stack.pop()
        elapsed = time.perf_counter() - start
        self.totals[phase] += elapsed - inner
        if self._stack:
            self._stack[-1][2] += elapsed

    def _on_gc(self, event: str, info: dict) -> None:
        if threading.get_ident() != self._thread:
            return
        if event == "start":
            self._enter("gc")
        elif self._stack and self._stack[-1][0] == "gc":
            self._exit()

    def take(self) -> dict[str, float]:
        """Milliseconds by phase since the last call (phases with none left out; rounded to us),
        then zero."""
        out = {phase: round(1e3 * s, 3) for phase, s in self.totals.items() if s > 0}
        self.totals = dict.fromkeys(PHASES, 0.0)
        return out

    def close(self) -> None:
        """Stops timing the collector (the wrappers stay: they only add to `totals`)."""
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)


class _Span:
    __slots__ = ("_phases", "_phase")

    def __init__(self, phases: StepPhases, phase: str) -> None:
        self._phases = phases if threading.get_ident() == phases._thread else None   # (another thread: untimed)
        self._phase = phase

    def __enter__(self) -> None:
        if self._phases is not None:
            self._phases._enter(self._phase)

    def __exit__(self, *exc) -> None:
        if self._phases is not None:
            self._phases._exit()

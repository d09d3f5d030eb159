# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Lockstep calls: several engines serve the same prompts at once, one engine step at a time, in turn.

`paired_calls.paired_rows` runs a round's calls back to back: one engine's call (0.1-1.5 s on the
GPU machine), then the next engine's. That host's process drifts as a whole over such spans (session
57, run25 on an H100 at 128 requests: in one round nearly every step of the default ran 0.3-0.6 ms
slower than plain decoding's same step, in another 0.2-0.7 ms faster, ~20% of a 2.3 ms step, while
plain decoding run twice stayed near 0), so a round's ratio carries the drift, and plain decoding
against itself read 0.84-1.08 a cell even pinned to cores of its own.

Here each engine's call runs in a thread of its own and a baton lets one thread run at a time, in a
fixed turn: engine A runs one step (its call's `on_progress` hook, called after every step and its
output processing, ends the turn), hands over to B, then C, then A again, so the engines' steps
interleave at the scale of one step and a drift slower than a few steps falls on all of them alike.
An engine whose call ended drops out of the turn. Each call's time is the sum of its own turns (the
hand-over, a thread switch, lies outside every turn); its tok/s is its emitted tokens over that time.

What lockstep changes for the engines: a step now follows another engine's step instead of its own
previous one (colder caches). On a GPU the engines share the device's stream: an asynchronous step
(plain decoding, the default's steps without drafts) launches its forward and returns with it still
queued, and waits next turn only for its own earlier step, queued before the other engine's; but a
step that waits for its own forward in the same turn (a verification round, the drafter's copies to
the host) also waits for the other engine's step queued ahead of it. So lockstep reads engines that
both run asynchronous steps alike (the default where it drafts nothing against plain decoding: the
floor question at 64-256 requests), and is biased against an engine that drafts: `paired_rows` counts
a row's lockstep calls that drafted (`lockstep drafted calls`) and warns. Its per-user tok/s (request
timestamps that span the other engines' turns) is no number here (nan), nor its tok/s one for a table
of absolute speeds. Threads only hand over: the engines' work never runs in two threads at once (one
holds the baton, the others wait on it). `engine_streams` (`--lockstep-streams`, untried on a GPU)
gives each engine a CUDA stream of its own, which should remove the drafting bias. An interrupt in the
caller's thread cancels the baton, so each call ends (its requests aborted by `LLM`) at its next turn
before the interrupt is re-raised. One device only: a worker thread runs on the default CUDA device."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable


class Cancelled(RuntimeError):
    """The baton was cancelled (`Baton.cancel`): the waiting call ends."""


class Baton:
    """Whose turn it is among `names` (in that order); an engine that ended leaves the turn.

    Raises:
        ValueError: no names, or a name twice."""

    def __init__(self, names: list[str]) -> None:
        if not names or len(set(names)) != len(names):
            raise ValueError(f"names: must be distinct and at least one, got {names}")
        self._order = list(names)
        self._done: set[str] = set()
        self._turn: str | None = self._order[0]
        self._cancelled = False
        self._cond = threading.Condition()

    def wait(self, name: str) -> None:
        """Blocks until it is `name`'s turn.

        Raises:
            Cancelled: the baton was cancelled (before or while waiting)."""
        with self._cond:
            self._cond.wait_for(lambda: self._cancelled or self._turn == name)
            if self._cancelled:
                raise Cancelled("lockstep: cancelled")

    def cancel(self) -> None:
        """Every wait, now and later, raises `Cancelled`."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    def pass_on(self, name: str, ended: bool = False) -> None:
        """Ends `name`'s turn (and with `ended`, its place in the turn): the next engine still
        running after it, or `name` again when it is the last one running."""
        with self._cond:
            if ended:
                self._done.add(name)
            i = self._order.index(name)
            after = self._order[i + 1:] + self._order[:i + 1]
            self._turn = next((n for n in after if n not in self._done), None)
            self._cond.notify_all()


def lockstep_calls(llms: dict, run: Callable, clock: Callable[[], float] = time.perf_counter,
                   context: Callable[[str], contextlib.AbstractContextManager] | None = None) -> dict:
    """Runs `run(llm, on_progress)` (e.g. `llm.chat(prompts, params, on_progress=on_progress)`) for
    every engine of `llms` at once, one step of one engine at a time, in the order of `llms`
    (see the module docstring). With `context`, each call runs inside `context(name)`, entered in
    its own thread (`engine_streams`: a CUDA stream of its own per engine).

    Returns:
        name -> (the call's outputs, seconds of its own turns: its time, the hand-overs excluded).

    Raises:
        The first failed call's exception (in `llms`' order), once every call has ended: a call that
        fails leaves the turn and the others run to their end. An exception in the caller's thread
        while it waits (KeyboardInterrupt) cancels the baton, waits for every call to end, and is
        re-raised."""
    baton = Baton(list(llms))
    results: dict = {}
    errors: dict = {}

    def serve(name: str, llm) -> None:
        spent, start = 0.0, 0.0
        try:
            baton.wait(name)
            start = clock()

            def on_progress(done: int, total: int, new_tokens: int) -> None:
                nonlocal spent, start
                spent += clock() - start
                baton.pass_on(name)
                baton.wait(name)
                start = clock()
            with context(name) if context is not None else contextlib.nullcontext():
                outputs = run(llm, on_progress)
            results[name] = (outputs, spent + clock() - start)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
            errors[name] = exc
        finally:
            baton.pass_on(name, ended=True)

    threads = [threading.Thread(target=serve, args=(name, llm), name=f"lockstep-{name}", daemon=True)
               for name, llm in llms.items()]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        baton.cancel()   # each call ends at its next turn, its requests aborted by its `LLM`
        for thread in threads:
            thread.join()
        raise
    for name in llms:
        if name in errors:
            raise errors[name]
    return results


def engine_streams() -> Callable[[str], contextlib.AbstractContextManager] | None:
    """A `context` for `lockstep_calls` that runs each engine's calls on a CUDA stream of its own
    (made at its first call, kept for its later ones; `--lockstep-streams`): a verification round
    then waits for its own engine's queued work only, not another's on a shared stream (the bias in
    the module docstring). Such streams synchronize with the legacy default stream, where the
    engines' warm-up calls ran (CUDA's implicit synchronization of blocking streams). None without
    CUDA. Session 57: not yet run on a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    streams: dict = {}

    def context(name: str):
        if name not in streams:
            streams[name] = torch.cuda.Stream()
        return torch.cuda.stream(streams[name])
    return context

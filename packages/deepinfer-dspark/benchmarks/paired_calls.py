# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Paired calls for `bench_dspark.py --interleave`: every engine chats the same prompts in turn,
round after round, the order rotated; each call's tok/s counts the tokens it emitted over its wall
time, and each engine's ratio to the first engine's in the same round is the paired ratio.

The engines' end-of-call garbage collection is kept out of the timed calls (`HeapOutside`): an
engine's call freezes the heap and, every 10 s or 8 shortened full passes, ends with a real
`gc.collect()` (`deepinfer_core`'s `FrozenHeap`), a pass over every object of the process (~100 ms
on this repository's 2-core CPU, more on the GPU machine's slower host), timed with the call it
ends. The harness now collects between calls, untimed, and freezes the heap around each call itself,
which the engine's `FrozenHeap` then leaves as it is. (On an H100, session 55, two plain-decoding
engines read paired ratios of 0.58-1.26 a round on 0.1-0.5 s calls; whether this collection was a
part of that is not known.)"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import statistics
import time
from pathlib import Path

from engine_probes import concurrency_cap, proposer_state
from lockstep import lockstep_calls
from paired_pool import bootstrap, geomean


def _numbers(outs: list, wall: float, queued: bool = False) -> dict:
    """tok/s of the emitted tokens over the call's wall time, and per-user tok/s: a reply's tokens
    over its time from arrival to its end, or with `queued` (requests wait for a slot:
    `--closed-loop`) its tokens after the first over the time from the first to its end."""
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    if queued:
        speeds = [(len(o.outputs[0].token_ids) - 1) / (o.metrics.finished_time - o.metrics.first_token_time)
                  for o in outs if len(o.outputs[0].token_ids) > 1 and o.metrics.first_token_time is not None]
        per_user = statistics.mean(speeds or [0.0])
    else:
        per_user = statistics.mean(len(o.outputs[0].token_ids) / (o.metrics.finished_time - o.metrics.arrival_time)
                                   for o in outs)
    return {"tok/s": tokens / wall, "per-user tok/s": per_user, "tokens": tokens,
            **_lengths([o.metrics for o in outs])}


def _lengths(metrics: list) -> dict:
    """Mean verified drafts per drafted round and mean accepted length (accepted drafts plus the
    bonus token) over `metrics` (`RequestMetrics`); 0 and 1 without drafted rounds."""
    rounds = sum(x.spec_rounds for x in metrics)
    return {"verified/round": sum(x.spec_verified for x in metrics) / rounds if rounds else 0.0,
            "accepted len": (sum(x.spec_accepted for x in metrics) + rounds) / rounds if rounds else 1.0}


class HeapOutside:
    """The garbage collector's work kept out of timed calls: `call()` wraps one, collecting first
    (untimed) when `collect_after_s` seconds passed since the last collection, then freezing the
    heap for the call (`gc.freeze()`; an engine's own `FrozenHeap` leaves a frozen heap alone, so
    it neither freezes nor collects inside the call) and unfreezing it after. `enabled` False
    leaves the collector to the engines (the old harness).

    Attributes:
        collections: collections run between calls.

    Raises:
        ValueError: `collect_after_s` negative or not finite.
    """

    def __init__(self, enabled: bool = True, collect_after_s: float = 10.0, clock=time.monotonic) -> None:
        if not (math.isfinite(collect_after_s) and collect_after_s >= 0):
            raise ValueError(f"collect_after_s: must be finite and >= 0, got {collect_after_s}")
        self.enabled, self.collect_after_s, self.clock = enabled, collect_after_s, clock
        self.collections, self._last = 0, None

    @contextlib.contextmanager
    def call(self):
        """The `with` block runs with the heap frozen by the harness (untimed work before it)."""
        if not self.enabled or not gc.isenabled() or gc.get_freeze_count() > 0:
            yield
            return
        if self._last is None or self.clock() - self._last >= self.collect_after_s:
            gc.collect()
            self.collections += 1
            self._last = self.clock()
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()


def paired_rows(llms: dict, prompts: list, params, rounds: int, c: int, logs: dict | None = None,
                log_path: Path | None = None, cap: int | None = None, traces: dict | None = None,
                log_every: int = 1, heap: HeapOutside | None = None, lockstep: bool = False,
                lockstep_context=None) -> list:
    """`rounds` rounds of one `chat(prompts)` call per engine, the order rotated each round
    (`prompts`: one batch of chats, or a list of such batches, round r chatting batch r % N). One
    row per engine: its median call, its verified and accepted lengths over every call (a
    confidence engine may draft in some calls only: session 23's median calls were dormant), and
    `paired`, the median over rounds of its tok/s divided by the first engine's in that round
    (printed with the lowest and highest ratio). With `logs`
    (engine -> the list its `StepTimes` appends to), each call's steps are appended to
    `log_path` (`--step-log`) as JSON lines tagged with the engine, concurrency, round and step.
    With `cap`, at most that many requests run at once in each call (`--closed-loop`). With
    `traces` (engine -> `StepTimes`), each traced call's first row also carries the harness's
    own milliseconds in it (`harness_ms`: in its wall time, not the engine's work), and each
    engine's row the median over its traced calls (`harness ms`).

    `log_every` M > 1 (`--step-log-every`): only rounds r with r % M == 0 run traced (the others
    call the engine's own step, the harness switched off: `StepTimes.active`); the median call,
    `paired` and its range then come from the untraced rounds alone, and `paired traced` is the
    median over the traced ones (`runs` counts every round). The harness costs a step the same in
    every engine (~50 us on this repository's CPU), so an engine that takes fewer steps pays less
    of it: its ratio reads high. When the untraced rounds do not rotate through every order (e.g.
    2 engines and M = 2: each engine always in the same place), a warning is printed.

    Each row also carries the untraced rounds' geometric mean (`paired geomean`) and its 95%
    percentile-bootstrap interval (`paired low`, `paired high`; `paired_pool.bootstrap`, 4,000
    resamples): the median alone reads a few rounds' noise as a difference.

    With `lockstep` (`--lockstep`), a round's calls run at once, one engine step at a time in the
    round's order (`lockstep.lockstep_calls`): each call's wall time is then the sum of its own
    turns; its per-user tok/s is nan, and a row counts its calls that drafted (`lockstep drafted
    calls`, biased against it: see `lockstep.py`); `lockstep_context` (`lockstep.engine_streams()`)
    wraps each engine's calls. Not with `logs`, `traces` or `cap`.

    `heap` (`HeapOutside`, enabled by default) keeps the garbage collector's passes out of the
    timed calls. Each row also carries `paired rounds`: the ratio of every round (the traced
    ones too), in round order, so that two engines can be compared round by round later, and its
    printed line `call drafts [...] call dspark [...]` before it, one int >= 0 a round in round
    order, untraced rounds too (session 78: `paired_pool.py --split-drafted`): `call drafts` the
    most `RequestMetrics.spec_rounds` of the call's requests (verification steps, prompt-lookup
    rounds included: a lower bound on the call's verification steps, > 0 exactly when it verified
    any drafts), `call dspark` the DSpark rounds it drafted (`dspark_rounds`; 0 in other engines).

    Raises:
        ValueError: `log_every` < 1, or > 1 with `logs` but without `traces` (the steps of an
            untraced call would be written under the next traced one); `lockstep` with `logs`,
            `traces` or `cap`.
    """
    if log_every < 1:
        raise ValueError(f"log_every: must be >= 1, got {log_every}")
    if log_every > 1 and logs and not traces:
        raise ValueError("log_every: > 1 needs `traces`, which switch the logging off in untraced rounds")
    if lockstep and (logs or traces or cap):
        raise ValueError("lockstep: not with a step log, step times or a closed loop")
    names = list(llms)
    calls = _Calls(names)
    heap = HeapOutside() if heap is None else heap
    traced = [log_every == 1 or r % log_every == 0 for r in range(rounds)]
    orders = {r % len(names) for r in range(rounds) if not traced[r]}
    if orders and len(orders) < min(len(names), rounds - sum(traced)):
        print(f"warning: the untraced rounds run the engines in {len(orders)} of {len(names)} orders "
              f"(--step-log-every {log_every}): their ratios carry the order's bias", flush=True)
    sets = prompts if prompts and isinstance(prompts[0], list) and prompts[0] and isinstance(prompts[0][0], list) \
        else [prompts]
    try:
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            if lockstep:
                chats = sets[r % len(sets)]
                with heap.call():
                    done = lockstep_calls({name: llms[name] for name in order},
                                          lambda llm, hook: llm.chat(chats, params, on_progress=hook),
                                          context=lockstep_context)
                for name in order:   # (the DSpark rounds of a lockstep call are not told apart: 0)
                    calls.add(name, done[name][0], done[name][1], False, None)
                    calls.runs[name][-1]["per-user tok/s"] = math.nan   # (timestamps span the others' turns)
                    calls.drafted[name] += any(o.metrics.spec_rounds for o in done[name][0])
                continue
            for name in order:
                trace = traces.get(name) if traces else None
                if trace is not None:
                    trace.active = traced[r]
                before = dspark_rounds(llms[name])
                with concurrency_cap(llms[name], cap) if cap else contextlib.nullcontext(), heap.call():
                    start = time.perf_counter()
                    outs = llms[name].chat(sets[r % len(sets)], params)
                    wall = time.perf_counter() - start
                harness = trace.take_harness() if trace is not None and traced[r] else None
                calls.add(name, outs, wall, cap is not None, harness, dspark_rounds(llms[name]) - before)
                if logs and log_path is not None and traced[r]:
                    append_steps(log_path, logs[name], name, c, r, wall, harness)
    finally:
        for trace in (traces or {}).values():
            trace.active = True
    clean = [r for r in range(rounds) if not traced[r]] or list(range(rounds))
    rows = []
    for name in names:
        runs, first = calls.runs[name], calls.runs[names[0]]
        ratios = [a["tok/s"] / b["tok/s"] if b["tok/s"] > 0 else math.nan   # (the first engine emitted nothing)
                  for a, b in zip(runs, first)]
        median = sorted((runs[r] for r in clean), key=lambda x: x["tok/s"])[len(clean) // 2]
        picked = [ratios[r] for r in clean]
        positive = all(x > 0 for x in picked)   # (else a call emitted nothing: no geometric mean; nan is not > 0)
        low, high = bootstrap(picked, draws=4000) if positive else (math.nan, math.nan)
        row = {**median, **_lengths(calls.metrics[name]), "runs": len(runs),
               "paired": statistics.median(picked), "paired min": min(picked), "paired max": max(picked),
               "paired geomean": geomean(picked) if positive else math.nan, "paired low": low,
               "paired high": high,
               **same_replies(calls.replies[name], calls.replies[names[0]])}
        rounded = [round(x, 3) for x in ratios]
        if len(clean) < rounds:
            row["paired traced"] = statistics.median(ratios[r] for r in range(rounds) if traced[r])
        if calls.harness[name]:
            row["harness ms"] = 1e3 * statistics.median(calls.harness[name])
        if lockstep:
            row["lockstep drafted calls"] = calls.drafted[name]
            if calls.drafted[name]:
                print(f"warning: {name} at {c} drafted in {calls.drafted[name]} of {rounds} lockstep calls: its "
                      f"verification rounds also waited for the other engines' queued steps (lockstep.py)",
                      flush=True)
        rows.append((c, name, {**row, "paired rounds": rounded}))
        print(c, name, {k: round(v, 3) for k, v in row.items()}, proposer_state(llms[name], c),
              f"call drafts {calls.drafts[name]} call dspark {calls.dspark[name]}", f"paired rounds {rounded}",
              flush=True)
    return rows


class _Calls:
    """Per engine, in round order: each call's numbers (`_numbers`), every request's metrics, each
    call's reply token ids, its verification steps (`drafts`: the most `spec_rounds` of its
    requests, prompt-lookup rounds included), its DSpark rounds (`dspark`) and the harness seconds
    of the traced calls."""

    def __init__(self, names: list[str]) -> None:
        self.runs = {name: [] for name in names}
        self.metrics = {name: [] for name in names}
        self.replies = {name: [] for name in names}
        self.harness = {name: [] for name in names}
        self.drafts = {name: [] for name in names}
        self.dspark = {name: [] for name in names}
        self.drafted = {name: 0 for name in names}   # lockstep calls with a drafted round

    def add(self, name: str, outs: list, wall: float, queued: bool, harness: float | None, dspark: int = 0) -> None:
        self.runs[name].append(_numbers(outs, wall, queued=queued))
        self.metrics[name].extend(o.metrics for o in outs)
        self.drafts[name].append(max((o.metrics.spec_rounds for o in outs), default=0))
        self.dspark[name].append(dspark)
        self.replies[name].append([list(o.outputs[0].token_ids) for o in outs])
        if harness is not None:
            self.harness[name].append(harness)


def dspark_rounds(llm) -> int:
    """The DSpark rounds `llm`'s proposer has drafted so far (`DSparkProposer.drafted_rounds`;
    under a prompt-lookup wrapper its inner proposer's, lookup rounds not counted); 0 for an
    engine without one."""
    proposer = getattr(getattr(getattr(llm, "engine", None), "speculative", None), "proposer", None)
    return int(getattr(getattr(proposer, "inner", proposer), "drafted_rounds", 0))


def same_replies(replies: list[list[list[int]]], reference: list[list[list[int]]]) -> dict:
    """How many of an engine's replies equal the first engine's to the same prompt in the same
    round (`same replies`, a fraction), and where the others first differ (`first difference`,
    the median token index; -1 when none differs). In bfloat16 a speculative engine's verification
    shapes round differently from plain decoding's, so a near-tie can send a reply elsewhere
    (session 24: the random target's replies left plain decoding's at tokens 90-125); a
    throughput ratio between engines whose replies differ compares different texts."""
    pairs = [(a, b) for run, ref in zip(replies, reference) for a, b in zip(run, ref)]
    firsts = [next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
              for a, b in pairs if a != b]
    return {"same replies": (len(pairs) - len(firsts)) / len(pairs) if pairs else 1.0,
            "first difference": statistics.median(firsts) if firsts else -1}


def append_steps(path: Path, log: list, engine: str, c: int, round_index: int, wall: float | None = None,
                 harness: float | None = None) -> None:
    """Appends one call's steps (`StepTimes` log entries, then emptied) to `path` as JSON lines;
    the first step's row also carries the call's wall time (`call_ms`: the steps plus what the
    call did outside them, e.g. chat templates, tokenizing, detokenizing) and the harness's own
    time in it (`harness_ms`, seconds given)."""
    with open(path, "a") as f:
        for index, entry in enumerate(log):
            row = {"engine": engine, "concurrency": c, "round": round_index, "step": index, **entry}
            if index == 0 and wall is not None:
                row["call_ms"] = round(1e3 * wall, 3)
            if index == 0 and harness is not None:
                row["harness_ms"] = round(1e3 * harness, 3)
            f.write(json.dumps(row) + "\n")
    log.clear()

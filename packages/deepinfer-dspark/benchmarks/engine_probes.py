# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What an engine did during a benchmark, for the DSpark benchmarks (`bench_dspark.py`,
`bench_paused.py`): the confidence proposer's counters, every step's host time by load, and one
more run under cProfile or torch.profiler."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path


class StepTimes:
    """`--step-times`: the host wall time of every engine step of `llm`, keyed by the requests
    running and whether the drafter ran (`drafted`, with `+flush`, `+capture` or `+eager` when
    the round also did that, see `_kind`) or not (`plain`): the step rates the profiles predict,
    measured under the benchmark's own traffic (EOS honoured, batches shrinking).

    With `log` (a list), every step is also appended to it in order: a dict of the requests
    running before it, its kind, its milliseconds, the (request, step) pairs buffered before it,
    what the scheduler put in it (prefill tokens, requests verifying drafts, requests
    scheduled), the tokens its outputs emitted (`emitted`) and the drafts they accepted and
    verified (`accepted`, `verified`: `EngineCoreOutput.spec_counts`; with asynchronous
    scheduling a step reports the tokens of the step before it), the shortest reply among the
    running requests before it (`reply`, tokens: where in the replies a round drafted), and its
    end on the wall clock (`t`, Unix seconds: to line steps up with `nvidia-smi` samples of the
    GPU's clocks), in a speculative engine the forwards in it that captured the drafter's target
    features (`features`) and whether it ran in a stretch the proposer declared (`stretch`: "d"
    dormant, "q" quiet, "" asked; `deepinfer_core`'s `DormantSteps`: session 51, where a default
    at 64 requests kept features it could not use; counted by a wrapper of `execute_model`, one
    more Python call a step of a logging speculative engine, traced round or not: ~0.3 us), with
    `ledger`, the confidence proposer's pause ledgers after the step (`_ledger`), and with `phases`
    the step's host ms by phase (`phases`: `step_phases.StepPhases`, session 73): `--step-log`
    (`--step-log-ledger`, `--step-log-phases`).

    The wrapper's own work around the steps is the harness's, not the engine's, yet it lands in a
    call's wall time: `harness` sums it (seconds, `take_harness`; the plan's composition is read
    inside the step, so that part is also in the step's `ms`). Reading the ledgers cost ~20 us a
    step on this repository's CPU (warm: 2.4 us; between two forwards the caches are cold) and
    only in DSpark engines: in GPU session 46 the default's calls at 8 requests spent 0.9-3.1 ms
    more outside their steps than plain decoding's in the calls with the same steps (0.9-1.3% of a
    call; all DSpark-only work outside the steps, the ledgers among it). So the ledgers are opt-in
    (session 49). With `active` False a step is the engine's own (`--step-log-every`); with
    `ledger`, `judged` is then cleared as a logged step would read it, so a later logged step
    reports no earlier call's judgement.

    NOTE: on the CPU every draft runs eagerly, so CPU rounds read `drafted+eager`."""

    def __init__(self, llm, log: list | None = None, ledger: bool = False, phases: bool = False) -> None:
        self.engine = llm.engine
        self.ledger = ledger
        # `--step-log-phases`: each logged step's host time by phase (`step_phases.StepPhases`, wrapped
        # innermost, before this wrapper's own: its work lands in no phase)
        self.phases = None
        if phases and log is not None:
            from step_phases import StepPhases   # (a sibling script: on the path when a benchmark runs)
            self.phases = StepPhases(self.engine)
        self.harness = 0.0   # seconds of the wrapper's own work (`take_harness`)
        self.active = True   # False: a step is the engine's own, untimed and unlogged
        proposer = getattr(getattr(self.engine, "speculative", None), "proposer", None)
        # (a wrapper's counters are its inner proposer's: read there, not through its __getattr__,
        # ~0.5 us a read, which made the log's calls of wrapped engines ~3-6 us a step dearer)
        self.proposer = getattr(proposer, "inner", proposer)
        self.lookup = proposer if "lookup_rounds" in getattr(proposer, "__dict__", {}) else None   # `LookupAssist`
        self.times: dict[tuple[int, str], list[float]] = defaultdict(list)
        self.log = log
        original, schedule = self.engine.step, self.engine.scheduler.schedule
        planned: list = []
        self._dormant = getattr(getattr(self.engine, "speculative", None), "dormant", None)
        self._captured = 0   # forwards that captured the target features (speculative engines, with a log)
        if log is not None and self._dormant is not None:
            forward = self.engine.runner.execute_model

            def execute_model(*args, **kwargs):
                self._captured += kwargs.get("features", True)
                return forward(*args, **kwargs)
            self.engine.runner.execute_model = execute_model

        def scheduled():
            out = schedule()
            if not self.active:
                return out
            start = time.perf_counter()
            planned.append(_composition(out))   # now: the requests' counters move on after the step
            self.harness += time.perf_counter() - start
            return out

        def step():
            if not self.active:
                if self.ledger and getattr(self.proposer, "judged", None) is not None:
                    self.proposer.judged = None   # (as `_ledger` clears it: no stale judgement later)
                return original()
            enter = time.perf_counter()
            # (read again, not carried from the last step: an abort between steps moves them too)
            running, before = len(self.engine.scheduler.running), self._counters()
            reply = min((r.num_output_tokens for r in self.engine.scheduler.running), default=0)
            planned.clear()
            stretch = self._stretches() if self.log is not None else None
            if self.phases is not None:
                self.phases.take()   # (what ran before, e.g. an untraced call or this wrapper, is not this step's)
            start = time.perf_counter()
            out = original()
            end = time.perf_counter()
            phases = None if self.phases is None else self.phases.take()   # (before this wrapper's work)
            elapsed = end - start
            kind = self._kind(before, self._counters())
            self.times[(running, kind)].append(elapsed)
            if self.log is not None:
                totals = {key: sum(plan[key] for plan in planned)
                          for key in ("scheduled", "prefill_tokens", "verifying")}
                counts = [o.spec_counts for o in out if getattr(o, "spec_counts", None)]
                self.log.append({"running": running, "kind": kind, "ms": round(1e3 * elapsed, 3),
                                 "buffered": before[1], **totals, "t": round(time.time(), 4),
                                 "emitted": sum(len(o.new_token_ids) for o in out), "reply": reply,
                                 "accepted": sum(c[2] for c in counts), "verified": sum(c[1] for c in counts),
                                 **self._stretch(stretch), **(self._ledger(running) if self.ledger else {}),
                                 **({} if phases is None else {"phases": phases})})
            self.harness += (start - enter) + (time.perf_counter() - end)
            return out

        self.engine.step = step
        if log is not None:
            self.engine.scheduler.schedule = scheduled

    def _stretches(self) -> tuple[int, int, int]:
        """(dormant steps, quiet steps, forwards that captured features) so far; zeros without a
        speculative engine."""
        if self._dormant is None:
            return 0, 0, 0
        return self._dormant.steps, self._dormant.quiet_steps, self._captured

    def _stretch(self, before: tuple[int, int, int]) -> dict:
        """The log's `features` and `stretch` fields for the step since `before` (`_stretches`);
        empty without a speculative engine."""
        if self._dormant is None:
            return {}
        steps, quiet, captured = self._stretches()
        return {"features": captured - before[2],
                "stretch": "q" if quiet > before[1] else "d" if steps > before[0] else ""}

    def _counters(self) -> tuple[int, int, int, int, int, int]:
        """(drafted rounds, buffered pairs, draft-graph rounds, replays, captures, lookup rounds) so far."""
        graphs = getattr(getattr(self.proposer, "runner", None), "graphs", None)
        pending = getattr(self.proposer, "pending", None)
        return (getattr(self.proposer, "drafted_rounds", 0), getattr(pending, "pairs", 0),
                getattr(graphs, "rounds", 0), getattr(graphs, "replays", 0), getattr(graphs, "captures", 0),
                0 if self.lookup is None else self.lookup.lookup_rounds)

    def _ledger(self, batch: int) -> dict:
        """The confidence proposer's pause ledgers after a step, at `batch`'s bucket (the requests
        running before it; empty for other proposers): rounds still paused in the replies'
        bodies (`pause`) and openings (`opening_pause`), the smoothed expected gains there
        (`gain`, `opening_gain`; None before a drafted round), and the drafted rounds' measured /
        predicted time (`round_time`: `MeasuredRates.correction` as `measure_round_times` reads it,
        1.0 before `ROUND_SAMPLES` samples; read without `relax`; the measurement, also where
        `bound_only_untimed` leaves it unread, up to `bound_only` requests): why a load drafted or not. A step
        after which the pause policy priced a round also holds it (`judged`: opening or not, the
        expected accepted drafts, the drafts verified, the acceptance ratio and the gain before an
        opening's `worth_skipping`: `DSparkProposer.judged`, cleared when read), and the straggler
        factor that gain carries (`straggler`: `DSparkProposer.judged_straggler`, what
        `PausePolicy._straggler_factor` returned for the round; session 69). `bound`: the most a full
        round could gain there by the bounds (`BoundPauses._bound_gain`: the measured acceptance's
        upper bound as `expected_loss` reads it, `resume_bound` included; session 77)."""
        pauses, openings = getattr(self.proposer, "pauses", None), getattr(self.proposer, "openings", None)
        if pauses is None or openings is None or not batch:
            return {}
        from deepinfer_dspark.measured_rates import ROUND_SAMPLES, SPEC

        gain, opening = pauses.gain(batch), openings.ledger.gain(batch)
        judged, self.proposer.judged = getattr(self.proposer, "judged", None), None
        straggler = float(getattr(self.proposer, "judged_straggler", 1.0))
        return {"pause": pauses.left(batch), "opening_pause": openings.ledger.left(batch),
                "gain": None if gain is None else round(gain, 3),
                "opening_gain": None if opening is None else round(opening, 3),
                "round_time": round(self.proposer.rates.correction(SPEC, batch, least=ROUND_SAMPLES), 3),
                "bound": round(self.proposer._bound_gain(batch), 3),
                **({} if judged is None else {"judged": [judged[0], *(round(float(x), 3) for x in judged[1:])],
                                              "straggler": round(straggler, 3)})}

    @staticmethod
    def _kind(before: tuple, after: tuple) -> str:
        """The step's kind: "plain", "lookup" (a round of prompt-lookup drafts only, `LookupAssist`),
        or "drafted" (DSpark drafted) with what else the round did: "+flush" (the context buffered
        while paused was projected), "+capture" (a draft graph was captured), "+eager" (the draft
        ran eagerly: a bucket's first uses, or no bucket fits)."""
        if after[0] == before[0]:
            return "lookup" if after[5:] > before[5:] else "plain"
        kind = "drafted"
        if before[1] > 0 and after[1] < before[1]:
            kind += "+flush"
        if after[4] > before[4]:
            kind += "+capture"
        elif after[3] == before[3]:
            kind += "+eager"
        return kind

    def median(self, batch: int, kind: str, least: int = 5) -> float | None:
        """Median seconds of the `kind` steps ("plain" or "drafted", whatever else the round
        did) that ran `batch` requests since the last `take`; None below `least` steps."""
        times = [t for (b, k), v in self.times.items() if b == batch and k.split("+")[0] == kind for t in v]
        return statistics.median(times) if len(times) >= least else None

    def take_harness(self) -> float:
        """Seconds of the wrapper's own work since the last call (then zero): what it added to
        the calls' wall time, outside the engine."""
        seconds, self.harness = self.harness, 0.0
        return seconds

    def take(self, least: int = 1) -> str:
        """Median ms per step by (requests, kind) since the last call, where at least `least`
        steps were timed (every kind by default: the rare ones, a flush or a capture, are the
        costly ones); then forgets them."""
        cells = [f"{b} {kind} {1e3 * statistics.median(v):.2f} ms x{len(v)}"
                 for (b, kind), v in sorted(self.times.items()) if len(v) >= least]
        self.times.clear()
        return "step times: " + ("; ".join(cells) or "-")


def _composition(plan) -> dict:
    """What the scheduler put in one plan (`SchedulerOutput`), read as it is made: requests
    scheduled, prompt tokens among their new tokens (prefill), requests verifying drafts."""
    prefill = sum(min(n, req.num_prompt_tokens - req.num_computed_tokens) for req, n in plan.scheduled
                  if req.num_computed_tokens < req.num_prompt_tokens)
    return {"scheduled": len(plan.scheduled), "prefill_tokens": prefill, "verifying": len(plan.spec_token_ids)}


@contextmanager
def concurrency_cap(llm, limit: int):
    """At most `limit` requests running at once in `llm` inside the block: the scheduler admits
    the next waiting request as one finishes (serving benchmarks' max concurrency, a closed loop),
    where the engine's `max_num_seqs` would admit more. The engine keeps its graphs and profiles
    (sized for `max_num_seqs`); only the scheduler's admission limit changes, and is restored."""
    import dataclasses

    scheduler = llm.engine.scheduler
    config = scheduler.config
    scheduler.config = dataclasses.replace(config, max_num_seqs=min(limit, config.max_num_seqs))
    try:
        yield
    finally:
        scheduler.config = config


def proposer_state(llm, c: int) -> str:
    """The confidence proposer's counters and estimates after a concurrency (empty for other
    engines): rounds drafted and skipped so far, the excluded warm-up calls of each concurrency
    included (before session 56 one call of one request: ~44 drafted rounds on the H200's SmolLM2;
    now `--warmup-calls` calls of the concurrency's first prompt set); the ledger's gain (and the
    openings' ledger's, `OpeningPhase`, judged against `worth_skipping`) and the
    acceptance ratio at C's bucket (declined steps: those that captured no features; dormant: those
    of them that asked the proposer nothing, `DormantSteps`); the accepted drafts per request at full verification
    (estimate, upper bound, requests behind it); the (request, step) pairs buffered while
    paused; what a flush adds to a round at C (`FlushCosts.extra`, ms), a buffered pair to a flush
    (`FlushCosts.per_pair`, us) and keeping the features to a paused step at C (`_keep_cost`, plain
    steps); the finished requests behind `Stragglers` and its factor at C; the draft graphs
    captured and the context pool's reallocations so far; with `prompt_lookup_min`, the lookup
    rounds and drafts (`_lookup_state`). The drafted rounds' count names the lean ones among them
    (`DraftingLease`)."""
    spec = llm.engine.speculative
    proposer = getattr(spec, "proposer", None)
    if getattr(proposer, "decode", None) is None:
        return ""
    if getattr(proposer, "acceptance", None) is None:   # ngram-aware: LookupAssist over NoDrafter
        return _lookup_state(proposer).removeprefix("; ")
    full = proposer.acceptance.full
    gain = proposer.pauses.gain(c)
    openings = getattr(proposer, "openings", None)
    opening = None if openings is None else openings.ledger.gain(c)
    return (f"so far drafted {proposer.drafted_rounds} ({getattr(proposer, 'leased_rounds', 0)} lean) "
            f"skipped {proposer.skipped_rounds} rounds "
            f"(features declined in {getattr(proposer, 'declined_steps', 0)} steps, "
            f"{getattr(getattr(spec, 'dormant', None), 'steps', 0)} of them dormant); at {c}: gain "
            f"{'-' if gain is None else f'{gain:.2f}'} (openings {'-' if opening is None else f'{opening:.2f}'}) "
            f"ratio {proposer.acceptance.ratio(c):.2f} "
            f"expected_loss {proposer.expected_loss(c)}; full acceptance {full.mean() or 0:.2f} "
            f"(upper {full.upper() or 0:.2f}, {full.requests:.0f} requests); {proposer.pending.pairs} pairs buffered; "
            f"{_flush_state(proposer, c)}{_straggler_state(proposer, c)}{_graph_state(proposer.runner)}"
            f"{_lookup_state(proposer)}")


def _straggler_state(proposer, c: int) -> str:
    """The finished requests behind `Stragglers` and the factor they give at `c` (empty, so 1.0,
    with `judge_stragglers` off: nothing is counted then)."""
    stragglers = getattr(proposer, "stragglers", None)
    if stragglers is None:
        return ""
    return (f"stragglers {len(stragglers)} requests, factor {stragglers.factor(c):.3f} at {c}"
            f"{'' if proposer.judge_stragglers else ' (not judged)'}; ")


def _flush_state(proposer, c: int) -> str:
    """The flush costs measured so far (`FlushCosts`; `-` before they are known) and the keep cost
    they price at `c` requests (0 without `measure_round_times`)."""
    costs = getattr(proposer, "flush_costs", None)
    if costs is None:
        return ""
    extra, per_pair = costs.extra(c), costs.per_pair()
    return (f"flush +{'-' if extra is None else f'{1e3 * extra:.2f}'} ms at {c}, "
            f"{'-' if per_pair is None else f'{1e6 * per_pair:.2f}'} us a pair, keep {proposer._keep_cost(c):.3f}; ")


def _lookup_state(proposer) -> str:
    """`LookupAssist`'s counters (`prompt_lookup_min`): its rounds, drafts and accepted drafts so far
    (over every concurrency the engine ran, as the DSpark counters)."""
    if not hasattr(proposer, "lookup_rounds"):
        return ""
    return (f"; so far lookup {proposer.lookup_rounds} rounds, {proposer.lookup_accepted} of "
            f"{proposer.lookup_drafts} drafts accepted")


def _graph_state(runner) -> str:
    """Draft-graph captures so far (each mid-serving) and the context pool's reallocations (each
    drops every draft graph)."""
    graphs = getattr(runner, "graphs", None)
    captures = "no draft graphs" if graphs is None else f"draft graphs captured {graphs.captures}"
    return f"{captures}, context pool generation {runner.context.generation}"


def profile_run(llm, prompts: list, max_tokens: int, label: str, path: Path) -> None:
    """Appends to `path` the 30 costliest functions (own time, then cumulative) of one more run,
    profiled in the calling thread (the engine's), and dumps its raw statistics next to `path` as
    `<stem>-<label with dashes>.prof` (for `profile_diff.py`)."""
    import cProfile
    import io
    import pstats

    from deepinfer_core import SamplingParams

    profiler = cProfile.Profile()
    profiler.enable()
    llm.chat(prompts, SamplingParams(temperature=0, max_tokens=max_tokens))
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(30)
    with open(path, "a") as f:
        f.write(f"==== {label}\n{text.getvalue()}\n")
    profiler.dump_stats(str(path.with_name(f"{path.stem}-{label.replace(' ', '-')}.prof")))


def torch_profile_run(llm, prompts: list, max_tokens: int, label: str, path: Path) -> None:
    """Appends to `path` the 30 costliest ops by device time of one more run (`torch.profiler`,
    CPU and CUDA activities): where the GPU time goes, which a cProfile of the host cannot say.
    The run's host phases are marked (`annotated`) and its trace is exported next to `path` as
    `<stem>-<label with dashes>.trace.json.gz` (for `gpu_gaps.py`: the GPU's idle gaps by the
    host phase that kept it waiting)."""
    import gzip
    import os
    import shutil

    import torch
    from torch.profiler import ProfilerActivity, profile

    from deepinfer_core import SamplingParams

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with annotated(llm), profile(activities=activities) as prof:
        llm.chat(prompts, SamplingParams(temperature=0, max_tokens=max_tokens))
    sort = "cuda_time_total" if torch.cuda.is_available() else "cpu_time_total"
    with open(path, "a") as f:
        f.write(f"==== {label}\n{prof.key_averages().table(sort_by=sort, row_limit=30)}\n")
    trace = path.with_name(f"{path.stem}-{label.replace(' ', '-')}.trace.json")
    prof.export_chrome_trace(str(trace))
    with open(trace, "rb") as src, gzip.open(f"{trace}.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(trace)


# The host phases `annotated` marks: (path from the engine, label). Missing ones are skipped
# (an engine without speculation has no proposer).
PHASES = (("scheduler.schedule", "schedule"), ("runner.execute_model", "execute"),
          ("speculative.verify", "verify"), ("speculative.observe", "observe"),
          ("speculative.commit", "commit"), ("speculative.propose", "propose"),
          ("speculative.proposer.runner.draft", "draft"), ("speculative.proposer._plan_pause", "plan"),
          # (session 55) the proposer's own share: its `propose` (the prompt-lookup wrapper's, when it wraps
          # DSpark), DSpark's behind it, a leased round, the draft hook (on CUDA while the drafter's graph runs:
          # `_overlapped`, a lean round's `_settle`) and the step's `idle_rounds` ask
          ("speculative.proposer.propose", "proposer"), ("speculative.proposer.inner.propose", "dspark"),
          ("speculative.proposer._lean_round", "lean"), ("speculative.proposer._overlapped", "hook"),
          ("speculative.proposer._settle", "settle"), ("speculative.proposer.idle_rounds", "idle_rounds"))


def defining(owner, attr: str):
    """`owner`, or the proposer it wraps (`LookupAssist.inner`, recursively) when only that one
    has `attr` itself: a method patched on the wrapper would be written through to the inner
    proposer and could not be restored there."""
    while owner is not None and "inner" in getattr(owner, "__dict__", {}) \
            and not hasattr(type(owner), attr) and attr not in owner.__dict__:
        owner = owner.__dict__["inner"]
    return owner


@contextmanager
def annotated(llm):
    """Marks the engine's host phases (`PHASES`, and DSpark's `schedule_round`) with
    `torch.profiler.record_function` for the duration of the block: each call of those methods
    becomes a user annotation in a profiler trace. The methods are wrapped on their instances and
    restored afterwards."""
    import sys

    from torch.profiler import record_function

    def wrap(fn, label):
        def marked(*args, **kwargs):
            with record_function(label):
                return fn(*args, **kwargs)
        return marked

    patched = []
    for dotted, label in PHASES:
        owner = llm.engine
        *parents, attr = dotted.split(".")
        for name in parents:
            owner = getattr(owner, name, None)
        owner = defining(owner, attr)
        if owner is None or not hasattr(owner, attr):
            continue
        patched.append((owner, attr, owner.__dict__.get(attr)))
        setattr(owner, attr, wrap(getattr(owner, attr), label))
    module = sys.modules.get("deepinfer_dspark.proposers")
    if module is not None and hasattr(module, "schedule_round"):
        patched.append((module, "schedule_round", module.schedule_round))
        module.schedule_round = wrap(module.schedule_round, "schedule_round")
    try:
        yield
    finally:
        for owner, attr, original in reversed(patched):
            if original is None and owner is not module:
                delattr(owner, attr)   # the class's method again
            else:
                setattr(owner, attr, original)

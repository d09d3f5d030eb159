# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where the GPU waits for the host: idle gaps of a torch.profiler trace, by the host work in them.

`bench_dspark.py --torch-profile PATH` exports each profiled run's trace next to PATH
(`<stem>-<variant>-at-<C>.trace.json.gz`, Chrome trace format) with the engine's host phases
marked (`engine_probes.annotated`: schedule, execute, verify, observe, commit, propose and the
proposer's draft, schedule_round and plan; since session 55 also proposer, dspark, lean, hook,
settle and idle_rounds: `proposer` is the engine's proposer's own `propose`, the prompt-lookup
wrapper's in the default, whose DSpark is `dspark`, a bare DSpark's in fixed-k). Per trace this
prints the run's wall span, the time the GPU was busy (kernels, copies and sets merged over all
streams), the idle time in gaps of at least `--min-gap` us, and that idle time split by the
innermost host phase running at each moment of the gap (sampled every `--resolution` us; "-"
outside every phase). Two engines that launch the same kernels (fixed-7 and confidence at 1
request, whose drafts and verified lengths match) then differ only where their gaps differ: the
host work that kept the GPU idle. Session 21 timed confidence's drafted rounds at 1 request
0.15-0.23 ms above fixed-7's on the H200 while its host profile showed ~0.04 ms more
(`profile_diff.py`); this splits the rest.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/gpu_gaps.py A.trace.json.gz [B.trace.json.gz ...] [--min-gap 5]

Times in ms unless named us.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
from collections import defaultdict
from pathlib import Path

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATEGORY = "user_annotation"


def load_events(path: Path) -> list[dict]:
    """The complete ("X") events of a Chrome trace (gzip or plain JSON)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]


def busy_intervals(events: list[dict]) -> list[tuple[float, float]]:
    """The GPU's busy time as disjoint sorted (start, end) us intervals (all streams merged)."""
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                   if e.get("cat") in GPU_CATEGORIES)
    merged: list[list[float]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


class HostPhases:
    """The host's marked phases (user annotations), for "which innermost phase runs at t"."""

    def __init__(self, events: list[dict]) -> None:
        spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e.get("name", "?")) for e in events
                       if e.get("cat") == HOST_CATEGORY)
        self.spans = spans
        self.starts = [s for s, _, _ in spans]

    def at(self, t: float) -> str:
        """The innermost phase running at `t` (the latest-starting span that contains it), "-" if none."""
        i = bisect.bisect_right(self.starts, t)
        while i > 0:
            i -= 1
            start, end, name = self.spans[i]
            if end > t:
                return name
            if t - start > 1e6:   # (no phase spans a second: stop looking further back)
                break
        return "-"


def gaps(path: Path, min_gap: float = 5.0, resolution: float = 1.0) -> dict:
    """One trace's wall span, GPU busy and idle time (ms) and idle time by host phase (ms).

    Args:
        path: a Chrome trace (`torch.profiler` export), gzip or plain.
        min_gap: idle stretches shorter than this (us) are not counted (launch jitter).
        resolution: the sampling step inside a gap (us).

    Raises:
        ValueError: the trace holds no GPU events (`path` names the file).
    """
    events = load_events(path)
    busy = busy_intervals(events)
    if not busy:
        raise ValueError(f"{path}: no GPU events (kernels, copies, sets) in the trace")
    phases = HostPhases(events)
    host = [(s, e) for s, e, _ in phases.spans]
    first = min([busy[0][0]] + [s for s, _ in host])
    last = max([busy[-1][1]] + [e for _, e in host])
    by_phase: dict[str, float] = defaultdict(float)
    idle = 0.0
    edges = [(first, first)] + busy + [(last, last)]
    count = 0
    for (_, prev_end), (next_start, _) in zip(edges, edges[1:]):
        length = next_start - prev_end
        if length < min_gap:
            continue
        count += 1
        idle += length
        t = prev_end
        while t < next_start:
            step = min(resolution, next_start - t)
            by_phase[phases.at(t + step / 2)] += step
            t += step
    return {"wall": (last - first) / 1e3, "busy": sum(b - a for a, b in busy) / 1e3, "idle": idle / 1e3,
            "gaps": count, "by_phase": {k: v / 1e3 for k, v in sorted(by_phase.items(), key=lambda kv: -kv[1])}}


def report(paths: list[Path], min_gap: float, resolution: float, top: int = 10) -> list[str]:
    """Markdown lines: one summary row per trace, then its idle time by host phase."""
    lines = ["| trace | wall ms | GPU busy ms | idle ms (gaps) | idle by host phase (ms) |",
             "|---|---:|---:|---:|---|"]
    for path in paths:
        g = gaps(path, min_gap, resolution)
        phases = ", ".join(f"{name} {ms:.2f}" for name, ms in list(g["by_phase"].items())[:top])
        lines.append(f"| {path.name} | {g['wall']:.2f} | {g['busy']:.2f} | {g['idle']:.2f} ({g['gaps']}) | {phases} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, nargs="+")
    parser.add_argument("--min-gap", type=float, default=5.0, help="us: shorter idle stretches are not counted")
    parser.add_argument("--resolution", type=float, default=1.0, help="us: sampling step inside a gap")
    parser.add_argument("--top", type=int, default=10, help="host phases listed per trace")
    args = parser.parse_args()
    print("\n".join(report(args.traces, args.min_gap, args.resolution, args.top)))


if __name__ == "__main__":
    main()

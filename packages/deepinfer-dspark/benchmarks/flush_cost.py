# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What one flush of the paused buffer costs: `PendingContext.take` plus the context projection
and pool write (`DSparkDraftRunner.observe_batch`), timed apart, on the device.

The buffer is filled as a paused engine fills it in an offline chat batch: `--requests` prompts
of `--prompt` rows observed at prefill, then `--steps` decode steps of one row per live request;
the later half of the requests (none of one) finish after `--finish-at` steps (their rows dropped). The drafter
has the given checkpoint's config with random weights (the cost does not depend on the values).

Usage (GPU machine, repository root):
    python3 packages/deepinfer-dspark/benchmarks/flush_cost.py \
        --config packages/deepinfer-dspark/benchmarks/smollm2_drafter/config.json --device cuda
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.draft_runner import DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.pending_context import PendingContext


def fill(pending: PendingContext, args: argparse.Namespace, width: int, device: torch.device,
         dtype: torch.dtype) -> None:
    """A paused engine's buffer after `args.steps` decode steps (see the module docstring)."""
    names = [f"r{i}" for i in range(args.requests)]
    for name in names:
        pending.add([(name, range(args.prompt), torch.randn(args.prompt, width, device=device, dtype=dtype))])
    for step in range(args.steps):
        live = [n for i, n in enumerate(names) if i < (args.requests + 1) // 2 or step < args.finish_at]
        pending.add_step(live, [args.prompt + step] * len(live), [1] * len(live), list(range(len(live))),
                         torch.randn(len(live), width, device=device, dtype=dtype))
        if step == args.finish_at - 1:
            for name in names[(args.requests + 1) // 2:]:
                pending.drop(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="a DSpark checkpoint's config.json")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--requests", type=int, nargs="+", default=[1, 4, 8, 32])
    parser.add_argument("--prompt", type=int, default=150)
    parser.add_argument("--steps", type=int, default=90)
    parser.add_argument("--finish-at", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vary", type=int, default=0, metavar="ROWS",
                        help="add ROWS prompt rows at every repeat (a new row count each flush, as in an engine)")
    parser.add_argument("--paths", nargs="+", choices=["graphs", "eager"], default=["graphs"],
                        help="graphs: the runner's projection graphs (chunked above the largest bucket); "
                             "eager: `context_kv` at every flush's own row count")
    parser.add_argument("--torch-profile", action="store_true", help="print the ops of one flush per size")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats: must be >= 1")
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    cfg = DSparkConfig.from_dict(json.load(open(args.config)))
    drafter = DSparkDrafter(cfg, dtype).to(device).eval()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    runner = DSparkDraftRunner(drafter, num_blocks=1)
    # Reserved up front, as an engine reserves it (`reserve_blocks`): no flush pays a growth.
    longest = args.prompt + args.vary * args.repeats + args.steps
    runner.context.reserve(max(args.requests) * -(-longest // runner.context.block_size))
    began = time.perf_counter()
    captured = runner.capture_all(cfg.block_size, max(args.requests), 2048) if device.type == "cuda" else 0
    print(f"capture_all: {captured} graphs in {time.perf_counter() - began:.1f} s")
    graphs, prompt, requests = runner.observe_graphs, args.prompt, args.requests
    for path in args.paths:
        runner.observe_graphs = graphs if path == "graphs" else None
        label = path if graphs is not None else f"{path} (eager: no projection graphs here)"
        for n in list(requests):
            args.requests = n
            takes, projections, rows = [], [], 0
            for repeat in range(args.repeats + 1):
                args.prompt = prompt + args.vary * repeat
                for name in runner.context.request_ids:
                    runner.remove(name)
                pending = PendingContext()
                fill(pending, args, cfg.feature_size, device, dtype)
                sync()
                t0 = time.perf_counter()
                items = pending.take(runner.num_positions)
                sync()
                t1 = time.perf_counter()
                runner.observe_batch(items)
                sync()
                t2 = time.perf_counter()
                rows = sum(len(p) for _, p, _ in items)
                if repeat:   # the first flush of a size is a warm-up
                    takes.append(t1 - t0)
                    projections.append(t2 - t1)
                else:
                    first = (t1 - t0, t2 - t1)
            print(f"{label}: {n} requests ({rows} rows at the last repeat): "
                  f"take {1e3 * statistics.median(takes):.2f} ms, "
                  f"observe_batch {1e3 * statistics.median(projections):.2f} ms (medians of {args.repeats}; first: "
                  f"{1e3 * first[0]:.2f} + {1e3 * first[1]:.2f} ms)", flush=True)
        if args.torch_profile:
            pending = PendingContext()
            fill(pending, args, cfg.feature_size, device, dtype)
            for name in runner.context.request_ids:
                runner.remove(name)
            with torch.profiler.profile() as prof:
                runner.observe_batch(pending.take(runner.num_positions))
                sync()
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()

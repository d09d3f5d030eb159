# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Host time of `prepare_inputs` per step: decode steps and speculative verify steps by batch size.

A speculative round cannot overlap its host work with the device (it waits for the drafts, then
for the verdict), so every microsecond of step preparation lands in the round time: on the H200's
host one round of 1 request spent about a fifth of its 3 ms preparing inputs (session 12's
cProfiles). This times `prepare_inputs` alone: `--calls` calls back to back for each shape
(copies queued without blocking, one device synchronise at the end), median of `--repeats`, in
microseconds per call. `--baseline FILE` loads `prepare_inputs` from another version of
`executor/batch.py` and times it in the same run, interleaved shape by shape, so the ratio
compares both on the same host state.

    python3 packages/deepinfer-core/benchmarks/prepare_inputs_cost.py --device cuda [--baseline OLD_batch.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time

import torch


def chunks_for(batch: int, tokens: int, context: int, block_size: int):
    """`batch` chunks of `tokens` tokens each (1: decode, 1 + k: a verify step) after `context`
    tokens, with their request ids (persistent block tables) and block tables."""
    from deepinfer_core.executor.batch import ScheduledChunk

    blocks = -(-(context + tokens) // block_size)
    return [ScheduledChunk(token_ids=[5] * tokens, start_pos=context, sample=True, num_logits=tokens,
                           block_ids=list(range(i * blocks, (i + 1) * blocks)), request_id=f"r{i}")
            for i in range(batch)]


def time_calls(fn, chunks, calls: int, repeats: int, device: str, block_size: int, num_blocks: int) -> float:
    from deepinfer_core.executor.block_tables import PersistentBlockTables

    tables = PersistentBlockTables(len(chunks), len(chunks[0].block_ids))
    times = []
    for _ in range(repeats + 1):   # the first repeat warms the pinned-memory cache up
        start = time.perf_counter()
        for _ in range(calls):
            fn(chunks, block_size, device, num_blocks, tables)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times[1:])


def load_baseline(path: str):
    spec = importlib.util.spec_from_file_location("baseline_batch", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.prepare_inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 8], help="tokens per chunk (1: decode)")
    parser.add_argument("--context", type=int, default=300)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", default=None, help="another executor/batch.py to time in the same run")
    args = parser.parse_args()
    from deepinfer_core.executor.batch import prepare_inputs

    block_size = 16
    impls = {"current": prepare_inputs}
    if args.baseline:
        impls["baseline"] = load_baseline(args.baseline)
    print(f"device {args.device}, context {args.context}, {args.calls} calls x {args.repeats} repeats; us per call")
    print("| batch | tokens/chunk | " + " | ".join(impls) + (" | current / baseline |" if args.baseline else " |"))
    print("|---:|---:|" + "---:|" * (len(impls) + bool(args.baseline)))
    for b in args.batch:
        for tokens in args.tokens:
            chunks = chunks_for(b, tokens, args.context, block_size)
            num_blocks = b * (-(-(args.context + tokens) // block_size))
            cells = {name: time_calls(fn, chunks, args.calls, args.repeats, args.device, block_size, num_blocks)
                     for name, fn in impls.items()}
            ratio = f" {cells['current'] / cells['baseline']:.2f} |" if args.baseline else ""
            print(f"| {b} | {tokens} | " + " | ".join(f"{v:.1f}" for v in cells.values()) + " |" + ratio, flush=True)


if __name__ == "__main__":
    main()

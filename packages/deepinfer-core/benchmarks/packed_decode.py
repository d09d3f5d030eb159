# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`packed_graph_inputs` on against off: decode throughput and the forward's launch host time.

On an H100 at 8 requests (SmolLM2-135M) a decode step was host-bound: ~1.2 ms a step, of which a
median 0.83 ms in `ModelRunner.execute_model` (the `launch` phase of
packages/deepinfer-dspark/benchmarks/step_phases.py; session 74), while the host waited ~0.01 ms
for the device. `EngineConfig.packed_graph_inputs` uploads a graph-replayed decode step's inputs
in one copy (`executor.packed_inputs`). This builds both engines in one process (`--first` says
which is built first), alternates their calls in rotated order over `--rounds` rounds of the same
prompts, and prints per concurrency: each engine's output tok/s (tokens actually emitted, over the
rounds' summed wall time), the median over rounds of the paired ratio packed / general, and the
median host microseconds of `execute_model` over decode steps that replayed a graph.

`--inputs-only` times the input path alone, no model (runs on the CPU too): for decode steps of
B requests (all placeholders, as under asynchronous scheduling), the general path (`prepare_inputs`,
the fill, `DecodeBuffers.load`) against `DecodeBuffers.upload`, each on its own buffers: the torch
calls one step makes (counted by a `TorchFunctionMode`: the calls Python dispatches to torch) and
the median host microseconds of a step over `--rounds` x 100 steps; with `--query-len Q` > 1,
verification steps of Q tokens a request (`prepare_inputs` + `VerifyBuffers.load` against
`VerifyBuffers.upload`).

Usage (repository root; `--model` a checkpoint, default a SmolLM2-135M-shaped config with dummy
weights; on the GPU machine after `source tools/gpu_env.sh`):
    python3 packages/deepinfer-core/benchmarks/packed_decode.py --model ~/.cache/deepinfer/models/X.gguf \
        --concurrency 1 8 32 64 --rounds 8
    python3 packages/deepinfer-core/benchmarks/packed_decode.py --inputs-only --device cpu --concurrency 1 8 64 \
        [--query-len 8]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

SMOLLM2_135M = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=49152, hidden_size=576,
                    intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                    max_position_embeddings=8192, rope_theta=100000.0, tie_word_embeddings=True, rms_norm_eps=1e-5,
                    torch_dtype="bfloat16", eos_token_id=2)


class LaunchTimes:
    """Host microseconds of each `execute_model` call of `llm` that replayed a decode graph."""

    def __init__(self, llm) -> None:
        runner = llm.engine.runner
        self.samples: list[float] = []
        inner = runner.execute_model

        def timed(*args, **kwargs):
            graphs = runner.graphs
            before = None if graphs is None else graphs.replays + getattr(runner.plain_graphs, "replays", 0)
            start = time.perf_counter()
            out = inner(*args, **kwargs)
            elapsed = time.perf_counter() - start
            if before is not None and graphs.replays + getattr(runner.plain_graphs, "replays", 0) > before:
                self.samples.append(1e6 * elapsed)
            return out
        runner.execute_model = timed

    def take(self) -> list[float]:
        out, self.samples = self.samples, []
        return out


def inputs_only(device: str, concurrency: list[int], rounds: int, query_len: int) -> None:
    """`--inputs-only` (see the module docstring)."""
    import torch
    from torch.overrides import TorchFunctionMode

    from deepinfer_core.executor.batch import ScheduledChunk, prepare_inputs
    from deepinfer_core.executor.block_tables import PersistentBlockTables
    from deepinfer_core.executor.cuda_graph import DecodeBuffers, capture_sizes, pick_size
    from deepinfer_core.executor.transfer import to_device
    from deepinfer_core.executor.verify_graph import VerifyBuffers

    block, width, pool, q = 16, 64, 1 << 14, query_len

    class Count(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))

    def chunks(batch: int, step: int) -> list:
        start = 20 + step % 100   # (8 blocks of 16 hold 128 tokens)
        if q == 1:   # decode: every last token a placeholder, as under asynchronous scheduling
            return [ScheduledChunk([-1], start, list(range(8 * i, 8 * i + 8)), True, fill_row=i, request_id=f"r{i}")
                    for i in range(batch)]
        return [ScheduledChunk([5] * q, start, list(range(8 * i, 8 * i + 8)), True, num_logits=q, request_id=f"r{i}")
                for i in range(batch)]

    def general(buffers, step_chunks, size, tables, fill_from) -> None:
        step = prepare_inputs(step_chunks, block, device, pool, tables)
        if q > 1:
            buffers.load(step, size)
            return
        rows = [c.fill_row for c in step_chunks]   # (as `ModelRunner.execute_model` fills them: pinned copies)
        step.input_ids[to_device(list(range(len(rows))), torch.int64, device)] = \
            fill_from[to_device(rows, torch.int64, device)]
        buffers.load(step, size)

    def packed(buffers, step_chunks, size, tables, fill_from) -> None:
        if q > 1:
            buffers.upload(step_chunks, size, block, pool, tables)
        else:
            buffers.upload(step_chunks, size, block, pool, tables, fill_from)

    sizes = capture_sizes(max(concurrency))
    kind = "decode" if q == 1 else f"verification (Q = {q})"
    print(f"device {device}: host us a {kind} step's inputs (median), torch calls a step")
    print("| requests | general us | packed us | general calls | packed calls |")
    print("|---:|---:|---:|---:|---:|")
    for batch in concurrency:
        size = pick_size(sizes, batch)
        cells = []
        for fn in (general, packed):
            buffers = DecodeBuffers(sizes[-1], width, device) if q == 1 else \
                VerifyBuffers(sizes[-1], q, width, block, device)
            tables = PersistentBlockTables(sizes[-1], width)
            fill_from = torch.arange(batch, dtype=torch.int64, device=device)
            counter, times = Count(), []
            with torch.inference_mode():
                fn(buffers, chunks(batch, 0), size, tables, fill_from)
                with counter:
                    fn(buffers, chunks(batch, 1), size, tables, fill_from)
                for r in range(100 * rounds):
                    step_chunks = chunks(batch, r)
                    start = time.perf_counter()
                    fn(buffers, step_chunks, size, tables, fill_from)
                    times.append(time.perf_counter() - start)
                if device != "cpu":
                    torch.cuda.synchronize()
            cells.append((1e6 * statistics.median(times), counter.calls))
        print(f"| {batch} | {cells[0][0]:.1f} | {cells[1][0]:.1f} | {cells[0][1]} | {cells[1][1]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="checkpoint (default: SmolLM2-135M's shape, dummy weights)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--first", choices=("packed", "general"), default="general", help="which engine is built first")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--inputs-only", action="store_true", help="time the input path alone (no model)")
    parser.add_argument("--query-len", type=int, default=1, help="with --inputs-only: Q > 1 times verification steps")
    args = parser.parse_args()
    if args.inputs_only:
        import torch

        inputs_only("cuda" if args.device == "auto" and torch.cuda.is_available() else
                    ("cpu" if args.device == "auto" else args.device), args.concurrency, max(args.rounds, 1),
                    max(args.query_len, 1))
        return
    if args.rounds < 1 or args.max_tokens < 1 or min(args.concurrency) < 1:
        parser.error("--rounds, --max-tokens, --concurrency: must be >= 1")
    from deepinfer_core import LLM, SamplingParams

    model, kw = args.model, {}
    if model is None:
        folder = Path(tempfile.mkdtemp(prefix="packed-decode-"))
        (folder / "config.json").write_text(json.dumps(SMOLLM2_135M))
        model, kw = str(folder), dict(load_format="dummy", dtype="bfloat16")
    common = dict(device=args.device, max_num_seqs=max(args.concurrency), max_model_len=1024,
                  kv_cache_memory=4 << 30, **kw)
    order = ["packed", "general"] if args.first == "packed" else ["general", "packed"]
    llms = {name: LLM(model, packed_graph_inputs=name == "packed", **common) for name in order}
    timers = {name: LaunchTimes(llm) for name, llm in llms.items()}
    vocab = llms["packed"].engine.vocab_size
    rng = random.Random(0)
    print(f"device {llms['packed'].engine.runner.device}, model {model}, built first: {order[0]}")
    print("| concurrency | packed tok/s | general tok/s | packed / general (median of rounds) "
          "| launch us packed | launch us general |")
    print("|---:|---:|---:|---:|---:|---:|")
    for c in args.concurrency:
        prompts = [{"prompt_token_ids": [rng.randrange(3, vocab - 3) for _ in range(rng.randint(16, 64))]}
                   for _ in range(c)]
        params = SamplingParams(temperature=0, max_tokens=args.max_tokens, ignore_eos=True)
        for llm in llms.values():   # warm-up call (first use of each size)
            llm.generate(prompts, params)
        for timer in timers.values():
            timer.take()
        walls = {name: [] for name in llms}
        tokens = {name: 0 for name in llms}
        for r in range(args.rounds):
            names = order[r % 2:] + order[:r % 2]
            for name in names:
                start = time.perf_counter()
                outs = llms[name].generate(prompts, params)
                walls[name].append(time.perf_counter() - start)
                tokens[name] += sum(len(o.outputs[0].token_ids) for o in outs)
        launch = {name: timer.take() for name, timer in timers.items()}
        rate = {name: tokens[name] / sum(walls[name]) for name in llms}
        ratio = statistics.median(g / p for p, g in zip(walls["packed"], walls["general"]))
        cells = [f"{statistics.median(launch[n]):.0f}" if launch[n] else "-" for n in ("packed", "general")]
        print(f"| {c} | {rate['packed']:.0f} | {rate['general']:.0f} | {ratio:.3f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The garbage collector's passes in an engine's calls: plain decoding against confidence
scheduling, each with the heap frozen (`freeze_heap`, the default) and without (`+thawed`).

A tiny target (4 layers, hidden 64, dummy weights: the host's work dominates a step, as on the
H200's slow host) and a random one-layer drafter (`bench_paused.random_drafter`), greedy batches
of `--concurrency` prompts of 6-40 tokens, `--max-tokens` new tokens each (`ignore_eos`), the
engines alive at once and their calls alternated in rotated order. Printed per engine: the
median call (s), its summed `execute_model` (the forward, s), and the collector's passes in its
calls by generation (count, summed ms), from `gc.callbacks`. Session 50 found here that a full
pass walked ~228,000 start-up objects (~100 ms on the 2-core CPU; ~1.5 ms frozen). The
collector's thresholds are the process's: a thawed engine beside frozen ones meets full passes on
another schedule than alone (a pass in a frozen call leaves a small old generation, and the next
full pass comes sooner), so read its rows as an upper bound of what thawed calls paid.

Usage (repository root; profiles as `bench_dspark.py --save-sps DIR/sps_batch.json` writes them):
    python3 packages/deepinfer-dspark/benchmarks/gc_passes.py \
        --profiles benchmarks/results/h200-2026-12-05/run2/high --concurrency 256 --rounds 8
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from pathlib import Path

from bench_paused import random_drafter, scratch_dir

TARGET = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 128, "hidden_size": 64,
          "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 1024,
          "tie_word_embeddings": False, "eos_token_id": 127, "bos_token_id": 126, "torch_dtype": "float32"}
MODES = ("none", "none+thawed", "confidence", "confidence+thawed")


class Passes:
    """The collector's passes by (engine, generation): count and seconds (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.engine: str | None = None   # the engine whose call runs (None: passes not counted)
        self.passes: dict[tuple[str, int], list] = {}
        self._began = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        elif self.engine is not None:
            entry = self.passes.setdefault((self.engine, info["generation"]), [0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - self._began

    def close(self) -> None:
        gc.callbacks.remove(self)


def prompts(count: int, seed: int) -> list[list[int]]:
    """`count` prompts of 6-40 tokens that repeat a short motif."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        motif = [rng.randrange(TARGET["vocab_size"] - 3) for _ in range(rng.randint(2, 5))]
        out.append((motif * 8)[:rng.randint(6, 40)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=Path, required=True, help="folder with sps_batch.json, spec_sps_batch.json")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=8, help="measured calls per engine")
    args = parser.parse_args()
    if args.concurrency < 1 or args.max_tokens < 1 or args.rounds < 1:
        parser.error("--concurrency, --max-tokens and --rounds: must be >= 1")
    from deepinfer_core import LLM, SamplingParams

    from deepinfer_dspark.sps import SPSProfile

    target = scratch_dir("gc-passes-target-")
    (target / "config.json").write_text(json.dumps(TARGET))
    drafter = str(random_drafter(target, 7, scratch_dir("dspark-random-")))
    decode = SPSProfile.load(args.profiles / "sps_batch.json")
    spec = SPSProfile.load(args.profiles / "spec_sps_batch.json")
    dspark = {"method": "dspark", "model": drafter, "num_speculative_tokens": 7, "scheduling": "confidence",
              "sps_profile": spec, "decode_profile": decode, "measure_round_times": False}   # decisions as there
    llms = {mode: LLM(str(target), speculative_config=dspark if mode.startswith("confidence") else None,
                      load_format="dummy", dtype="float32", max_model_len=512, block_size=16,
                      kv_cache_memory=1 << 30, seed=11, max_num_seqs=args.concurrency,
                      freeze_heap=not mode.endswith("+thawed")) for mode in MODES}
    forward = {mode: [0.0] for mode in MODES}
    for mode, llm in llms.items():
        run = llm.engine.runner.execute_model

        def timed(*a, run=run, spent=forward[mode], **kw):
            began = time.perf_counter()
            try:
                return run(*a, **kw)
            finally:
                spent[0] += time.perf_counter() - began
        llm.engine.runner.execute_model = timed
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens, ignore_eos=True)
    pool = prompts(args.concurrency * (args.rounds + 1), seed=5)
    batch = [[{"prompt_token_ids": p} for p in pool[i * args.concurrency:(i + 1) * args.concurrency]]
             for i in range(args.rounds + 1)]
    for llm in llms.values():
        llm.generate(batch[0], params)   # warm-up, excluded
    passes, calls, forwards = Passes(), {m: [] for m in MODES}, {m: [] for m in MODES}
    try:
        for r in range(args.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]   # rotated: no engine always first
            for mode in order:
                spent, passes.engine = forward[mode][0], mode
                began = time.perf_counter()
                llms[mode].generate(batch[r + 1], params)
                calls[mode].append(time.perf_counter() - began)
                passes.engine = None
                forwards[mode].append(forward[mode][0] - spent)
    finally:
        passes.close()
    print(f"{args.concurrency} requests, {args.max_tokens} new tokens, {args.rounds} calls an engine")
    print("| engine | median call s | median forward s | gen-0 passes (ms) | gen-1 passes (ms) | gen-2 passes (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode in MODES:
        cells = [f"{passes.passes.get((mode, g), [0, 0.0])[0]} ({1e3 * passes.passes.get((mode, g), [0, 0.0])[1]:.1f})"
                 for g in range(3)]
        print(f"| {mode} | {statistics.median(calls[mode]):.3f} | {statistics.median(forwards[mode]):.3f} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

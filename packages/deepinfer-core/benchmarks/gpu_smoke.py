# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""First look at the engine on a CUDA device: eager vs CUDA-graph decode.

    python3 packages/deepinfer-core/benchmarks/gpu_smoke.py [--out DIR]

1. Correctness: a tiny random Qwen3 checkpoint (the test fixture's) in float32 on the GPU:
   32 greedy tokens from DeepInfer vs HF transformers `generate` on the same device, 4 prompts,
   with CUDA graphs (default) and with `enforce_eager=True`; graph tokens must equal eager ones.
2. Speed: a Qwen3-0.6B-shaped config with `load_format="dummy"` bf16 weights (no real weights
   reachable): decode TPOT at batch 1 and 64 (ignore_eos), from `RequestOutput.metrics`, with
   CUDA graphs on and off in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def load_fixture_module():
    spec = importlib.util.spec_from_file_location("core_conftest", HERE.parent / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_parity(out_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    from deepinfer_core import LLM, SamplingParams

    folder = load_fixture_module().build_tiny_checkpoint("qwen3", out_dir / "tiny-qwen3")
    prompts = [[5, 9, 33, 2, 71], [100, 3], [7] * 11, [200, 201, 202, 203, 9, 8]]
    params = SamplingParams(temperature=0, max_tokens=32, ignore_eos=True)
    runs = {}
    for eager in (False, True):
        start = time.perf_counter()
        llm = LLM(model=str(folder), device="cuda", dtype="float32", enforce_eager=eager)
        print(f"tiny qwen3 enforce_eager={eager}: engine ready in {time.perf_counter() - start:.1f} s, "
              f"graphs {llm.engine.runner.graphs.sizes if llm.engine.runner.graphs else None}")
        runs[eager] = [list(o.outputs[0].token_ids)
                       for o in llm.generate([{"prompt_token_ids": p} for p in prompts], params)]
        del llm
    print(f"tiny qwen3 fp32 cuda: graph tokens == eager tokens: {runs[False] == runs[True]} "
          f"({sum(a == b for a, b in zip(runs[False], runs[True]))}/{len(prompts)} prompts)")
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").cuda().eval()
    for eager, ours in runs.items():
        same = 0
        for p, mine in zip(prompts, ours):
            ids = torch.tensor([p], device="cuda")
            ref = hf.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False)[0, len(p):].tolist()
            same += mine == ref
        print(f"parity tiny qwen3 fp32 cuda (enforce_eager={eager}): {same}/{len(prompts)} prompts with "
              f"identical 32 greedy tokens vs HF")


def qwen3_06b_shape(out_dir: Path) -> Path:
    """A folder with only the config.json of Qwen3-0.6B (weights come from load_format="dummy")."""
    from transformers import Qwen3Config

    folder = out_dir / "qwen3-0.6b-config"
    cfg = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                      num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                      rope_theta=1000000.0, tie_word_embeddings=True, rms_norm_eps=1e-6, torch_dtype="bfloat16",
                      architectures=["Qwen3ForCausalLM"])
    cfg.save_pretrained(folder)
    return folder


def decode_speed(folder: Path, eager: bool) -> None:
    from deepinfer_core import LLM, SamplingParams

    start = time.perf_counter()
    llm = LLM(model=str(folder), device="cuda", dtype="bfloat16", max_model_len=2048, load_format="dummy",
              kv_cache_memory=8 * 2**30, max_num_seqs=64, enforce_eager=eager)
    graphs = llm.engine.runner.graphs
    mode = "eager" if graphs is None else "cuda-graph"
    print(f"qwen3-0.6b shape bf16 {mode}: engine ready in {time.perf_counter() - start:.1f} s "
          f"(graph sizes {graphs.sizes if graphs else None})")
    llm.generate([{"prompt_token_ids": [5, 6, 7]}] * 2, SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))
    for batch in (1, 64):
        prompts = [{"prompt_token_ids": [(7 * i + j) % 250 + 3 for j in range(128)]} for i in range(batch)]
        params = SamplingParams(temperature=0, max_tokens=128, ignore_eos=True)
        start = time.perf_counter()
        outs = llm.generate(prompts, params)
        elapsed = time.perf_counter() - start
        tpots = []
        for o in outs:
            m = o.metrics
            n = len(o.outputs[0].token_ids)
            if m is not None and m.first_token_time is not None and m.finished_time is not None and n > 1:
                tpots.append((m.finished_time - m.first_token_time) / (n - 1) * 1000)
        emitted = sum(len(o.outputs[0].token_ids) for o in outs)
        tpot = f"{statistics.median(tpots):.2f} ms" if tpots else "n/a"
        print(f"qwen3-0.6b shape bf16 {mode}: batch {batch}: median TPOT {tpot}, "
              f"{emitted / elapsed:.0f} output tok/s ({emitted} tokens in {elapsed:.2f} s, prompt 128, output 128)")
    del llm
    torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/deepinfer-gpu-smoke"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    steps = (lambda: check_parity(args.out), lambda: decode_speed(qwen3_06b_shape(args.out), eager=False),
             lambda: decode_speed(qwen3_06b_shape(args.out), eager=True))
    for step in steps:
        try:
            step()
        except Exception as exc:  # report and go on: this is a first look, not a test
            print(f"FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            import traceback
            traceback.print_exc()


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""First look at the engine on a CUDA device (eager, no CUDA graphs yet).

    python3 packages/deepinfer-core/benchmarks/gpu_smoke.py [--out DIR]

1. Correctness: a tiny random Qwen3 checkpoint (the test fixture's) in float32 on the GPU:
   32 greedy tokens from DeepInfer vs HF transformers `generate` on the same device, 4 prompts.
2. Speed: a Qwen3-0.6B-shaped checkpoint with random bf16 weights (no real weights reachable):
   decode TPOT at batch 1 and 64 (ignore_eos), from `RequestOutput.metrics`.
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
    llm = LLM(model=str(folder), device="cuda", dtype="float32")
    ours = [o.outputs[0].token_ids for o in llm.generate(
        [{"prompt_token_ids": p} for p in prompts], SamplingParams(temperature=0, max_tokens=32, ignore_eos=True))]
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").cuda().eval()
    same = 0
    for p, mine in zip(prompts, ours):
        ids = torch.tensor([p], device="cuda")
        ref = hf.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False)[0, len(p):].tolist()
        same += list(mine) == ref
    print(f"parity tiny qwen3 fp32 cuda: {same}/{len(prompts)} prompts with identical 32 greedy tokens")
    del llm


def qwen3_06b_shape(out_dir: Path) -> Path:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    fixture = load_fixture_module()
    folder = out_dir / "qwen3-0.6b-shape"
    cfg = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                      num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                      rope_theta=1000000.0, tie_word_embeddings=True, rms_norm_eps=1e-6, torch_dtype="bfloat16")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(folder)
    fixture._save_tokenizer(folder)
    return folder


def decode_speed(folder: Path) -> None:
    from deepinfer_core import LLM, SamplingParams

    llm = LLM(model=str(folder), device="cuda", dtype="bfloat16", max_model_len=2048,
              kv_cache_memory=8 * 2**30, max_num_seqs=64)
    for batch in (1, 64):
        prompts = [{"prompt_token_ids": [(7 * i + j) % 250 + 3 for j in range(128)]} for i in range(batch)]
        params = SamplingParams(temperature=0, max_tokens=128, ignore_eos=True)
        llm.generate(prompts[:2], SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))  # warm-up
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
        print(f"qwen3-0.6b shape bf16 eager: batch {batch}: median TPOT {tpot}, "
              f"{emitted / elapsed:.0f} output tok/s ({emitted} tokens in {elapsed:.2f} s, prompt 128, output 128)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/deepinfer-gpu-smoke"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for step in (lambda: check_parity(args.out), lambda: decode_speed(qwen3_06b_shape(args.out))):
        try:
            step()
        except Exception as exc:  # report and go on: this is a first look, not a test
            print(f"FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            import traceback
            traceback.print_exc()


if __name__ == "__main__":
    main()

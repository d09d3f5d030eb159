# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Throughput of `deterministic=True` against the default kernels, in one run (GPU-speed workload).

Runs `deepinfer bench throughput` twice on a Qwen3-0.6B-shaped model with dummy bf16 weights
(256 requests, prompt and output lengths uniform in [100, 1024], ignore_eos, seed 0), first with
the default kernels and then with `--deterministic`, and prints both tables and the ratio.

Usage (repository root, deepinfer-kernels installed, PYTHONPATH covering core/recipe/cli src):
    python3 packages/deepinfer-core/benchmarks/deterministic_throughput.py [--num-prompts 256]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path


def qwen3_folder(out_dir: Path) -> Path:
    spec = importlib.util.spec_from_file_location("gpu_smoke", Path(__file__).with_name("gpu_smoke.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.qwen3_06b_shape(out_dir)


def run(folder: Path, args: argparse.Namespace, deterministic: bool) -> float:
    cmd = [sys.executable, "-m", "deepinfer_cli", "bench", "throughput", "--model", str(folder),
           "--load-format", "dummy", "--dtype", "bfloat16", "--num-prompts", str(args.num_prompts),
           "--input-len", "100", "1024", "--output-len", "100", "1024", "--seed", "0",
           "--max-num-seqs", str(args.max_num_seqs), "--max-model-len", "2048",
           "--max-num-batched-tokens", "8192", "--kv-cache-memory", args.kv_cache_memory]
    if deterministic:
        cmd.append("--deterministic")
    print("$", " ".join(cmd), flush=True)
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout:  # streamed, so a run cut short by a timeout still shows its progress
            print(line, end="", flush=True)
            lines.append(line)
    for line in lines:  # the rich table row: engine | elapsed | req/s | output tok/s | ...
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 4 and cells[1] == "DeepInfer":
            return float(cells[4].replace(",", ""))
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-prompts", type=int, default=256)
    parser.add_argument("--max-num-seqs", type=int, default=256)
    parser.add_argument("--kv-cache-memory", default="40GiB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = qwen3_folder(Path(tmp))
        default = run(folder, args, deterministic=False)
        deterministic = run(folder, args, deterministic=True)
    print(f"output tok/s: default {default:.0f}, deterministic {deterministic:.0f}, "
          f"deterministic / default = {deterministic / default:.3f}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The GPU-speed table: every `deepinfer bench` command of the root BENCHMARKS.md, in one driver.

Rows (dummy bf16 weights of public configs; no checkpoint is reachable from the GPU machine):
  throughput  Qwen3-0.6B shape, 256 requests, prompt/output lengths uniform in [100, 1024],
              ignore_eos, seed 0: async scheduling on, off, and HF transformers (`--hf`).
  latency     Qwen3-0.6B shape, batch 1 / 8 / 64, input 128, output 128: async on (+ `--hf`) and off.
  latency     Llama-3-8B shape, batch 1, input 128, output 128: roofline fraction.
  determinism the throughput row with `--deterministic`.
  trace       `step_trace.py` on the throughput workload and on batch-1 decode: per-step timings by
              kind and a torch profile of ten steps (the profile behind any missed goal).

Each command's output streams to stdout and to `<out>/<name>.txt` (a run cut short by a time
limit keeps what it printed). Usage, on the GPU machine from the repository root:
    source tools/gpu_env.sh
    python3 packages/deepinfer-core/benchmarks/gpu_speed.py --out $OUT --only throughput,latency
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

QWEN3_06B = dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=151936, hidden_size=1024,
                 intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                 head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0, tie_word_embeddings=True,
                 rms_norm_eps=1e-6, torch_dtype="bfloat16", eos_token_id=151645)
LLAMA3_8B = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=128256, hidden_size=4096,
                 intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                 max_position_embeddings=8192, rope_theta=500000.0, tie_word_embeddings=False, rms_norm_eps=1e-5,
                 torch_dtype="bfloat16", eos_token_id=128001)


def write_config(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def commands(models: dict[str, Path]) -> dict[str, tuple[str, list[str]]]:
    """name -> (group, argv after `deepinfer`, or after `python3` for a script path)."""
    common = ["--load-format", "dummy", "--dtype", "bfloat16", "--kv-cache-memory", "40GiB"]
    tput = ["bench", "throughput", "--model", str(models["qwen3-0.6b"]), *common, "--num-prompts", "256",
            "--input-len", "100", "1024", "--output-len", "100", "1024", "--seed", "0", "--max-num-seqs", "256",
            "--max-model-len", "2048", "--max-num-batched-tokens", "8192"]
    lat = ["bench", "latency", "--model", str(models["qwen3-0.6b"]), *common, "--batch-sizes", "1", "8", "64",
           "--input-len", "128", "--output-len", "128", "--max-model-len", "2048", "--max-num-seqs", "64"]
    big = ["bench", "latency", "--model", str(models["llama3-8b"]), *common, "--batch-sizes", "1",
           "--input-len", "128", "--output-len", "128", "--max-model-len", "2048", "--max-num-seqs", "8"]
    trace = [str(Path(__file__).with_name("step_trace.py")), "--model", str(models["qwen3-0.6b"]), *common,
             "--max-model-len", "2048"]
    return {
        "trace_throughput": ("trace", trace + ["--num-prompts", "256", "--input-len", "100", "1024", "--output-len",
                                               "100", "1024", "--max-num-seqs", "256", "--max-num-batched-tokens",
                                               "8192", "--profile", "100:110"]),
        "trace_batch1": ("trace", trace + ["--num-prompts", "1", "--input-len", "128", "128", "--output-len", "128",
                                           "128", "--max-num-seqs", "64", "--profile", "60:70"]),
        "throughput_async_hf": ("throughput", tput + ["--hf", "--hf-batch-size", "256"]),
        "throughput_async": ("throughput-nohf", tput),
        "throughput_sync": ("throughput", tput + ["--no-async-scheduling"]),
        "latency_async_hf": ("latency", lat + ["--hf"]),
        "latency_async": ("latency-nohf", lat),
        "latency_sync": ("latency", lat + ["--no-async-scheduling"]),
        "latency_8b": ("latency", big),
        "latency_8b_hf": ("latency-8b-hf", big + ["--hf"]),
        "throughput_deterministic": ("determinism", tput + ["--deterministic"]),
    }


def run(name: str, argv: list[str], out: Path, limit: float) -> int:
    script = argv[0].endswith(".py")
    cmd = [sys.executable, *argv] if script else [sys.executable, "-m", "deepinfer_cli", *argv]
    shown = f"python3 {' '.join(argv)}" if script else f"deepinfer {' '.join(argv)}"
    print(f"### {name}\n$ {shown}", flush=True)
    start = time.perf_counter()
    with open(out / f"{name}.txt", "w") as log, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                                 stderr=subprocess.STDOUT, text=True) as proc:
        log.write(f"$ {shown}\n")
        timer = threading.Timer(limit, proc.kill)  # also when the child prints nothing
        timer.start()
        try:
            for line in proc.stdout:
                print(line, end="", flush=True)
                log.write(line)
        finally:
            timer.cancel()
            proc.wait()
            if time.perf_counter() - start >= limit:
                print(f"[killed after {limit:.0f} s]", flush=True)
                log.write(f"[killed after {limit:.0f} s]\n")
    print(f"[{name}: rc {proc.returncode}, {time.perf_counter() - start:.0f} s]", flush=True)
    return proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the logs")
    parser.add_argument("--only", default="trace,throughput,latency,determinism",
                        help="comma-separated groups (trace, throughput, latency, latency-nohf, determinism) or "
                             "command names (run in the order given)")
    parser.add_argument("--limit", type=float, default=280.0, help="seconds per command")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole run: a command starts only with --limit seconds left")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    configs = Path(tempfile.mkdtemp(prefix="gpu_speed_"))  # not under --out: it returns logs only
    models = {"qwen3-0.6b": write_config(configs / "qwen3-0.6b", QWEN3_06B),
              "llama3-8b": write_config(configs / "llama3-8b", LLAMA3_8B)}
    wanted = args.only.split(",")
    table = commands(models)
    if all(w in table for w in wanted):  # command names: run in the order given
        table = {w: table[w] for w in wanted}
    start = time.perf_counter()
    for name, (group, argv) in table.items():
        if group in wanted or name in wanted:
            left = None if args.budget is None else args.budget - (time.perf_counter() - start)
            if left is not None and left < 30:
                print(f"### {name}: skipped ({left:.0f} s of the budget left)", flush=True)
                continue
            run(name, argv, args.out, args.limit if left is None else min(args.limit, left))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""What a DSpark engine costs at start-up: construction time and device memory against an
engine without speculation, with the draft and context-projection graphs captured up front
(`DSparkDraftRunner.capture_all`, called by the `dspark` factory on CUDA).

Each engine is built in a fresh process (one engine per process: later engines in one process
ran slower on the H200, BENCHMARKS.md session 12), and the table reports, per method: the
`LLM(...)` wall time, the device memory allocated and reserved (graph pools) after construction, the draft graphs
captured, the context pool's blocks and bytes.

Usage (GPU machine, repository root):
    python3 packages/deepinfer-dspark/benchmarks/startup_cost.py --target MODEL --drafter CKPT \
        --max-num-seqs 256 --max-model-len 2048 --kv-cache-gib 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def build_once(args: argparse.Namespace, method: str) -> dict:
    """Builds one engine in this process and returns its start-up facts."""
    import time

    import torch

    from deepinfer_core import LLM

    spec = None if method == "none" else {"method": "dspark", "model": args.drafter,
                                          "num_speculative_tokens": args.k}
    began = time.perf_counter()
    llm = LLM(args.target, speculative_config=spec, max_num_seqs=args.max_num_seqs,
              max_model_len=args.max_model_len, kv_cache_memory=int(args.kv_cache_gib * (1 << 30)),
              load_format=args.load_format)
    seconds = time.perf_counter() - began
    row = {"method": method, "seconds": round(seconds, 2)}
    if torch.cuda.is_available():   # graph pools' memory counts as reserved, not allocated
        row["allocated MiB"] = round(torch.cuda.memory_allocated() / 2 ** 20)
        row["reserved MiB"] = round(torch.cuda.memory_reserved() / 2 ** 20)
    decoder = llm.engine.speculative
    if decoder is not None:
        runner = decoder.proposer.runner
        graphs = runner.graphs
        row["draft graphs"] = 0 if graphs is None else graphs.captures
        row["observe graphs"] = 0 if runner.observe_graphs is None else len(runner.observe_graphs.graphs)
        pool = runner.context
        row["pool blocks"] = pool.num_blocks
        row["pool MiB"] = round(2 * pool.k.numel() * pool.k.element_size() / 2 ** 20)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--drafter", required=True)
    parser.add_argument("--k", type=int, default=7, help="num_speculative_tokens")
    parser.add_argument("--max-num-seqs", type=int, default=256)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--kv-cache-gib", type=float, default=8.0)
    parser.add_argument("--load-format", default="auto", help="'dummy': random target weights (a config-only folder)")
    parser.add_argument("--method", choices=["none", "dspark"], default=None,
                        help="build this one engine here and print its row as JSON (the child process)")
    args = parser.parse_args()
    if args.method is not None:
        print(json.dumps(build_once(args, args.method)), flush=True)
        return
    rows = []
    for method in ("none", "dspark"):
        child = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--method", method],
                               capture_output=True, text=True, check=False)
        lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
        if child.returncode != 0 or not lines:
            print(f"{method}: failed (exit {child.returncode}):\n{child.stderr[-2000:]}", flush=True)
            continue
        rows.append(json.loads(lines[-1]))
    if not rows:
        sys.exit("no engine was built")
    keys = list(dict.fromkeys(key for row in rows for key in row))
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(key, "")) for key in keys) + " |")
    print(f"\ncommand: {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()

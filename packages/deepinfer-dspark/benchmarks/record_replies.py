# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Greedy replies of a target to `bench_dspark.py`'s chat prompts, saved for trace-driven replays.

`bench_dspark.py` chats stdlib docstrings (`build_prompts(stdlib_docstrings(N, seed=12345))`); this
script runs plain greedy decoding over the same first `--count` conversations, on any device
(the CPU will do: 135M parameters), and writes one JSON object:
`{"target": path, "max_tokens": M, "replies": [{"prompt": [ids], "reply": [ids]}, ...]}`.
`lookup_replay.py --replies FILE` then drives the proposers over these texts, so prompt lookup
meets the matches real replies have (quoted names, repeated lines, loops) rather than drawn ones.
On this repository's 2-core CPU 8 replies take ~20 s, 256 ~5 minutes.
The replies are the CPU's float32 ones; the H200's bfloat16 replies differ from some token on.

Usage (repository root):
    python3 packages/deepinfer-dspark/benchmarks/record_replies.py \
        --target ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf --count 128 --out replies.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    from deepinfer_core import LLM, SamplingParams
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--count", type=int, default=128, help="conversations (the pool's first)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=16, help="conversations a generate call")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.count < 1 or args.max_tokens < 1 or args.batch < 1:
        parser.error("--count, --max-tokens and --batch: must be >= 1")
    pool = [[{"role": "user", "content": p}] for p in build_prompts(stdlib_docstrings(args.count, seed=12345))]
    llm = LLM(args.target, device=args.device, max_num_seqs=args.batch)
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens)
    replies, began = [], time.perf_counter()
    for at in range(0, len(pool), args.batch):
        for out in llm.chat(pool[at:at + args.batch], params):
            replies.append({"prompt": list(out.prompt_token_ids), "reply": list(out.outputs[0].token_ids)})
        print(f"{len(replies)} replies in {time.perf_counter() - began:.0f} s", flush=True)
    args.out.write_text(json.dumps({"target": str(args.target), "max_tokens": args.max_tokens,
                                    "replies": replies}))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Host time of `LLM.chat`'s prompt encoding per conversation: one by one vs in one batch.
Before a call's first step, every conversation is rendered by the chat template and tokenized
(`ChatEncoder`); on this repository's CPU session 59 measured ~300 us a one-message
conversation of ~100 tokens, ~190 of it the tokenizer (packages/deepinfer-core/BENCHMARKS.md;
this host's speed moves, compare within a run). `encode_many`
renders them one by one and tokenizes all the prompts in one `PromptTokenizer.encode_batch`
call (the tokenizers library's own threads). This times, with the real SmolLM2 tokenizer and
its chat template, `--conversations` one-message conversations (~100-token paragraphs of the
repository's README), three ways in rotated order `--repeats` times in one process: `encode`
one by one (before), `encode_many`, and the rendering alone (`render`, what no tokenizer batch
removes); printed, the median microseconds a conversation and the ratio to one by one.
    python3 packages/deepinfer-core/benchmarks/chat_encoding.py [--conversations 64 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def conversations(count: int) -> list[list[dict[str, str]]]:
    """`count` one-message conversations: ~400-character slices of the repository's README."""
    text = " ".join((Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8").split())
    return [[{"role": "user", "content": text[(i * 211) % (len(text) - 400):][:400]}] for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=5, help="calls per mode, alternated; the median is kept")
    args = parser.parse_args()
    from deepinfer_core.assets import default_model_path
    from deepinfer_core.chat_encoder import ChatEncoder
    from deepinfer_core.loader import load_tokenizer

    encoder = ChatEncoder(load_tokenizer(default_model_path()))
    modes = {"one by one (`encode`, before)": lambda convs: [encoder.encode(c) for c in convs],
             "one batch (`encode_many`)": encoder.encode_many,
             "rendering alone (`render`)": lambda convs: [encoder.render(c) for c in convs]}
    print(f"ChatEncoder, SmolLM2 tokenizer and chat template, median of {args.repeats}")
    print("| conversations | mode | us a conversation | over one by one |")
    print("|---:|---|---:|---:|")
    for count in args.conversations:
        convs = conversations(count)
        assert encoder.encode_many(convs) == [encoder.encode(c) for c in convs]
        spent: dict[str, list[float]] = {m: [] for m in modes}
        for r in range(args.repeats):
            for mode in list(modes)[r % len(modes):] + list(modes)[:r % len(modes)]:
                t0 = time.perf_counter()
                modes[mode](convs)
                spent[mode].append(time.perf_counter() - t0)
        base = statistics.median(spent[next(iter(modes))])
        for mode, values in spent.items():
            med = statistics.median(values)
            print(f"| {count} | {mode} | {1e6 * med / count:.0f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()

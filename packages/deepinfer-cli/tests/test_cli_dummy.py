# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`--load-format dummy` and `--enforce-eager`: a throughput benchmark from a config.json alone."""

from __future__ import annotations

import pytest
import transformers

from deepinfer_cli.__main__ import build_parser, main
from deepinfer_cli.commands.engine_args import engine_kwargs


def test_flags_map_to_llm_kwargs():
    args = build_parser().parse_args(["bench", "throughput", "--load-format", "dummy", "--enforce-eager"])
    assert engine_kwargs(args) == {"dtype": "auto", "load_format": "dummy", "enforce_eager": True}
    args = build_parser().parse_args(["bench", "throughput"])
    assert "load_format" not in engine_kwargs(args) and "enforce_eager" not in engine_kwargs(args)


def test_bench_throughput_on_config_only_folder(tmp_path, capsys):
    transformers.LlamaConfig(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                             architectures=["LlamaForCausalLM"]).save_pretrained(str(tmp_path))
    argv = ["bench", "throughput", "--model", str(tmp_path), "--load-format", "dummy", "--dtype", "float32",
            "--num-prompts", "3", "--input-len", "4", "9", "--output-len", "5", "5", "--no-warmup",
            "--kv-cache-memory", "1MiB"]
    assert main(argv) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "DeepInfer" in line)
    assert row.replace("│", " ").split()[-1] == "15"  # output tokens: 3 requests x 5


def test_bench_throughput_refuses_outputs_that_cannot_fit(tmp_path, capsys):
    """input MAX + output MAX beyond max_model_len would cut outputs short silently (and report the
    asked lengths in the table's title)."""
    transformers.LlamaConfig(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                             architectures=["LlamaForCausalLM"]).save_pretrained(str(tmp_path))
    argv = ["bench", "throughput", "--model", str(tmp_path), "--load-format", "dummy", "--dtype", "float32",
            "--num-prompts", "2", "--input-len", "4", "8", "--output-len", "30", "30", "--max-model-len", "32",
            "--no-warmup", "--kv-cache-memory", "1MiB"]
    assert main(argv) != 0
    captured = capsys.readouterr()
    assert "--output-len: input MAX + output MAX (38) exceeds max_model_len (32)" in captured.out + captured.err


def test_generate_with_a_speculative_config(tmp_path, capsys):
    """`--speculative-config` reaches the engine (n-gram drafts on a random model); the output is
    that of plain decoding, and a line sums the verification counters. Bad JSON fails before
    the model loads, naming the flag; an unknown key is named by the engine."""
    transformers.LlamaConfig(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                             architectures=["LlamaForCausalLM"]).save_pretrained(str(tmp_path))
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt_token_ids": [5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6]}\n')
    base = ["generate", "--prompts-file", str(prompts), "--model", str(tmp_path), "--load-format", "dummy",
            "--dtype", "float32", "--max-tokens", "40", "--ignore-eos", "--kv-cache-memory", "1MiB",
            "--deterministic"]
    texts = []
    ngram = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1}'
    for extra in ([], ["--speculative-config", ngram]):
        assert main(base + ["--output", str(tmp_path / "out.jsonl")] + extra) == 0
        texts.append((tmp_path / "out.jsonl").read_text().split('"outputs"')[1])
        out = capsys.readouterr().out
        assert ("speculative:" in out) == bool(extra)
    assert texts[0] == texts[1]
    for bad, message in (("{method: ngram}", "--speculative-config: not JSON"),
                         ("[1]", "--speculative-config: expected a JSON object, got an array"),
                         ("null", "--speculative-config: expected a JSON object, got null"),
                         ("[" * 5000 + "]" * 5000, "--speculative-config: not usable JSON (RecursionError")):
        with pytest.raises(SystemExit) as exit_:
            main(base + ["--speculative-config", bad])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    never = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 10000}'   # never drafts
    assert main(base + ["--speculative-config", never]) == 0
    assert "speculative: 0 verification rounds, 0 drafts verified" in capsys.readouterr().out
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"prompt_token_ids": ' + "[" * 5000 + "]" * 5000 + "}\n")
    assert main(["generate", "--prompts-file", str(deep)]) == 2
    assert "--prompts-file line 1: not usable JSON (RecursionError" in capsys.readouterr().err
    assert main(base + ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "bogus": 1}']) != 0
    captured = capsys.readouterr()
    assert "speculative_config" in captured.out + captured.err and "bogus" in captured.out + captured.err

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`--load-format dummy` and `--enforce-eager`: a throughput benchmark from a config.json alone."""

from __future__ import annotations

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

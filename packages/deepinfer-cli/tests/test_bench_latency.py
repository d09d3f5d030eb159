# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer bench latency` on a config-only folder (`--load-format dummy`), plus flag checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from deepinfer_cli.__main__ import main
from deepinfer_cli.commands.bench_latency import percentile


def _tiny_config(path) -> transformers.LlamaConfig:
    cfg = transformers.LlamaConfig(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   architectures=["LlamaForCausalLM"])
    cfg.save_pretrained(str(path))
    return cfg


@pytest.mark.parametrize("extra, width", [([], 8), (["--no-async-scheduling"], 8), (["--hf"], 11)])
def test_latency_table_has_a_numeric_row_per_batch_size(tmp_path, capsys, monkeypatch, extra, width):
    monkeypatch.setenv("COLUMNS", "200")  # rich reads the width from here when not on a terminal
    _tiny_config(tmp_path)
    argv = ["bench", "latency", "--model", str(tmp_path), "--load-format", "dummy", "--dtype", "float32",
            "--batch-sizes", "1", "2", "--input-len", "5", "--output-len", "4", "--num-iters", "1",
            "--copy-bytes", "4MiB", "--kv-cache-memory", "1MiB", *extra]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [line.replace("│", " ").split() for line in out.splitlines()]
    rows = [r for r in rows if r and r[0].isdigit()]
    assert [r[0] for r in rows] == ["1", "2"]
    for r in rows:
        assert len(r) == width  # batch + 7 figures (+ HF TTFT, TPOT, ratio), none missing or wrapped
        assert all(float(v) > 0 for v in r[1:9])
        assert all(float(v) == float(v) for v in r[9:])  # HF columns parse (TPOT is a difference)
    assert "copy bandwidth:" in out
    assert "warm-up: 1 iteration(s) per batch size, excluded" in out


@pytest.mark.parametrize("flags, field", [
    (["--batch-sizes", "0"], "--batch-sizes"),
    (["--batch-sizes", "2", "-1"], "--batch-sizes"),
    (["--output-len", "1"], "--output-len"),
    (["--num-iters", "0"], "--num-iters"),
])
def test_bad_flags_exit_2_naming_the_flag(flags, field, capsys):
    assert main(["bench", "latency", *flags]) == 2  # rejected before any model is loaded
    assert field in capsys.readouterr().err


def test_model_and_kv_bytes_match_transformers(tmp_path):
    from deepinfer_core import LLM

    cfg = _tiny_config(tmp_path)
    llm = LLM(str(tmp_path), load_format="dummy", dtype="float32", kv_cache_memory=2**20)
    hf = transformers.LlamaForCausalLM(cfg).to(torch.float32)
    assert llm.model_bytes == sum(p.numel() * p.element_size() for p in hf.parameters())
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    assert llm.kv_bytes_per_token == 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * 4
    # Decode reads every weight except an untied input-embedding table (only looked-up rows).
    embed = hf.get_input_embeddings().weight
    untied_embed = 0 if cfg.tie_word_embeddings else embed.numel() * embed.element_size()
    assert llm.decode_weight_bytes == llm.model_bytes - untied_embed


def test_percentile_matches_numpy():
    values = list(np.random.default_rng(1).uniform(0.5, 2.0, size=37))
    for q in (0, 50, 99, 100):
        assert percentile(values, q) == pytest.approx(np.percentile(values, q))

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Argument parsing and request loading of `deepinfer generate` / `bench` (no model needed)."""

from __future__ import annotations

import argparse
import json

import pytest

from deepinfer_cli.__main__ import build_parser, main
from deepinfer_cli.commands.bench import make_workload
from deepinfer_cli.commands.engine_args import engine_kwargs, parse_bytes, sampling_kwargs
from deepinfer_cli.commands.generate import load_requests


def parse(*argv):
    return build_parser().parse_args(list(argv))


def test_chat_flag_wraps_prompt_as_user_message():
    args = parse("generate", "--chat", "--system", "be brief", "Hi there")
    assert load_requests(args) == [{"messages": [{"role": "system", "content": "be brief"},
                                                 {"role": "user", "content": "Hi there"}]}]


def test_flags_map_to_engine_and_sampling_kwargs():
    args = parse("generate", "x", "--max-model-len", "512", "--kv-cache-memory", "64MiB", "--temperature", "0.5",
                 "--stop", "a", "--stop", "b", "--no-chunked-prefill")
    assert engine_kwargs(args) == {"dtype": "auto", "max_model_len": 512, "kv_cache_memory": 64 * 2**20,
                                   "enable_chunked_prefill": False}
    assert sampling_kwargs(args) == {"temperature": 0.5, "stop": ["a", "b"]}


@pytest.mark.parametrize("text,expected", [("1024", 1024), ("2GiB", 2 * 2**30), ("1.5 MiB", int(1.5 * 2**20))])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


def test_parse_bytes_rejects_unknown_unit():
    with pytest.raises(argparse.ArgumentTypeError, match="kv-cache-memory"):
        parse_bytes("3 parsecs")


def test_prompts_file_kinds_and_errors(tmp_path):
    good = tmp_path / "good.jsonl"
    rows = [{"prompt": "a"}, {"messages": [{"role": "user", "content": "b"}]}, {"prompt_token_ids": [1, 2]}]
    good.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert load_requests(parse("generate", "--prompts-file", str(good))) == rows

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n{"prompt": "a", "messages": []}\n')
    with pytest.raises(ValueError, match="line 2"):
        load_requests(parse("generate", "--prompts-file", str(bad)))
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match="line 1: not JSON"):
        load_requests(parse("generate", "--prompts-file", str(bad)))


def test_missing_prompt_is_a_clean_error(capsys):
    assert main(["generate"]) == 2
    assert "prompt" in capsys.readouterr().err


def test_workload_is_seeded_and_within_ranges():
    a = make_workload(20, (5, 9), (3, 4), vocab=50000, seed=7)
    b = make_workload(20, (5, 9), (3, 4), vocab=50000, seed=7)
    assert a == b
    assert all(5 <= len(p) <= 9 for p in a.prompts) and all(3 <= n <= 4 for n in a.output_lens)
    assert a != make_workload(20, (5, 9), (3, 4), vocab=50000, seed=8)
    with pytest.raises(ValueError, match="--input-len"):
        make_workload(2, (9, 5), (1, 1), vocab=100, seed=0)

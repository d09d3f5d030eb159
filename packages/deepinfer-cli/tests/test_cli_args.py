# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Argument parsing and request loading of `deepinfer generate` / `bench` (no model needed)."""

from __future__ import annotations

import argparse
import json

import pytest

from deepinfer_cli.__main__ import build_parser, main
from deepinfer_cli.commands.bench import Workload, make_workload, run_deepinfer
from deepinfer_cli.commands.engine_args import engine_kwargs, parse_bytes, sampling_kwargs
from deepinfer_cli.commands.generate import build_params, load_requests


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


# --- Regression tests from the error-contract attack (each failed before its fix). ---


def test_unreadable_prompts_file_is_a_clean_error(tmp_path, capsys):
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\n")
    for path in (tmp_path / "missing.jsonl", tmp_path, binary):  # were FileNotFoundError / IsADirectoryError tracebacks
        assert main(["generate", "--prompts-file", str(path)]) == 2
        assert "--prompts-file: cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("row,message", [
    ({"prompt": 5}, "line 2: prompt must be a string, got int"),
    ({"messages": {"role": "user", "content": "x"}}, "line 2: messages must be a list of message objects, got dict"),
    ({"prompt_token_ids": "1 2"}, "line 2: prompt_token_ids must be a list of token ids, got str"),
    ({"prompt": "a", "sampling_params": [1]}, "line 2: sampling_params must be an object, got list"),
])
def test_prompts_file_field_types_are_checked(tmp_path, row, message):
    # An int prompt first in the batch made the whole list one token-id prompt; a dict `messages` one conversation.
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"prompt": "ok"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=message):
        load_requests(parse("generate", "--prompts-file", str(path)))


def test_chat_prompts_file_rows_become_messages_only(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"prompt": "hi", "sampling_params": {"max_tokens": 3}}) + "\n")
    assert load_requests(parse("generate", "--chat", "--prompts-file", str(path))) == [
        {"sampling_params": {"max_tokens": 3}, "messages": [{"role": "user", "content": "hi"}]}]


@pytest.mark.parametrize("overrides,message", [
    ({"bogus": 1}, "request 1 sampling_params: .*unexpected keyword argument 'bogus'"),  # was a TypeError traceback
    ({"max_tokens": 0}, "request 1 sampling_params: max_tokens must be an int >= 1"),
])
def test_per_request_sampling_params_errors_name_the_request(overrides, message):
    args = parse("generate", "x")
    with pytest.raises(ValueError, match=message):
        build_params(args, [{"prompt": "a"}, {"prompt": "b", "sampling_params": overrides}])
    assert [p.max_tokens for p in build_params(args, [{"prompt": "a", "sampling_params": {"max_tokens": 3}}])] == [3]


@pytest.mark.parametrize("argv,message", [
    (["generate", "x", "--output", "/nonexistent-dir/out.jsonl"], "--output: folder"),
    (["generate", "x", "--output", "/"], "--output: / is a folder"),
    (["bench", "throughput", "--hf-batch-size", "0"], "--hf-batch-size: must be >= 1"),
    (["bench", "throughput", "--input-len", "0", "5"], "--input-len: need 1 <= MIN <= MAX"),
])
def test_flag_errors_come_before_the_model_load(capsys, tmp_path, argv, message):
    # A missing model would be named instead if the flag were checked only after loading it.
    assert main(argv + ["--model", str(tmp_path / "no-model")]) == 2
    err = capsys.readouterr().err
    assert message in err and "model:" not in err


def test_bench_refuses_to_report_failed_requests():
    class FailingLLM:
        def generate(self, prompts, params):
            class Out:
                error = "prompt is 200 tokens, longer than max_model_len (64)"
                outputs = []
            return [Out() for _ in prompts]

    with pytest.raises(ValueError, match="2 of 2 benchmark requests failed; request 0: prompt is 200 tokens"):
        run_deepinfer(FailingLLM(), Workload([[1] * 200, [2] * 200], [4, 4]), 0.0)


def test_vocabulary_bounded_flags_fail_the_run(monkeypatch, capsys):
    # Were per-request errors (exit 1, one "error:" block per prompt) instead of one clean flag error.
    import types

    import deepinfer_core

    class FakeLLM:
        def __init__(self, **kwargs):
            self.model_config = types.SimpleNamespace(vocab_size=100)

        def generate(self, *args, **kwargs):
            raise AssertionError("the flag check must come before generation")

    monkeypatch.setattr(deepinfer_core, "LLM", FakeLLM)
    assert main(["generate", "x", "--top-k", "500"]) == 2
    assert "top_k must be <= the vocabulary size (100), got 500" in capsys.readouterr().err
    assert main(["generate", "x", "--logprobs", "21"]) == 2
    assert "logprobs must be <= 20, got 21" in capsys.readouterr().err


def test_device_flag_reaches_the_engine_and_defaults_to_auto():
    assert engine_kwargs(parse("bench", "throughput", "--device", "cuda:1"))["device"] == "cuda:1"
    assert "device" not in engine_kwargs(parse("bench", "throughput"))   # the engine's default ("auto")


def test_mixed_cuda_graphs_flag_keeps_the_engine_default_unless_given():
    assert "mixed_cuda_graphs" not in engine_kwargs(parse("bench", "throughput"))   # the engine's default (on)
    assert engine_kwargs(parse("bench", "throughput", "--no-mixed-cuda-graphs"))["mixed_cuda_graphs"] is False
    assert engine_kwargs(parse("bench", "latency", "--mixed-cuda-graphs"))["mixed_cuda_graphs"] is True


def test_no_freeze_heap_flag_keeps_the_engine_default_unless_given():
    assert "freeze_heap" not in engine_kwargs(parse("bench", "throughput"))   # the engine's default (on)
    assert engine_kwargs(parse("generate", "x", "--no-freeze-heap"))["freeze_heap"] is False

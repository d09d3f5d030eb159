# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer generate --json-schema FILE | --regex PATTERN | --choice TEXT`: flags, errors, and one run
with the real SmolLM2 whose output `jsonschema` validates."""

from __future__ import annotations

import json
import re

import pytest

from deepinfer_cli.__main__ import build_parser, main
from deepinfer_cli.commands.generate import build_params, load_requests

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                           "population": {"type": "integer", "minimum": 0, "maximum": 10**8}},
          "required": ["city", "population"], "additionalProperties": False}


def parse(*argv):
    return build_parser().parse_args(list(argv))


def test_flags_become_structured_outputs(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    [schema] = build_params(args := parse("generate", "x", "--json-schema", str(path)), load_requests(args))
    assert schema.structured_outputs.json_schema == SCHEMA
    [regex] = build_params(args := parse("generate", "x", "--regex", "[0-9]+"), load_requests(args))
    assert regex.structured_outputs.regex == "[0-9]+"
    [choice] = build_params(args := parse("generate", "x", "--choice", "yes", "--choice", "no"), load_requests(args))
    assert choice.structured_outputs.choice == ("yes", "no")
    [plain] = build_params(args := parse("generate", "x"), load_requests(args))
    assert plain.structured_outputs is None


def test_per_request_override_and_bad_spec_name_the_field(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": "a", "sampling_params": {"structured_outputs": {"choice": ["x"]}}})
                       + "\n" + json.dumps({"prompt": "b"}) + "\n")
    args = parse("generate", "--prompts-file", str(prompts), "--regex", "[a-z]")
    first, second = build_params(args, load_requests(args))
    assert first.structured_outputs.choice == ("x",) and second.structured_outputs.regex == "[a-z]"
    prompts.write_text(json.dumps({"prompt": "a", "sampling_params": {"structured_outputs": {"regex": 3}}}) + "\n")
    with pytest.raises(ValueError, match=r"request 0 sampling_params: structured_outputs\.regex"):
        build_params(args, load_requests(args))


@pytest.mark.parametrize("content,message", [
    ("{not json", r"argument --json-schema: \S+ is not JSON"),
    ("[1, 2]", r"argument --json-schema: \S+ must hold a JSON object, got an array"),
    (None, r"argument --json-schema: cannot read"),
])
def test_bad_schema_files_are_clean_errors(tmp_path, capsys, content, message):
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exc:
        parse("generate", "x", "--json-schema", str(path))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and re.search(message, err) and "--json-schema: --json-schema" not in err


@pytest.mark.parametrize("argv,message", [
    (["--regex", "(ab"], r"^deepinfer: error: --regex: regex: .*unclosed group"),
    (["--choice", "a", "--choice", ""], r"^deepinfer: error: structured_outputs\.choice"),
])
def test_bad_structured_flags_fail_before_the_model_loads(monkeypatch, capsys, argv, message):
    pytest.importorskip("llguidance")
    import deepinfer_core

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(deepinfer_core, "LLM", no_load)
    assert main(["generate", "x", *argv]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "\n" not in err.strip(), err


def test_a_flag_every_request_overrides_is_not_checked(tmp_path):
    """`--regex '(ab'` with a prompts file whose every request sets its own constraint (or none):
    the flag applies to no request, so it fails nothing; one request without its own fails early."""
    pytest.importorskip("llguidance")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": "a", "sampling_params": {"structured_outputs": {"choice": ["x"]}}}) + "\n"
                       + json.dumps({"prompt": "b", "sampling_params": {"structured_outputs": None}}) + "\n")
    args = parse("generate", "--prompts-file", str(prompts), "--regex", "(ab")
    first, second = build_params(args, load_requests(args))
    assert first.structured_outputs.choice == ("x",) and second.structured_outputs is None
    prompts.write_text(prompts.read_text() + json.dumps({"prompt": "c"}) + "\n")
    args = parse("generate", "--prompts-file", str(prompts), "--regex", "(ab")
    with pytest.raises(ValueError, match=r"^--regex: regex: "):
        build_params(args, load_requests(args))


def test_json_schema_keyword_the_backend_cannot_enforce_fails_before_loading(tmp_path, monkeypatch, capsys):
    pytest.importorskip("llguidance")
    import deepinfer_core

    monkeypatch.setattr(deepinfer_core, "LLM", lambda *a, **k: pytest.fail("the model was loaded"))
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"type": "array", "uniqueItems": True}))
    assert main(["generate", "x", "--json-schema", str(path)]) == 2
    assert re.search(r"--json-schema: json_schema: unsupported keyword\(s\) \[\"uniqueItems\"\]",
                     capsys.readouterr().err)


def test_structured_flags_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        parse("generate", "x", "--regex", "a", "--choice", "b")
    assert "not allowed with" in capsys.readouterr().err


def test_generate_with_json_schema_on_smollm2(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("llguidance")
    from deepinfer_core.assets import default_model_path

    try:
        default_model_path()
    except RuntimeError as exc:  # no registry access
        pytest.skip(f"SmolLM2 GGUF unavailable: {exc}")
    schema_path, out = tmp_path / "schema.json", tmp_path / "out.jsonl"
    schema_path.write_text(json.dumps(SCHEMA))
    code = main(["generate", "--chat", "Describe Paris as JSON.", "--json-schema", str(schema_path),
                 "--max-tokens", "48", "--max-model-len", "256", "--kv-cache-memory", "32MiB", "--output", str(out)])
    assert code == 0
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["error"] is None and row["outputs"][0]["finish_reason"] == "stop", row
    jsonschema.validate(json.loads(row["outputs"][0]["text"]), SCHEMA)


def _result(text, finish, error=None):
    from types import SimpleNamespace

    return SimpleNamespace(request_id="r", prompt_token_ids=[1, 2], error=error,
                           outputs=[SimpleNamespace(text=text, token_ids=[5] * len(text), finish_reason=finish)])


def test_report_warns_about_cut_structured_outputs_and_skips_throughput_when_all_failed():
    import io

    from rich.console import Console

    from deepinfer_cli.commands.generate import report

    def printed(results, structured):
        console = Console(file=io.StringIO(), width=60)
        report(console, results, 1.0, None, structured)
        return console.file.getvalue()

    text = printed([_result('{"zip":1111', "length"), _result("ok", "stop"), _result("x", "length")],
                   [True, True, False])
    assert "request 0: 1 output(s) stopped at the token limit" in text
    assert "request 1:" not in text and "request 2:" not in text and "throughput:" in text
    failed = printed([_result("", "error", 'regex: cannot compile: at 1(8): invalid regex "(" ' + "x" * 80)], [True])
    assert "throughput:" not in failed and "warning" not in failed
    assert any("invalid regex" in line and "x" * 80 in line for line in failed.splitlines())   # one line, not wrapped

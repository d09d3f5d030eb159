# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""tools/test_summary.py counts the same cases as pytest's own closing line.

A synthetic test file with passing, failing, erroring, skipped and xfailed cases runs in a
pytest subprocess that writes JUnit XML; the summary of a synthetic Build Event Protocol
stream pointing at that XML must match pytest's own counts.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

_SAMPLE = '''
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup fails")

def test_ok(): pass
@pytest.mark.parametrize("x", [1, 2, 3])
def test_param(x): assert x != 2
def test_error(broken): pass
def test_skip(): pytest.skip("no")
@pytest.mark.xfail(strict=True)
def test_xfail(): assert False
'''


@pytest.fixture(scope="module")
def summary():
    spec = importlib.util.spec_from_file_location("test_summary", ROOT / "tools" / "test_summary.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _pytest_counts(tmp_path: Path) -> tuple[dict[str, int], Path]:
    (tmp_path / "test_sample.py").write_text(_SAMPLE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    xml = tmp_path / "out.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-c", "pytest.ini",
         f"--junitxml={xml}", "test_sample.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )
    closing = proc.stdout.strip().splitlines()[-1]  # e.g. "1 failed, 3 passed, ... in 0.1s"
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", closing)}
    return counts, xml


def _bep(label: str, status: str, xml: Path | None) -> str:
    outputs = [{"name": "test.xml", "uri": xml.as_uri()}] if xml else []
    return json.dumps({
        "id": {"testResult": {"label": label, "run": 1, "shard": 1, "attempt": 1}},
        "testResult": {"status": status, "testActionOutput": outputs},
    })


def test_counts_match_pytest(summary, tmp_path):
    expected, xml = _pytest_counts(tmp_path)
    total, failing = summary.summarize([_bep("//pkg:test_sample", "FAILED", xml)])
    assert total.passed == expected.get("passed", 0)
    assert total.failed == expected.get("failed", 0) + expected.get("error", 0)
    assert total.skipped == expected.get("skipped", 0) + expected.get("xfailed", 0)
    assert failing == ["//pkg:test_sample"]


def test_target_without_cases_counts_as_one_failure(summary):
    lines = [
        _bep("//pkg:test_crash", "FAILED", None),
        json.dumps({"id": {"targetConfigured": {"label": "//pkg:test_unbuilt"}},
                    "configured": {"targetKind": "py_test rule", "testSize": "MEDIUM"}}),
        json.dumps({"id": {"targetConfigured": {"label": "//pkg:lib"}},
                    "configured": {"targetKind": "py_library rule"}}),
        json.dumps({"id": {"targetConfigured": {"label": "//pkg:test_broken"}}, "aborted": {}}),
    ]
    total, failing = summary.summarize(lines)
    assert (total.passed, total.failed) == (0, 3)
    assert failing == ["//pkg:test_crash", "//pkg:test_broken (did not run)", "//pkg:test_unbuilt (did not run)"]


def test_closing_line_reports_bazel_failure(summary, tmp_path, capsys):
    bep = tmp_path / "bep.json"
    bep.write_text("")
    assert summary.main(["--bazel-exit", "1", str(bep)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "0 passed, 1 failed"

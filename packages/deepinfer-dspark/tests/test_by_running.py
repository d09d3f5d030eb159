# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/by_running.py`: decode steps split by requests running and kind, on a hand-made log."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys

import pytest


@pytest.fixture
def by_running(benchmark_script):
    return benchmark_script("by_running")


def step(engine, running, ms, emitted, kind="plain", prefill=0, concurrency=4):
    return dict(engine=engine, concurrency=concurrency, round=0, step=0, running=running, kind=kind, ms=ms,
                emitted=emitted, prefill_tokens=prefill)


def rows():
    return [step("none", 4, 10.0, 0, prefill=40),                       # prefill: left out
            step("none", 4, 1.0, 4), step("none", 4, 1.0, 4), step("none", 2, 1.0, 2),
            step("fixed-7", 4, 3.0, 14, kind="drafted"), step("fixed-7", 4, 5.0, 6, kind="drafted+flush"),
            step("fixed-7", 1, 1.0, 1), step("fixed-7", 1, 2.5, 2, kind="lookup"),
            step("fixed-7", 4, 9.0, 99, kind="drafted", concurrency=8)]   # another concurrency: left out


def test_cells_sum_steps_ms_and_tokens_by_running_and_kind(by_running) -> None:
    cells = by_running.by_running(rows(), 4)
    assert cells[("none", 4, "plain")] == {"steps": 2, "ms": 2.0, "tokens": 8, "per_ms": 4.0}
    assert cells[("fixed-7", 4, "drafted")] == {"steps": 2, "ms": 8.0, "tokens": 20, "per_ms": 2.5}
    assert cells[("fixed-7", 1, "drafted")]["per_ms"] == pytest.approx(0.8)   # a lookup round counts as drafted
    assert cells[("fixed-7", 1, "plain")]["per_ms"] == pytest.approx(1.0)
    assert ("fixed-7", 4, "plain") not in cells and len(cells) == 5


def test_table_lists_each_running_count_with_the_baseline(by_running) -> None:
    lines = by_running.table(by_running.by_running(rows(), 4), ["fixed-7"], "none", 4)
    assert len(lines) == 4   # header, rule, n = 1 and n = 4 (no steps at 2-3)
    assert lines[2] == "| fixed-7 | 1 | 1 | 1.00 | 1.00 | 1 | 2.50 | 0.80 |  |"
    assert lines[3] == "| fixed-7 | 4 | 0 |  |  | 2 | 8.00 | 2.50 | 4.00 |"


def test_cli_reads_xz_and_names_a_missing_concurrency(by_running, tmp_path) -> None:
    log = tmp_path / "steps.jsonl.xz"
    with lzma.open(log, "wt") as f:
        f.write("\n".join(json.dumps(r) for r in rows()) + "\n")
    script = by_running.__file__
    ok = subprocess.run([sys.executable, script, str(log), "--concurrency", "4"], capture_output=True, text=True,
                        cwd=str(tmp_path), check=False)
    assert ok.returncode == 0, ok.stderr
    assert "| fixed-7 | 4 | 0 |  |  | 2 | 8.00 | 2.50 | 4.00 |" in ok.stdout
    bad = subprocess.run([sys.executable, script, str(log), "--concurrency", "3"], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2 and "--concurrency: no decode steps at 3" in bad.stderr


def test_verified_split_takes_drafted_rounds_inside_runs_at_the_full_batch(by_running) -> None:
    def r(step, kind, ms, verified=0, accepted=0, running=2, rnd=0, prefill=0):
        return dict(engine="c", concurrency=2, round=rnd, step=step, running=running, kind=kind, ms=ms,
                    emitted=accepted + running if kind != "plain" else running, verified=verified,
                    accepted=accepted, prefill_tokens=prefill)
    rows = [r(0, "plain", 1.0), r(1, "drafted", 3.0, 14, 6),        # after a plain step: not in a run
            r(2, "drafted", 3.0, 14, 6), r(3, "drafted", 2.0, 9, 3),  # full, short
            r(4, "drafted+flush", 5.0, 14, 6), r(5, "drafted", 4.0, 14, 2),   # after a flush round: not in a run
            r(6, "drafted", 4.0, 8, 2, running=1),                     # one request running: left out
            r(0, "drafted", 3.0, 14, 6, rnd=1)]                        # a call's first step: left out
    split = by_running.verified_split(rows, 2, "c", 7)
    assert split["full"] == {"rounds": 1, "verified": 14.0, "accepted": 6.0, "median_ms": 3.0, "per_ms": 8 / 3}
    assert split["short"] == {"rounds": 1, "verified": 9.0, "accepted": 3.0, "median_ms": 2.0, "per_ms": 2.5}
    assert by_running.verified_split(rows, 2, "other", 7) == {}


def drained_rows() -> list[dict]:
    """Plain decoding runs both requests to the end at 2 tokens per ms; `spec` makes 6 tokens in a
    2 ms round at 2 running (3 per ms: its step beats the baseline's), then its second request
    runs alone at 1 token per ms (the baseline's one-request rate, from its calls at concurrency 1)."""
    rows = [step("none", 2, 1.0, 0, prefill=30, concurrency=2)] + [step("none", 2, 1.0, 2, concurrency=2)] * 4
    rows += [step("none", 1, 1.0, 1, concurrency=1)] * 2 + [step("none", 1, 1.0, 1, concurrency=1)]
    rows += [step("spec", 2, 1.0, 0, prefill=30, concurrency=2), step("spec", 2, 2.0, 6, kind="drafted", concurrency=2),
             step("spec", 1, 1.0, 1, concurrency=2), step("spec", 1, 1.0, 1, concurrency=2)]
    return rows


def test_drain_split_separates_the_running_counts_from_the_steps(by_running) -> None:
    split = by_running.drain_split(drained_rows(), 2, "spec", "none")
    # 5 ms each; at the baseline's rates the spec engine's tokens take 6 / 2 + 2 / 1 ms, and 1 of prefill
    assert split == {"calls": 1, "over": 0.0, "composition": pytest.approx(1.0), "steps": pytest.approx(-1.0)}
    rows = drained_rows() + [dict(step("spec", 2, 1.0, 2, concurrency=2), round=1)]
    assert by_running.drain_split(rows, 2, "spec", "none") is None   # a call the baseline did not run
    rows = [r for r in drained_rows() if not (r["engine"] == "none" and r["running"] == 1)]
    assert by_running.drain_split(rows, 2, "spec", "none") is None   # no baseline rate at one request


def test_cli_prints_the_split(by_running, tmp_path) -> None:
    log = tmp_path / "steps.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in drained_rows()) + "\n")
    out = subprocess.run([sys.executable, by_running.__file__, str(log), "--concurrency", "2", "--split"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "| spec | 1 | +0 | +1 | -1 |" in out.stdout


def test_a_prefill_step_carrying_decode_tokens_is_priced_as_a_step(by_running) -> None:
    """In a closed loop a step with prefill tokens also decodes (and may verify drafts): its
    tokens are priced at the baseline's rate, the baseline's own prefill time is the reference,
    and what the engine's prefill step costs beyond both is the steps' (session 48's review: it
    all went to the composition)."""
    rows = [step("none", 2, 1.0, 0, prefill=30, concurrency=2)] + [step("none", 2, 1.0, 2, concurrency=2)] * 4
    rows += [step("spec", 2, 3.0, 4, prefill=30, concurrency=2)] + [step("spec", 2, 1.0, 2, concurrency=2)] * 2
    split = by_running.drain_split(rows, 2, "spec", "none")
    # none: 5 ms. spec: 5 ms, its 8 tokens at 2 per ms = 4 ms plus none's 1 ms of prefill: 0 composition
    assert split == {"calls": 1, "over": 0.0, "composition": pytest.approx(0.0), "steps": pytest.approx(0.0)}
    rows[5] = step("spec", 2, 4.0, 4, prefill=30, concurrency=2)   # a dearer prefill step: the steps' cost
    split = by_running.drain_split(rows, 2, "spec", "none")
    assert split["over"] == pytest.approx(1.0) and split["steps"] == pytest.approx(1.0)

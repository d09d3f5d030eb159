# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The training benchmarks' scripts on a tiny target (CPU): `random_target.py` writes weights
transformers loads for a folder that holds only a config, and `train_step_profile.py` times each
phase of real `DraftTrainer` steps."""

from __future__ import annotations

import json
import re
import shutil
import sys

import pytest

from deepinfer_dspark.train.features import load_hf_target
from deepinfer_dspark.train.tiny import build_tiny_target


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return build_tiny_target(tmp_path_factory.mktemp("tiny-target"), seed=0)


def test_random_target_writes_loadable_weights(benchmark_script, tiny_folder, tmp_path, monkeypatch) -> None:
    shape = tmp_path / "shape"
    shape.mkdir()
    shutil.copy(tiny_folder / "config.json", shape / "config.json")
    script = benchmark_script("random_target")
    monkeypatch.setattr(sys, "argv", ["random_target.py", str(shape), "--seed", "3"])
    script.main()
    model = load_hf_target(shape)
    config = json.loads((shape / "config.json").read_text())
    assert model.config.num_hidden_layers == config["num_hidden_layers"]
    weights = [p for p in model.parameters()]
    assert all(bool(p.isfinite().all()) for p in weights) and any(float(p.std()) > 0 for p in weights)
    monkeypatch.setattr(sys, "argv", ["random_target.py", str(tmp_path / "missing")])
    with pytest.raises(SystemExit):
        script.main()


def test_train_step_profile_times_every_phase(benchmark_script, tiny_folder, monkeypatch, capsys) -> None:
    script = benchmark_script("train_step_profile")
    monkeypatch.setattr(sys, "argv", ["train_step_profile.py", "--target", str(tiny_folder), "--device", "cpu",
                                      "--batch-size", "2", "--anchors", "3", "--block-size", "3",
                                      "--prompt-min", "4", "--prompt-max", "8", "--reply", "12", "--steps", "2"])
    script.main()
    out = capsys.readouterr().out
    phases = dict(re.findall(r"^\s+(\w+)\s+([\d.]+) ms", out, flags=re.M))
    assert set(phases) == set(script.PHASES), out
    assert float(phases["target"]) > 0 and float(phases["backward"]) > 0
    assert "target cache: filled" in out
    assert "attention: grouped" in out
    argv = sys.argv + ["--no-cache", "--per-block"]
    monkeypatch.setattr(sys, "argv", argv)
    script.main()
    out = capsys.readouterr().out
    assert "target cache: off" in out and "attention: per block" in out

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer-dspark train | calibrate` on a tiny random target (stdlib docstring prompts)."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import pytest

from deepinfer_dspark import SequentialTemperatureScaling, load_checkpoint
from deepinfer_dspark.train.cli import main
from deepinfer_dspark.train.tiny import build_tiny_target

SMALL = ["--num-prompts", "6", "--max-prompt-chars", "100", "--max-new-tokens", "16", "--device", "cpu"]


def test_console_script_is_registered() -> None:
    scripts = entry_points(group="console_scripts", name="deepinfer-dspark")
    assert [e.value for e in scripts] == ["deepinfer_dspark.train.cli:main"]


def test_train_then_calibrate(tmp_path) -> None:
    target = build_tiny_target(tmp_path / "target")
    out = tmp_path / "drafter"
    main(["train", "--target", str(target), "--out", str(out), *SMALL, "--num-calibration-prompts", "3",
          "--steps", "4", "--log-every", "2", "--layers", "1", "--block-size", "4", "--markov-rank", "16",
          "--target-layer-ids", "0,2", "--batch-size", "3", "--anchors", "8", "--calibration-anchors", "4"])
    assert sorted(p.name for p in out.iterdir()) == ["calibration.json", "config.json", "model.safetensors",
                                                     "training.json"]
    report = json.loads((out / "training.json").read_text())
    assert [e["step"] for e in report["history"]] == [2, 4]
    assert report["num_train_sequences"] == 6 and report["num_held_out_sequences"] == 3 and report["target_cache"]
    assert report["calibration"]["rollouts"] > 0
    drafter = load_checkpoint(out)
    assert drafter.config.target_layer_ids == (0, 2) and drafter.config.block_size == 4
    first = SequentialTemperatureScaling.load(out / "calibration.json")
    assert len(first.temperatures) == 4

    (out / "calibration.json").unlink()
    main(["calibrate", "--drafter", str(out), "--num-prompts", "2", "--max-prompt-chars", "100",
          "--max-new-tokens", "16", "--anchors", "4", "--device", "cpu"])   # the target: from training.json
    assert len(SequentialTemperatureScaling.load(out / "calibration.json").temperatures) == 4


def test_bad_arguments_fail_before_any_work(tmp_path) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--out", str(tmp_path), "--target-layer-ids", "a,b"])
    with pytest.raises(ValueError, match="steps"):
        main(["train", "--target", str(tmp_path / "none"), "--out", str(tmp_path), "--steps", "-1"])


def test_no_target_cache_runs_the_target_every_step(tmp_path) -> None:
    target = build_tiny_target(tmp_path / "target")
    main(["train", "--target", str(target), "--out", str(tmp_path / "drafter"), *SMALL,
          "--num-calibration-prompts", "0", "--steps", "2", "--log-every", "1", "--layers", "1",
          "--block-size", "4", "--markov-rank", "0", "--target-layer-ids", "0,2", "--batch-size", "3",
          "--anchors", "4", "--no-target-cache"])
    report = json.loads((tmp_path / "drafter" / "training.json").read_text())
    assert report["target_cache"] is False and report["steps_run"] == 2
    assert all(e["loss"] == e["loss"] for e in report["history"])   # finite (not NaN) losses


def test_sampled_training_replies_keep_greedy_held_out_replies(tmp_path, monkeypatch) -> None:
    """`--temperature` samples the training replies only: the held-out replies (STS, held-out
    acceptance) stay greedy unless `--calibration-temperature` says otherwise, so a sampled
    drafter's acceptance compares with a greedy one's."""
    import deepinfer_dspark.train.cli as cli
    asked, real = [], cli.generate_sequences

    def recording(llm, prompts, max_new_tokens, temperature=0.0, **kw):
        asked.append((len(prompts), temperature))
        return real(llm, prompts, max_new_tokens, temperature=temperature, **kw)

    monkeypatch.setattr(cli, "generate_sequences", recording)
    target = build_tiny_target(tmp_path / "target")
    main(["train", "--target", str(target), "--out", str(tmp_path / "drafter"), *SMALL, "--temperature", "0.7",
          "--num-calibration-prompts", "2", "--steps", "1", "--layers", "1", "--block-size", "4",
          "--markov-rank", "0", "--target-layer-ids", "0,2", "--batch-size", "3", "--anchors", "4",
          "--calibration-anchors", "2"])
    assert asked == [(6, 0.7), (2, 0.0)]
    report = json.loads((tmp_path / "drafter" / "training.json").read_text())
    assert report["args"]["temperature"] == 0.7 and report["args"]["calibration_temperature"] == 0.0


@pytest.mark.parametrize("flag", ["--temperature", "--calibration-temperature"])
def test_a_negative_temperature_is_refused_by_name(tmp_path, flag) -> None:
    with pytest.raises(ValueError, match=flag):
        main(["train", "--target", str(tmp_path / "none"), "--out", str(tmp_path), flag, "-0.5"])


def test_prompts_per_docstring_keeps_held_out_docstrings_apart(tmp_path, monkeypatch) -> None:
    """`--prompts-per-docstring K` makes K training prompts of each docstring (each in another
    template); the held-out prompts come from the docstrings after them, one a docstring, as
    `calibrate` rebuilds them from training.json; asking for more docstrings than the standard
    library has, or more templates than there are, is refused by flag name before any work."""
    import deepinfer_dspark.train.cli as cli
    from deepinfer_dspark.train.data import TEMPLATES, stdlib_docstrings

    asked, real = [], cli.generate_sequences

    def recording(llm, prompts, max_new_tokens, temperature=0.0, **kw):
        asked.append(list(prompts))
        return real(llm, prompts, max_new_tokens, temperature=temperature, **kw)

    monkeypatch.setattr(cli, "generate_sequences", recording)
    target = build_tiny_target(tmp_path / "target")
    out = tmp_path / "drafter"
    main(["train", "--target", str(target), "--out", str(out), *SMALL[:1], "7", *SMALL[2:],
          "--prompts-per-docstring", "3", "--num-calibration-prompts", "2", "--steps", "1", "--layers", "1",
          "--block-size", "4", "--markov-rank", "0", "--target-layer-ids", "0,2", "--batch-size", "3",
          "--anchors", "4", "--calibration-anchors", "2"])
    docs = stdlib_docstrings(5, seed=0, max_chars=100)
    train, held = asked
    assert len(train) == 7 and len(set(train)) == 7
    assert {d for d in docs if any(d in p for p in train)} == set(docs[:3])      # 3 docstrings, 3 templates each
    assert held == [TEMPLATES[i % len(TEMPLATES)].format(doc=docs[i]) for i in (3, 4)]
    asked.clear()
    main(["calibrate", "--drafter", str(out), "--num-prompts", "2", "--max-prompt-chars", "100",
          "--max-new-tokens", "16", "--anchors", "2", "--device", "cpu"])
    assert asked == [held]                                                        # the same held-out docstrings
    with pytest.raises(ValueError, match="--num-prompts / --num-calibration-prompts: 100000 training prompts"):
        main(["train", "--target", str(tmp_path / "none"), "--out", str(tmp_path / "x"), "--num-prompts", "100000"])
    with pytest.raises(ValueError, match="--prompts-per-docstring"):
        main(["train", "--target", str(tmp_path / "none"), "--out", str(tmp_path / "x"),
              "--prompts-per-docstring", str(len(TEMPLATES) + 1)])


def test_calibrate_rebuilds_the_held_out_prompts_of_a_run_with_another_seed(tmp_path, monkeypatch) -> None:
    """Without flags `calibrate` reads the training run's seed and docstring cut (training.json),
    so its held-out docstrings are the run's, never trained ones; without a training.json saying
    which docstrings trained the drafter it asks for `--prompt-offset`; a held-out count the
    standard library cannot give is refused naming that flag, without the useless hint."""
    import deepinfer_dspark.train.cli as cli
    from deepinfer_dspark.train.data import stdlib_docstrings

    asked = []

    def stop(args, device, groups, temperatures):
        asked.append(groups)
        raise RuntimeError("stop before loading a model")

    monkeypatch.setattr(cli, "_generate", stop)
    out = tmp_path / "drafter"
    out.mkdir()
    (out / "config.json").write_text("{}")   # (never read: generation stops first)
    run = {"num_prompts": 30, "prompts_per_docstring": 3, "seed": 1, "max_prompt_chars": 200}
    (out / "training.json").write_text(json.dumps({"args": run}))
    with pytest.raises(RuntimeError, match="stop"):
        main(["calibrate", "--drafter", str(out), "--num-prompts", "4", "--device", "cpu"])
    docs = stdlib_docstrings(14, seed=1, max_chars=200)
    assert asked[0][0] == [cli.build_prompts(docs)[i] for i in range(10, 14)]   # past the run's 10 docstrings
    (out / "training.json").write_text(json.dumps({"args": {}}))
    with pytest.raises(ValueError, match="--prompt-offset"):
        main(["calibrate", "--drafter", str(out), "--device", "cpu"])
    with pytest.raises(ValueError, match="--num-calibration-prompts") as err:
        main(["train", "--target", str(tmp_path / "none"), "--out", str(tmp_path / "x"), "--num-prompts", "1",
              "--num-calibration-prompts", "100000"])
    assert "raise --prompts-per-docstring" not in str(err.value)

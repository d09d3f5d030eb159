# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Offline STS calibration of a trained drafter on held-out greedy rollouts.

Each rollout's accepted length is checked against HF transformers' greedy `generate` from the
same prefix; the written `calibration.json` must load in the engine through
`speculative_config["calibration"]` without changing greedy output.
"""

from __future__ import annotations

import pytest
import torch
import transformers

from deepinfer_core import LLM, SamplingParams

from deepinfer_dspark import SequentialTemperatureScaling, load_checkpoint
from deepinfer_dspark.sps import SPSProfile
from deepinfer_dspark.train.calibrate import CALIBRATION_FILE, calibrate_checkpoint, greedy_rollouts
from deepinfer_dspark.train.data import generate_sequences
from deepinfer_dspark.train.features import TargetModel, load_hf_target
from deepinfer_dspark.train.model import drafter_config, init_drafter, save_checkpoint
from deepinfer_dspark.train.tiny import build_tiny_target
from deepinfer_dspark.train.trainer import DraftTrainer, TrainConfig

TRAIN = ["Hello there, how are you?", "Explain lists.", "What is a dict?", "Write code.", "Tell me a story."]
HELD_OUT = ["Sort numbers.", "Name a color.", "Count to ten."]
LAYERS = (0, 2)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = build_tiny_target(tmp_path_factory.mktemp("tiny-target"), seed=3)
    llm = LLM(str(folder), dtype="float32", max_model_len=256)
    train, held_out = generate_sequences(llm, TRAIN, 32), generate_sequences(llm, HELD_OUT, 32)
    target = TargetModel(load_hf_target(folder), LAYERS)
    config = drafter_config(target.config, num_layers=2, block_size=4, target_layer_ids=LAYERS,
                            mask_token_id=256, markov_rank=32)
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight)
    DraftTrainer(drafter, target, train, TrainConfig(steps=50, batch_size=5, anchors_per_sequence=32, lr=1e-2)).train()
    out = save_checkpoint(drafter, config, tmp_path_factory.mktemp("drafter"))
    return folder, train, held_out, target, out


def test_rollout_acceptance_matches_hf_greedy(setup) -> None:
    folder, train, _, target, out = setup
    seqs = train[:3]              # the training replies: where a 50-step drafter gets drafts right
    drafter = load_checkpoint(out)
    rollouts = greedy_rollouts(drafter, target, seqs, 4, anchors_per_sequence=6, seed=1, batch_size=2)
    assert rollouts.confidence_logits.shape == (rollouts.accepted.numel(), 4)
    assert rollouts.accepted.numel() == 3 * 6
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    for n, (seq, s) in enumerate(zip(rollouts.sequence_index.tolist(), rollouts.anchors.tolist())):
        tokens = list(seqs[seq].token_ids[:s + 1])
        with torch.no_grad():
            for _ in range(4):                                    # plain greedy decoding, EOS included
                tokens.append(int(model(input_ids=torch.tensor([tokens])).logits[0, -1].argmax()))
        greedy = tokens[s + 1:]
        drafts = rollouts.drafts[n].tolist()
        expected = next((i for i in range(4) if drafts[i] != greedy[i]), 4)
        assert int(rollouts.accepted[n]) == expected, (seq, s, drafts, greedy)
    assert int(rollouts.accepted.sum()) > 0                    # the trained drafter gets some right


def test_calibration_is_written_and_served(setup) -> None:
    folder, _, held_out, target, out = setup
    report = calibrate_checkpoint(out, load_checkpoint(out), target, held_out, anchors_per_sequence=8)
    path = out / CALIBRATION_FILE
    assert report["path"] == str(path) and path.is_file()
    sts = SequentialTemperatureScaling.load(path)
    assert len(sts.temperatures) == 4 and list(sts.temperatures) == report["temperatures"]
    assert report["ece_calibrated"][0] <= report["ece_raw"][0] + 1e-12   # T_1 minimises position 1's ECE
    prompts = [[{"role": "user", "content": p}] for p in HELD_OUT]
    params = SamplingParams(temperature=0, max_tokens=24)
    kw = dict(dtype="float32", max_model_len=256, deterministic=True)
    expected = [o.outputs[0].token_ids for o in LLM(str(folder), **kw).chat(prompts, params)]
    flat = SPSProfile([1, 64, 256], [1000.0, 990.0, 700.0])
    for extra in ({}, {"scheduling": "confidence", "sps_profile": flat}):
        spec = {"method": "dspark", "model": str(out), "num_speculative_tokens": 4, "calibration": str(path), **extra}
        llm = LLM(str(folder), speculative_config=spec, **kw)
        assert [o.outputs[0].token_ids for o in llm.chat(prompts, params)] == expected
        temps = llm.engine.speculative.proposer.runner.confidence_temperatures
        assert temps.tolist() == pytest.approx(list(sts.temperatures))
        assert llm.engine.speculative.stats.verified > 0


def test_drafter_without_confidence_head_is_rejected(setup) -> None:
    _, _, held_out, target, out = setup
    drafter = load_checkpoint(out)
    drafter.confidence_head = None
    with pytest.raises(ValueError, match="confidence head"):
        greedy_rollouts(drafter, target, held_out, 4)

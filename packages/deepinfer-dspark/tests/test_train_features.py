# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""TargetModel features and logits against HF transformers' own `hidden_states` and logits.

Feature layer i is HF `hidden_states[i + 1]` (-1: the embedding output), concatenated in
`target_layer_ids` order (DeepSpec convention, docs/dspark.md section 1.1); a right-padded batch
must give every sequence the values it gets alone.
"""

from __future__ import annotations

import pytest
import torch
import transformers

from deepinfer_dspark.train.blocks import pad_batch
from deepinfer_dspark.train.features import (TargetModel, check_target_layer_ids, default_target_layer_ids,
                                             load_hf_target)
from deepinfer_dspark.train.tiny import build_tiny_target

LAYERS = (-1, 0, 2)


@pytest.fixture(scope="module")
def target_folder(tmp_path_factory):
    return build_tiny_target(tmp_path_factory.mktemp("tiny-target"), seed=1)


@pytest.fixture(scope="module")
def hf_model(target_folder):
    return transformers.AutoModelForCausalLM.from_pretrained(str(target_folder), dtype=torch.float32).eval()


def random_sequences(seed: int, lengths=(9, 23, 16)) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 259, (n,), generator=gen).tolist() for n in lengths]


def test_features_and_logits_match_hf_per_sequence(target_folder, hf_model) -> None:
    target = TargetModel(load_hf_target(target_folder), LAYERS)
    seqs = random_sequences(0)
    ids, lengths = pad_batch(seqs, pad_id=7)
    out = target(ids)
    d = target.hidden_size
    assert out.features.shape == (3, max(lengths), len(LAYERS) * d)
    with torch.no_grad():
        for b, seq in enumerate(seqs):
            ref = hf_model(input_ids=torch.tensor([seq]), output_hidden_states=True)
            n = len(seq)
            for j, layer in enumerate(LAYERS):
                torch.testing.assert_close(out.features[b, :n, j * d:(j + 1) * d], ref.hidden_states[layer + 1][0],
                                           rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(out.logits[b, :n], ref.logits[0], rtol=1e-4, atol=1e-4)


def test_features_equal_hf_on_the_same_batch_exactly(target_folder, hf_model) -> None:
    target = TargetModel(load_hf_target(target_folder), LAYERS)
    ids, _ = pad_batch(random_sequences(1))
    out = target(ids)
    with torch.no_grad():
        ref = hf_model(input_ids=ids, output_hidden_states=True)
    expected = torch.cat([ref.hidden_states[i + 1] for i in LAYERS], dim=-1)
    assert torch.equal(out.features, expected)
    assert torch.equal(out.logits, ref.logits)


def test_embedding_and_head_are_the_models(target_folder, hf_model) -> None:
    target = TargetModel(load_hf_target(target_folder), (0,))
    assert torch.equal(target.embed_weight, hf_model.model.embed_tokens.weight)
    assert torch.equal(target.lm_head_weight, hf_model.lm_head.weight)
    assert target.config["num_hidden_layers"] == 4 and "quantization_config" not in target.config


def test_default_layer_ids_follow_deepspec() -> None:
    # DeepSpec's released configs (docs/dspark.md, table in section 1.1).
    assert default_target_layer_ids(36) == (1, 9, 17, 25, 33)
    assert default_target_layer_ids(40) == (1, 10, 19, 28, 37)
    for layers in range(2, 64):
        ids = default_target_layer_ids(layers)
        assert check_target_layer_ids(ids, layers) == ids


def test_bad_layer_ids_and_inputs_raise(target_folder) -> None:
    model = load_hf_target(target_folder)
    with pytest.raises(ValueError, match="target_layer_ids"):
        TargetModel(model, (0, 3))                  # layer 3 is the last of 4: final-normed by HF
    with pytest.raises(ValueError, match="target_layer_ids"):
        TargetModel(model, (2, 1))
    with pytest.raises(ValueError, match="target_layer_ids"):
        TargetModel(model, (-2, 0))
    target = TargetModel(model, (0,))
    with pytest.raises(ValueError, match="token_ids"):
        target(torch.tensor([[1, 2, 259]]))
    with pytest.raises(ValueError, match="token_ids"):
        target(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="target"):
        load_hf_target(target_folder / "missing.gguf")

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Shared helpers: a tiny DeepSpec-format DSpark config and random state dict, and a tiny target
with a random drafter for engine tests (`folders`, `kit`).

The key names and shapes below are transcribed from the DeepSpec checkpoint table (the
`Qwen3DSparkModel` save format, docs/dspark.md section 5), independently of
`deepinfer_dspark.checkpoint`, so the loader is checked against the published format.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import types
from pathlib import Path

import pytest
import torch

TINY = {
    "architectures": ["Qwen3DSparkModel"],
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 512,
    "vocab_size": 128,
    "hidden_act": "silu",
    "attention_bias": False,
    "tie_word_embeddings": False,
    "num_target_layers": 6,
    "block_size": 4,
    "mask_token_id": 127,
    "target_layer_ids": [0, 2, 4],
    "num_anchors": 512,
    "enable_confidence_head": True,
    "confidence_head_with_markov": True,
    "markov_rank": 16,
    "markov_head_type": "vanilla",
    "layer_types": ["full_attention", "full_attention"],
}


def tiny_config(**overrides) -> dict:
    """The tiny DeepSpec `config.json` dict (d = 64, 2 layers, V = 128, r = 16, block 4)."""
    return {**TINY, **overrides}


def deepspec_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """Checkpoint key -> shape, per the DeepSpec table."""
    d, r, v = config["hidden_size"], config["markov_rank"], config["vocab_size"]
    heads, kv, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    inter, m = config["intermediate_size"], len(config["target_layer_ids"])
    shapes = {"embed_tokens.weight": (v, d), "lm_head.weight": (v, d), "norm.weight": (d,),
              "hidden_norm.weight": (d,), "fc.weight": (d, m * d)}
    for i in range(config["num_hidden_layers"]):
        p = f"layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (heads * hd, d), p + "self_attn.k_proj.weight": (kv * hd, d),
            p + "self_attn.v_proj.weight": (kv * hd, d), p + "self_attn.o_proj.weight": (d, heads * hd),
            p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
            p + "mlp.gate_proj.weight": (inter, d), p + "mlp.up_proj.weight": (inter, d),
            p + "mlp.down_proj.weight": (d, inter),
        })
    if r > 0:
        shapes["markov_head.markov_w1.weight"] = (v, r)
        shapes["markov_head.markov_w2.weight"] = (v, r)
        if config["markov_head_type"] == "gated":
            shapes["markov_head.gate_proj.weight"] = (r, d + r)
            shapes["markov_head.gate_proj.bias"] = (r,)
        if config["markov_head_type"] == "rnn":
            shapes["markov_head.joint_proj.weight"] = (3 * r, 2 * r + d)
            shapes["markov_head.joint_proj.bias"] = (3 * r,)
    if config["enable_confidence_head"]:
        width = d + r if config["confidence_head_with_markov"] else d
        shapes["confidence_head.proj.weight"] = (1, width)
        shapes["confidence_head.proj.bias"] = (1,)
    return shapes


def random_state_dict(config: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random non-zero float32 tensors for every DeepSpec key (norm weights near 1)."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for key, shape in deepspec_shapes(config).items():
        noise = torch.randn(shape, generator=gen, dtype=torch.float64)
        if key.endswith("norm.weight"):
            value = 1.0 + 0.2 * noise
        elif key.endswith(".bias"):
            value = 0.3 * noise
        elif key in ("embed_tokens.weight", "markov_head.markov_w1.weight"):
            value = noise
        else:
            value = noise / math.sqrt(shape[-1])
        state[key] = value.float()
    return state


@pytest.fixture
def tiny() -> tuple:
    """`(tiny_config, deepspec_shapes, random_state_dict)` helpers for the test modules."""
    return tiny_config, deepspec_shapes, random_state_dict


class FakeDraftRunner:
    """A stand-in for `DSparkDraftRunner` in proposer tests: drafts k copies of token 7 with the
    given confidences (one float for every position, or one per position) and holds every
    position it was shown."""

    def __init__(self, block_size: int, confidences: float | list[float]) -> None:
        self.drafter = types.SimpleNamespace(config=types.SimpleNamespace(block_size=block_size, target_layer_ids=[1]),
                                             dtype=torch.float32)
        self.confidences = confidences if isinstance(confidences, list) else [confidences] * block_size
        self.held: dict[str, int] = {}

    def num_positions(self, request_id: str) -> int:
        return self.held.get(request_id, 0)

    def observe_rows(self, items, features) -> None:
        for request_id, positions in items:
            self.held[request_id] = positions[-1] + 1

    def observe_batch(self, items) -> None:
        self.observe_rows([(r, p) for r, p, _ in items], None)

    def draft(self, requests, k: int, while_running=None) -> list:
        if while_running is not None:   # (`DSparkDraftRunner.draft`'s hook: nothing runs on a device here)
            while_running()
        from deepinfer_dspark.draft_runner import DraftOutput
        return [DraftOutput(torch.full((k,), 7), None, torch.tensor(self.confidences[:k]), None) for _ in requests]

    def remove(self, request_id: str) -> None:
        self.held.pop(request_id, None)


@pytest.fixture
def fake_runner() -> type:
    """The `FakeDraftRunner` class, for the proposer tests."""
    return FakeDraftRunner


ENGINE_VOCAB = 128
ENGINE_TARGET = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": ENGINE_VOCAB,
                 "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                 "max_position_embeddings": 512, "tie_word_embeddings": False, "eos_token_id": ENGINE_VOCAB - 1,
                 "bos_token_id": ENGINE_VOCAB - 2, "torch_dtype": "float32"}


@pytest.fixture
def folders(tmp_path, tiny) -> tuple:
    """`(target, drafter)` folders: a 4-layer Qwen3 target config (built with dummy weights) and
    a random tiny drafter reading its layers 0 and 2, sharing its embedding and LM head."""
    from safetensors.torch import save_file

    tiny_config, _, random_state_dict = tiny
    target = tmp_path / "target"
    drafter = tmp_path / "drafter"
    target.mkdir()
    drafter.mkdir()
    (target / "config.json").write_text(json.dumps(ENGINE_TARGET))
    config = tiny_config(vocab_size=ENGINE_VOCAB, num_target_layers=4, target_layer_ids=[0, 2],
                         mask_token_id=ENGINE_VOCAB - 3)
    state = random_state_dict(config, seed=3)
    del state["embed_tokens.weight"], state["lm_head.weight"]  # shared with the target, as DeepSpec allows
    (drafter / "config.json").write_text(json.dumps(config))
    save_file(state, str(drafter / "model.safetensors"))
    return target, drafter


class EngineKit:
    """Engine helpers for the `folders` target: `build` (fp32, deterministic, dummy weights),
    `prompts` (repeated motifs, so n-gram lookup finds something) and `greedy` (24 tokens each)."""

    vocab = ENGINE_VOCAB

    @staticmethod
    def build(target, spec=None, **kw):
        from deepinfer_core import LLM

        args = dict(load_format="dummy", dtype="float32", max_model_len=160, block_size=4,
                    kv_cache_memory=32 << 20, deterministic=True, seed=11)
        args.update(kw)
        return LLM(str(target), speculative_config=spec, **args)

    @staticmethod
    def confidence_spec(drafter) -> dict:
        """Confidence scheduling over the `folders` drafter with both profiles (k = 4)."""
        from deepinfer_dspark.sps import SPSProfile

        return {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
                "sps_profile": SPSProfile([1, 64], [1000.0, 200.0]),
                "decode_profile": SPSProfile([1, 8], [500.0, 450.0])}

    @staticmethod
    def dspark_proposer(target, spec, **kw):
        """The engine's DSpark proposer (inside the prompt-lookup wrapper, if any), built by `build`."""
        proposer = EngineKit.build(target, spec, **kw).engine.speculative.proposer
        return getattr(proposer, "inner", proposer)

    @staticmethod
    def rejects_bool_key(target, drafter, key: str, bad=("yes", 1)) -> None:
        """A confidence-only boolean `speculative_config` key: each `bad` value is rejected by name,
        and so is the key (True) without confidence scheduling."""
        spec = EngineKit.confidence_spec(drafter)
        for value in bad:
            with pytest.raises(ValueError, match=f"speculative_config.{key}"):
                EngineKit.build(target, {**spec, key: value})
        with pytest.raises(ValueError, match=f"speculative_config.{key}"):
            EngineKit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, key: True})

    @staticmethod
    def prompts(count: int, seed: int) -> list[list[int]]:
        rng = random.Random(seed)
        out = []
        for _ in range(count):
            motif = [rng.randrange(ENGINE_VOCAB - 3) for _ in range(rng.randint(2, 5))]
            out.append((motif * 8)[: rng.randint(6, 40)])
        return out

    @staticmethod
    def greedy(llm, batch: list[list[int]]) -> list[list[int]]:
        from deepinfer_core import SamplingParams

        outs = llm.generate([{"prompt_token_ids": p} for p in batch],
                            SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))
        assert all(o.error is None for o in outs)
        return [o.outputs[0].token_ids for o in outs]


@pytest.fixture
def kit() -> type:
    """The `EngineKit` class (engine tests on the `folders` target)."""
    return EngineKit


@pytest.fixture
def benchmark_script():
    """Loads a script of `benchmarks/` by name (e.g. "profile_diff") as a module, for its tests."""
    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load

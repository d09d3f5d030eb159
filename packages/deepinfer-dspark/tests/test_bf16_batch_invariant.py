# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Greedy speculative decoding in bfloat16 with batch-invariant kernels (`deterministic=True`)
writes plain decoding's replies, token for token, on the real SmolLM2-135M-Instruct.

Without them a verification's shapes (k + 1 tokens a request) round differently from a decode
step's, and near-ties send replies elsewhere: on this repository's CPU, fixed-7's bfloat16
replies to 6 docstring chats left plain decoding's in 5, from token 1 to 66 (session 24,
BENCHMARKS.md); the H200 benchmark compared such different texts at 1 request. Here the drafter
has random weights (its drafts are almost all rejected, so most rounds verify and reject), for
fixed-length and for confidence-scheduled rounds verifying 3-7 drafts.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
from deepinfer_core import LLM, SamplingParams

from deepinfer_dspark.sps import SPSProfile

DRAFTER_CONFIG = "benchmarks/smollm2_drafter/config.json"


@pytest.fixture(scope="module")
def gguf_path():
    from deepinfer_core.assets import default_model_path

    try:
        return default_model_path()
    except RuntimeError as exc:  # no registry access
        pytest.skip(f"SmolLM2 GGUF unavailable: {exc}")


@pytest.fixture
def drafter(tmp_path, tiny):
    """A random one-layer drafter of SmolLM2's shape (embedding and LM head shared with the target)."""
    from pathlib import Path

    from safetensors.torch import save_file

    _, _, random_state_dict = tiny
    config = json.loads((Path(__file__).resolve().parents[1] / DRAFTER_CONFIG).read_text())
    config.update(num_hidden_layers=1, layer_types=["full_attention"], markov_rank=16)
    state = random_state_dict(config, seed=5)
    del state["embed_tokens.weight"], state["lm_head.weight"]
    folder = tmp_path / "smollm2-drafter"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    save_file(state, str(folder / "model.safetensors"))
    return folder


def _replies(gguf_path, spec, chats, deterministic: bool = True) -> list[list[int]]:
    llm = LLM(str(gguf_path), speculative_config=spec, dtype="bfloat16", deterministic=deterministic, max_model_len=512,
              kv_cache_memory=128 << 20, max_num_seqs=4)
    try:
        outs = llm.chat(chats, SamplingParams(temperature=0, max_tokens=32))
        assert all(o.error is None for o in outs)
        return [o.outputs[0].token_ids for o in outs]
    finally:
        llm.close()


def test_bfloat16_speculative_replies_equal_plain_decoding(gguf_path, drafter) -> None:
    from deepinfer_dspark.train.data import build_prompts, stdlib_docstrings

    chats = [[{"role": "user", "content": p}] for p in build_prompts(stdlib_docstrings(6, seed=12345))]
    chats = [chats[i] for i in (3, 4)]   # left plain decoding's at tokens 1 and 22 without invariance
    plain = _replies(gguf_path, None, chats)
    assert all(len(r) >= 20 for r in plain)
    fixed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 7}
    assert _replies(gguf_path, fixed, chats) == plain
    scheduled = {**fixed, "scheduling": "confidence", "decline_features": False,
                 "sps_profile": SPSProfile([1, 4, 8, 1 << 20], [900.0, 900.0, 850.0, 850.0]),
                 "decode_profile": SPSProfile([1, 1 << 20], [1.0, 1.0])}   # drafting always pays
    assert _replies(gguf_path, scheduled, chats) == plain
    assert torch.get_default_dtype() == torch.float32


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

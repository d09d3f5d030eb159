# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""GGUF loading on tiny checkpoints converted from the HF fixtures with the `gguf` writer.

A: transformers reads the same (partly Q8_0-quantized) GGUF -> its logits must match ours
   (checks tensor naming, llama.cpp's Q/K permutation, dequantization, tied embeddings).
B: an all-float32 GGUF carrying rope-scaling / head-size metadata -> our logits must match HF on
   the original safetensors folder (checks the metadata -> config translation).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import MODEL_ARCH_NAMES, GGMLQuantizationType, GGUFWriter, RopeScalingType, get_tensor_name_map
from gguf.quants import quantize
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from deepinfer_core.config import EngineConfig
from deepinfer_core.executor.batch import ScheduledChunk
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.loader import load_model_config
from deepinfer_core.loader.gguf import GGUFCheckpoint, hf_tensor_name

ATOL = 1e-4


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's converter permutation of Q/K rows (per head: halves -> interleaved pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(folder: Path, out: Path, quantized: bool, rope_metadata: bool) -> Path:
    """Converts a tiny HF folder (config.json + model.safetensors) into a GGUF file."""
    import json

    cfg = json.loads((folder / "config.json").read_text())
    arch = cfg["model_type"]
    arch_id = next(k for k, v in MODEL_ARCH_NAMES.items() if v == arch)
    names = get_tensor_name_map(arch_id, cfg["num_hidden_layers"])
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    writer = GGUFWriter(str(out), arch)
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    writer.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    writer.add_vocab_size(cfg["vocab_size"])
    writer.add_bos_token_id(cfg["bos_token_id"])
    writer.add_eos_token_id(cfg["eos_token_id"])
    rope = cfg["rope_parameters"]
    if rope_metadata and rope.get("rope_type", "default") != "default":
        writer.add_rope_scaling_type(RopeScalingType(rope["rope_type"]))
        writer.add_rope_scaling_factor(rope["factor"])
        if "original_max_position_embeddings" in rope:
            writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    for hf_name, tensor in sorted(load_file(str(folder / "model.safetensors")).items()):
        base, _, suffix = hf_name.rpartition(".")
        data = tensor.float().numpy()
        if arch == "llama" and base.endswith("q_proj"):
            data = llama_cpp_permute(data, heads)
        elif arch == "llama" and base.endswith("k_proj"):
            data = llama_cpp_permute(data, kv_heads)
        gguf_name = f"{names.get_name(base)}.{suffix}"
        if quantized and data.ndim == 2 and ("ffn" in gguf_name or "token_embd" in gguf_name or "attn_q" in gguf_name):
            writer.add_tensor(gguf_name, quantize(data, GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
        elif quantized and "attn_v" in gguf_name:
            writer.add_tensor(gguf_name, data.astype(np.float16))
        else:
            writer.add_tensor(gguf_name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def run_ours(path: Path, prompt: list[int], steps: list[int]) -> list[torch.Tensor]:
    """Prefill logits of every prompt position, then one row per fed decode token."""
    runner = ModelRunner(load_model_config(path), EngineConfig(block_size=4))
    runner.allocate_kv_cache(16)
    blocks = [9, 2, 14, 5, 0, 11]
    out = runner.execute_model([ScheduledChunk(prompt, 0, blocks, True, True)])
    rows, pos = [out.prompt_logits[0]], len(prompt)
    for token in steps:
        rows.append(runner.execute_model([ScheduledChunk([token], pos, blocks, True)]).logits)
        pos += 1
    return rows


@torch.no_grad()
def run_hf(model, prompt: list[int], steps: list[int]) -> list[torch.Tensor]:
    res = model(input_ids=torch.tensor([prompt]), use_cache=True)
    rows, cache = [res.logits[0]], res.cache
    for token in steps:
        res = model(input_ids=torch.tensor([[token]]), cache=cache, use_cache=True)
        rows.append(res.logits[0])
        cache = res.cache
    return rows


def assert_rows_close(ours: list[torch.Tensor], ref: list[torch.Tensor]) -> None:
    for a, b in zip(ours, ref, strict=True):
        assert a.shape == b.shape
        err = (a - b.float()).abs().max().item()
        assert err <= ATOL, f"max abs error {err}"


def prompt_and_steps(vocab: int) -> tuple[list[int], list[int]]:
    g = torch.Generator().manual_seed(5)
    prompt = torch.randint(0, vocab, (9,), generator=g).tolist()
    steps = torch.randint(0, vocab, (4,), generator=g).tolist()
    return prompt, steps


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_quantized_gguf_matches_transformers_gguf_loader(family, tiny_checkpoint, tmp_path):
    path = write_gguf(tiny_checkpoint(family), tmp_path / "tiny.gguf", quantized=True, rope_metadata=False)
    hf = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=path.name, dtype=torch.float32,
                                              attn_implementation="eager").eval()
    prompt, steps = prompt_and_steps(hf.config.vocab_size)
    assert_rows_close(run_ours(path, prompt, steps), run_hf(hf, prompt, steps))


@pytest.mark.parametrize("family", ["llama-linear", "qwen3"])
def test_float_gguf_metadata_matches_hf_folder(family, tiny_checkpoint, tmp_path):
    folder = tiny_checkpoint(family)
    path = write_gguf(folder, tmp_path / "tiny.gguf", quantized=False, rope_metadata=True)
    ours_cfg, hf_cfg = load_model_config(path), load_model_config(folder)
    assert ours_cfg.rope_scaling == hf_cfg.rope_scaling and ours_cfg.head_dim == hf_cfg.head_dim
    hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    prompt, steps = prompt_and_steps(hf.config.vocab_size)
    assert_rows_close(run_ours(path, prompt, steps), run_hf(hf, prompt, steps))


def test_tensor_names_map_to_hf():
    assert hf_tensor_name("token_embd.weight") == "model.embed_tokens.weight"
    assert hf_tensor_name("blk.12.ffn_gate.weight") == "model.layers.12.mlp.gate_proj.weight"
    assert hf_tensor_name("blk.0.attn_k_norm.weight") == "model.layers.0.self_attn.k_norm.weight"
    with pytest.raises(ValueError, match="blk.0.ffn_gate_exps.weight"):
        hf_tensor_name("blk.0.ffn_gate_exps.weight")


def test_unsupported_gguf_architecture_is_named(tmp_path):
    writer = GGUFWriter(str(tmp_path / "x.gguf"), "gemma3")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.ones((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match=r"model: .*'gemma3'.*llama"):
        GGUFCheckpoint(tmp_path / "x.gguf")


def test_malformed_gguf_raises_value_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(20))
    with pytest.raises(ValueError, match="model"):
        load_model_config(bad)

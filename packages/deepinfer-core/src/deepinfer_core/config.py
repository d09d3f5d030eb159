# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Engine and model configuration.

`EngineConfig` holds the user-facing knobs of one engine instance. `ModelConfig` is the
architecture description the model code needs, built from a Hugging Face `config.json` dict
(GGUF metadata is translated to the same dict by `loader/gguf.py`).
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any

import torch

_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def parse_dtype(name: str, field: str = "dtype") -> torch.dtype:
    """Maps a dtype name ("float32", "bfloat16", "float16"; "fp32"/"bf16"/"fp16" too) to torch.

    Raises:
        ValueError: if the name is unknown; the message names `field`.
    """
    aliases = {"fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}
    key = aliases.get(str(name).lower(), str(name).lower())
    if key not in _DTYPES:
        raise ValueError(f"{field}: unsupported dtype {name!r}; expected one of {sorted(_DTYPES)} or 'auto'")
    return _DTYPES[key]


@dataclasses.dataclass
class EngineConfig:
    """Configuration of one engine instance (validated on construction).

    Attributes:
        model: HF checkpoint folder or `.gguf` file; None selects the default model
            (SmolLM2-135M-Instruct, fetched by `deepinfer_core.assets`).
        tokenizer: tokenizer folder/file; None uses the model's own tokenizer.
        dtype: "auto" (checkpoint dtype; GGUF -> float32), "float32", "bfloat16" or "float16".
        device: torch device string for weights, activations and the KV cache; "auto" (the
            default) resolves to "cuda" when a CUDA device is available, else "cpu".
        block_size: tokens per KV-cache block.
        kv_cache_memory: bytes given to the KV-cache pool (all layers, K and V).
        max_num_seqs: most requests in one step.
        max_num_batched_tokens: token budget of one step (prefill chunks + decode tokens).
        max_model_len: longest sequence (prompt + output); None takes the model's limit.
        enable_chunked_prefill: split long prompts across steps under the token budget.
        seed: default seed for requests that do not give one (also seeds dummy weights).
        load_format: "auto" (the checkpoint's weights) or "dummy" (seeded random weights; the
            checkpoint may hold only config.json).
        enforce_eager: never capture CUDA graphs (every step runs eagerly on every device).
        mixed_cuda_graphs: on CUDA (and without `enforce_eager`), also capture graphs for
            prefill and mixed steps (token buckets 16-8192, up to the first that holds
            `max_num_batched_tokens`; `executor.mixed_graph`): a joining request's step then
            costs a replay instead of an eager launch of every kernel (on the H200 with
            SmolLM2-135M: TTFT 18.1 -> 1.8 ms at batch 1, a closed loop of 8 requests at 1.73x
            the tokens/s; the repository's top-level BENCHMARKS.md, "Mixed-step CUDA graphs").
            On by default; start-up takes a few seconds longer. The step's kernels must run
            without a host sync (the triton attention does): when the capture fails (a kernel
            that syncs, or out of memory) a warning names the error and those steps run eagerly.
        deterministic: batch-invariant kernels on the whole path (matmul, RMSNorm, attention,
            LM head): a request's tokens and logprobs depend only on its own prompt, parameters
            and seed, not on what runs beside it or how its prompt is chunked. Slower.
        async_scheduling: schedule and launch step N+1 before step N's tokens reach the host
            (`engine.async_core`): less idle device time. Output equals the synchronous loop bit
            for bit with `deterministic=True`; with the default kernels a request that stopped
            still takes one extra step, which can change its neighbours' batch shape (and so
            their last bits) in that step.
        freeze_heap: during each `LLM.generate` / `LLM.chat` call, keep the objects alive at its
            start out of the garbage collector's passes (`gc.freeze()`, undone when the call
            ends; every 8 full passes so shortened, a call ends with a real `gc.collect()`:
            `engine.frozen_heap`). At 256 requests on a 2-core CPU a full pass walked ~228,000
            start-up objects (~100 ms; ~1.5 ms frozen; packages/deepinfer-core/BENCHMARKS.md).
            Off leaves the collector alone.
        packed_graph_inputs: a decode or verification step that replays a CUDA graph writes its
            inputs into a host copy of the graphs' static buffers and uploads them in one copy
            (`executor.packed_inputs`; `DecodeBuffers.upload`, `VerifyBuffers.upload`): ~5 torch
            calls a step for the inputs instead of ~25-35 (on the CPU; more on CUDA), on hosts where
            each costs ~15-30 us.
            Off by default until measured on a GPU (docs/gpu_plan.md); no effect without graphs.
        speculative_config: speculative decoding, e.g. `{"method": "ngram",
            "num_speculative_tokens": 4}`; "method" names a proposer plug-in (entry-point group
            `deepinfer.proposers`), other keys go to it. None decodes without drafts.
    """

    model: str | None = None
    tokenizer: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    block_size: int = 16
    kv_cache_memory: int = 512 * 1024**2
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None
    enable_chunked_prefill: bool = True
    seed: int = 0
    load_format: str = "auto"
    enforce_eager: bool = False
    mixed_cuda_graphs: bool = True
    deterministic: bool = False
    speculative_config: dict | None = None
    async_scheduling: bool = True
    freeze_heap: bool = True
    packed_graph_inputs: bool = False

    def __post_init__(self) -> None:
        if self.model is not None and not isinstance(self.model, str):
            self.model = str(self.model)
        if self.tokenizer is not None and not isinstance(self.tokenizer, str):
            self.tokenizer = str(self.tokenizer)
        if self.dtype != "auto":
            parse_dtype(self.dtype, "dtype")
        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        _check_device(self.device)
        for name in ("block_size", "kv_cache_memory", "max_num_seqs", "max_num_batched_tokens"):
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                raise ValueError(f"{name}: must be a positive int, got {value!r}")
        if self.max_model_len is not None and (not _is_int(self.max_model_len) or self.max_model_len <= 0):
            raise ValueError(f"max_model_len: must be a positive int or None, got {self.max_model_len!r}")
        if not _is_int(self.seed):
            raise ValueError(f"seed: must be an int, got {self.seed!r}")
        if not isinstance(self.enable_chunked_prefill, bool):
            raise ValueError(f"enable_chunked_prefill: must be a bool, got {self.enable_chunked_prefill!r}")
        if self.load_format not in ("auto", "dummy"):
            raise ValueError(f"load_format: expected 'auto' or 'dummy', got {self.load_format!r}")
        _check_speculative(self.speculative_config)
        for name in ("enforce_eager", "mixed_cuda_graphs", "deterministic", "async_scheduling", "freeze_heap",
                     "packed_graph_inputs"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be a bool, got {getattr(self, name)!r}")


def _check_speculative(spec: object) -> None:
    """Raises ValueError naming `speculative_config.<key>` for a malformed speculative config."""
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise ValueError(f"speculative_config: must be a dict or None, got {type(spec).__name__}")
    if spec.get("proposer") is None and not isinstance(spec.get("method"), str):
        raise ValueError("speculative_config.method: a proposer name (e.g. 'ngram', 'dspark') is required")
    k = spec.get("num_speculative_tokens")
    if "num_speculative_tokens" not in spec:
        near = difflib.get_close_matches("num_speculative_tokens", [k for k in spec if isinstance(k, str)], 1, 0.75)
        hint = f" (a misspelling? got {near[0]!r})" if near else ""
        raise ValueError(f"speculative_config.num_speculative_tokens: required, an int in [1, 64]{hint}")
    if not _is_int(k) or not 1 <= k <= 64:
        raise ValueError(f"speculative_config.num_speculative_tokens: must be an int in [1, 64], got {k!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_device(device: str) -> None:
    """Raises ValueError (names `device`) for a malformed device string or one this torch build cannot use."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device: invalid device {device!r}") from exc
    if dev.type == "cpu":
        return
    if dev.type == "meta":
        raise ValueError("device: 'meta' tensors hold no data; use 'cpu', 'cuda' or 'auto'")
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:  # e.g. "Torch not compiled with CUDA enabled"
        raise ValueError(f"device: {device!r} is not available: {exc}") from exc


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Architecture of a dense decoder-only model (Llama / Qwen2 / Qwen3 style).

    Attributes:
        path: the checkpoint (HF folder or `.gguf` file).
        format: "hf" or "gguf".
        architecture: HF class name, e.g. "LlamaForCausalLM" (selects the model family).
        head_dim: D, size of one attention head.
        rope_theta: RoPE base.
        rope_scaling: None for plain RoPE, else the HF rope parameters without `rope_theta`
            (keys `rope_type`, `factor`, ...; passed to `ops.build_rope_cache`).
        qkv_bias: q/k/v projections carry a bias (HF `attention_bias`; Qwen2: always).
        o_bias: the output projection carries a bias (HF `attention_bias`; Qwen2: never).
        mlp_bias: gate/up/down projections carry a bias (HF Llama `mlp_bias`).
        checkpoint_dtype: dtype the weights are stored in (GGUF: float32 after dequantization).
        eos_token_ids: end-of-sequence ids from the config (and generation config).
    """

    path: Path
    format: str
    architecture: str
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict[str, Any] | None
    max_position_embeddings: int
    tie_word_embeddings: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    checkpoint_dtype: torch.dtype
    bos_token_id: int | None
    eos_token_ids: tuple[int, ...]

    @classmethod
    def from_hf_dict(cls, config: dict[str, Any], path: Path, format: str = "hf") -> ModelConfig:
        """Builds a ModelConfig from a Hugging Face `config.json` dict (transformers v4 or v5 keys).

        Raises:
            ValueError: the dict lacks a required field or a value is invalid; the message names
                `model` and the field.
        """
        archs = config.get("architectures") or []
        if not archs or not isinstance(archs, list):
            raise ValueError(f"model: {path} config has no 'architectures' list")

        def positive(key: str, default: int | None = None) -> int:
            value = config.get(key)
            if value is None:
                if default is None:
                    raise ValueError(f"model: {path} config lacks required field '{key}'")
                return default
            if not _is_int(value) or value <= 0:
                raise ValueError(f"model: {path} config field '{key}' must be a positive int, got {value!r}")
            return value

        hidden = positive("hidden_size")
        heads = positive("num_attention_heads")
        kv_heads = positive("num_key_value_heads", heads)
        head_dim = positive("head_dim", hidden // heads)
        if heads % kv_heads != 0:
            raise ValueError(f"model: num_attention_heads ({heads}) must be a multiple of "
                             f"num_key_value_heads ({kv_heads})")
        rope_theta, rope_scaling = _rope_from_hf(config, path)
        model_type = str(config.get("model_type", ""))
        attention_bias = bool(config.get("attention_bias", False))
        if config.get("use_sliding_window"):
            raise ValueError(f"model: {path} uses sliding-window attention (use_sliding_window), not supported yet")
        dtype_name = config.get("dtype") or config.get("torch_dtype") or "float32"
        checkpoint_dtype = _DTYPES.get(str(dtype_name).replace("torch.", ""), torch.float32)
        eos = config.get("eos_token_id")
        eos_ids = tuple(e for e in (eos if isinstance(eos, list) else [eos]) if e is not None)
        bos = config.get("bos_token_id")
        for key, ids in (("eos_token_id", eos_ids), ("bos_token_id", () if bos is None else (bos,))):
            if not all(_is_int(t) and t >= 0 for t in ids):
                raise ValueError(f"model: {path} config field '{key}' must be an int >= 0, a list of them or null, "
                                 f"got {config.get(key)!r}")
        return cls(
            path=Path(path),
            format=format,
            architecture=str(archs[0]),
            model_type=model_type,
            vocab_size=positive("vocab_size"),
            hidden_size=hidden,
            intermediate_size=positive("intermediate_size"),
            num_hidden_layers=positive("num_hidden_layers"),
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            head_dim=head_dim,
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope_theta=rope_theta,
            rope_scaling=rope_scaling,
            max_position_embeddings=positive("max_position_embeddings", 4096),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=attention_bias or model_type == "qwen2",
            o_bias=attention_bias and model_type != "qwen2",
            mlp_bias=bool(config.get("mlp_bias", False)),
            checkpoint_dtype=checkpoint_dtype,
            bos_token_id=bos,
            eos_token_ids=eos_ids,
        )

    def resolve_dtype(self, requested: str, device: torch.device | str) -> torch.dtype:
        """The compute dtype for `requested` ("auto" or a dtype name) on `device`.

        "auto" keeps the checkpoint dtype; GGUF weights (dequantized) run in float32 on CPU
        and bfloat16 on accelerators.

        Raises:
            ValueError: unknown dtype name (names `dtype`).
        """
        if requested != "auto":
            return parse_dtype(requested, "dtype")
        if self.format == "gguf":
            return torch.float32 if torch.device(device).type == "cpu" else torch.bfloat16
        return self.checkpoint_dtype


def _rope_from_hf(config: dict[str, Any], path: Path) -> tuple[float, dict[str, Any] | None]:
    """Reads (rope_theta, rope_scaling) from v5 `rope_parameters` or v4 `rope_theta`/`rope_scaling`."""
    params = dict(config.get("rope_parameters") or {})
    legacy = config.get("rope_scaling") or {}
    if not isinstance(params, dict) or not isinstance(legacy, dict):
        raise ValueError(f"model: {path} config field 'rope_parameters'/'rope_scaling' must be a dict")
    params = {**legacy, **params}
    theta = float(params.pop("rope_theta", config.get("rope_theta", 10000.0)))
    rope_type = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    if rope_type == "default":
        return theta, None
    supported = ("linear", "llama3", "yarn")
    if rope_type not in supported:
        raise ValueError(f"model: rope_scaling type {rope_type!r} is not supported; supported: {supported}")
    return theta, {"rope_type": rope_type, **params}

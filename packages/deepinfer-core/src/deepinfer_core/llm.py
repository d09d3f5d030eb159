# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""LLM: the offline frontend (`generate`, `chat`) over one in-process engine."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from deepinfer_core.chat_encoder import ChatEncoder, Message
from deepinfer_core.config import EngineConfig
from deepinfer_core.engine.async_core import AsyncEngineCore
from deepinfer_core.engine.engine_core import EngineCore
from deepinfer_core.engine.frozen_heap import FrozenHeap
from deepinfer_core.engine.output_processor import OutputProcessor, RequestState
from deepinfer_core.engine.proposer_plugins import check_proposer_config
from deepinfer_core.engine.speculative import build_speculative
from deepinfer_core.executor.model_runner import ModelRunner
from deepinfer_core.interfaces import ProgressCallback
from deepinfer_core.loader import load_model_config, load_tokenizer
from deepinfer_core.loader.dummy import has_tokenizer_files, placeholder_tokenizer
from deepinfer_core.outputs import RequestOutput
from deepinfer_core.sampling.seeds import derive_seed
from deepinfer_core.sampling_params import SamplingParams
from deepinfer_core.structured.manager import StructuredOutputManager

Prompt = str | list[int] | dict[str, Any]


class LLM:
    """An LLM loaded for offline batched generation.

    Args:
        model: HF checkpoint folder or `.gguf` file; None uses the default model
            (SmolLM2-135M-Instruct, `deepinfer_core.assets.default_model_path()`).
        tokenizer: tokenizer folder/file; None uses the model's.
        dtype: "auto", "float32", "bfloat16" or "float16".
        device: "auto" (CUDA when available, else the CPU) or a torch device string.
        max_model_len: longest prompt + output in tokens; None takes the model's limit, capped by
            the tokens `kv_cache_memory` holds.
        max_num_seqs: most requests per step.
        max_num_batched_tokens: token budget per step.
        kv_cache_memory: bytes for the paged KV cache (must hold one `max_model_len` sequence).
        enable_chunked_prefill: split long prompts across steps.
        block_size: tokens per KV block.
        seed: engine seed; requests without a `seed` draw theirs from it, in submission order.
        load_format: "auto" (the checkpoint's weights) or "dummy" (seeded random weights, for
            benchmarks: `model` may be a folder with only config.json; without tokenizer files a
            placeholder tokenizer decodes token i as `<i>`, so pass token-id prompts).
        enforce_eager: never capture CUDA graphs (on CUDA, pure-decode steps otherwise replay
            graphs captured at start-up for batch sizes up to `max_num_seqs`, and prefill and
            mixed steps those of `mixed_cuda_graphs`).
        mixed_cuda_graphs: also capture graphs for prefill and mixed steps (on by default; `EngineConfig`).
        deterministic: batch-invariant kernels everywhere (see docs/determinism.md): a request's
            output bits do not depend on the other requests in flight or on prefill chunking.
        speculative_config: speculative decoding, e.g. `{"method": "ngram", "num_speculative_tokens": 4}`
            (a proposer plug-in such as deepinfer-dspark provides the method); output is lossless:
            the same distribution as without it (token-identical when greedy and deterministic).
            Requests with penalties, unmet `min_tokens` or structured output decode without drafts.
        async_scheduling: overlap scheduling and output processing of one step with the device
            work of the next (default on; see `EngineConfig.async_scheduling`).
        freeze_heap: keep the objects alive when a run starts out of the garbage collector's
            passes during it (default on; see `EngineConfig.freeze_heap`).
        packed_graph_inputs: upload a graph-replayed decode or verification step's inputs in one
            copy (off by default until measured on a GPU; see `EngineConfig.packed_graph_inputs`).

    Unset (None) knobs keep `EngineConfig`'s defaults.

    Attributes:
        config: the EngineConfig.
        model_config: the loaded ModelConfig; `model_path` its checkpoint path.
        max_model_len: the resolved longest sequence.
        engine: the EngineCore (scheduler, KV pool, sampler, runner).

    Raises:
        ValueError: a missing or malformed model (names `model`), an invalid knob (names it),
            or a KV budget too small for `max_model_len` (names `kv_cache_memory`).
    """

    def __init__(self, model: str | None = None, *, tokenizer: str | None = None, dtype: str = "auto",
                 device: str | None = None, max_model_len: int | None = None, max_num_seqs: int | None = None,
                 max_num_batched_tokens: int | None = None, kv_cache_memory: int | None = None,
                 enable_chunked_prefill: bool = True, block_size: int | None = None, seed: int = 0,
                 load_format: str = "auto", enforce_eager: bool = False, mixed_cuda_graphs: bool = True,
                 deterministic: bool = False,
                 speculative_config: dict | None = None, async_scheduling: bool = True,
                 freeze_heap: bool = True, packed_graph_inputs: bool = False) -> None:
        given = dict(tokenizer=tokenizer, device=device, max_num_seqs=max_num_seqs,
                     max_num_batched_tokens=max_num_batched_tokens, kv_cache_memory=kv_cache_memory,
                     block_size=block_size)
        self.config = EngineConfig(model=None if model is None else str(model), dtype=dtype,
                                   max_model_len=max_model_len, enable_chunked_prefill=enable_chunked_prefill,
                                   seed=seed, load_format=load_format, enforce_eager=enforce_eager,
                                   mixed_cuda_graphs=mixed_cuda_graphs,
                                   deterministic=deterministic, speculative_config=speculative_config,
                                   async_scheduling=async_scheduling, freeze_heap=freeze_heap,
                                   packed_graph_inputs=packed_graph_inputs,
                                   **{k: v for k, v in given.items() if v is not None})
        check_proposer_config(self.config.speculative_config)   # before the weights load
        model_config = load_model_config(self.config.model)
        self.model_config = model_config
        self.model_path = model_config.path  # the resolved checkpoint (the default model's GGUF for None)
        limit = model_config.max_position_embeddings
        if max_model_len is not None and max_model_len > limit:
            raise ValueError(f"max_model_len ({max_model_len}) exceeds the model's limit ({limit})")
        eos = model_config.eos_token_ids[0] if model_config.eos_token_ids else None
        if (self.config.load_format == "dummy" and self.config.tokenizer is None
                and not has_tokenizer_files(model_config.path)):
            self.tokenizer = placeholder_tokenizer(model_config.vocab_size, eos)
        else:
            self.tokenizer = load_tokenizer(self.config.tokenizer or model_config.path)
        if self.tokenizer.eos_token_id is not None:
            eos = self.tokenizer.eos_token_id
        runner = ModelRunner(model_config, self.config)
        if max_model_len is None:  # the model's limit, capped by what the KV budget holds
            kv_tokens = self.config.kv_cache_memory // runner.kv_bytes_per_block() * self.config.block_size
            max_model_len = min(limit, kv_tokens) or limit  # no block at all: EngineCore names the field
        self.max_model_len = max_model_len
        core = AsyncEngineCore if self.config.async_scheduling else EngineCore
        self.engine = core(runner, self.config, self.max_model_len, model_config.vocab_size, eos,
                                 structured=StructuredOutputManager(_guidance_factory(
                                     self.tokenizer.backend_tokenizer, model_config.vocab_size, eos)),
                                 speculative=build_speculative(self.config, model_config, runner, self.max_model_len, eos))
        runner.capture_cuda_graphs(self.max_model_len)  # no-op off CUDA or with enforce_eager
        self._processor = OutputProcessor(self.tokenizer.backend_tokenizer)
        self._heap = FrozenHeap(self.config.freeze_heap)
        self._chat_encoder: ChatEncoder | None = None  # built on the first `chat`
        self._ids = itertools.count()

    @property
    def model_bytes(self) -> int:
        """Bytes of the model's parameters (sum of numel * element_size; shared tensors counted once)."""
        return sum(p.numel() * p.element_size() for p in self.engine.runner.model.parameters())

    @property
    def decode_weight_bytes(self) -> int:
        """Weight bytes one decode step must read: every parameter, except that an input embedding
        table not tied to the LM head is only gathered (a few rows), so it is left out.

        Read-only; what benchmark rooflines use as the weight term.
        """
        model = self.engine.runner.model
        embedding = sum(p.numel() * p.element_size() for p in model.model.embed_tokens.parameters())
        return self.model_bytes - (0 if self.model_config.tie_word_embeddings else embedding)

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes of K and V one token occupies in the KV cache, over all layers (read-only)."""
        return self.engine.runner.kv_bytes_per_block() // self.config.block_size

    def get_tokenizer(self) -> Any:
        """The transformers tokenizer (with its chat template)."""
        return self.tokenizer

    def close(self) -> None:
        """Stops the background threads (grammar compiles, mask fills) and gives back what
        structured requests changed in the interpreter (the thread switch interval). Call it
        when done with an LLM that served structured output (or use `with LLM(...) as llm`);
        structured requests fail afterwards. Garbage collection does the same, later."""
        if self.engine.structured is not None:
            self.engine.structured.close()

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def generate(self, prompts: Prompt | Sequence[Prompt],
                 sampling_params: SamplingParams | Sequence[SamplingParams] | None = None, *,
                 on_progress: ProgressCallback | None = None) -> list[RequestOutput]:
        """Generates completions for one prompt or a list of prompts.

        Args:
            prompts: a prompt or a list of prompts; a prompt is text, a list of token ids, or a
                dict `{"prompt_token_ids": [...]}` (optionally with `"prompt"`) or `{"prompt": text}`.
            sampling_params: one SamplingParams for all, one per prompt, or None (defaults).
            on_progress: called after every step with (finished requests, total requests,
                tokens generated in the step), e.g. to draw a progress bar.

        Returns:
            One RequestOutput per prompt, in prompt order.

        Raises:
            ValueError: with a single prompt (not a list), when it is invalid: too long for
                `max_model_len` (names `prompt`), a sampling field out of range (names it), or a
                `structured_outputs` spec the backend cannot compile within its timeout (names
                `json_schema`, `regex`, ... and any unsupported schema keyword).
                With a list, an invalid request does not raise: its RequestOutput has `error` set
                and finish_reason "error", and the others complete normally; the same holds for a
                request that fails later (e.g. in detokenization). A sampling_params list of the
                wrong length, or an item that is not a SamplingParams, always raises (names
                `sampling_params`).
        """
        single = _is_single_prompt(prompts)
        items = [prompts] if single else list(prompts)
        params = _params_per_item(sampling_params, len(items))
        return self._call([lambda item=item: self._tokenize(item) for item in items], params, single, on_progress)

    def chat(self, messages: list[Message] | Sequence[list[Message]],
             sampling_params: SamplingParams | Sequence[SamplingParams] | None = None, *,
             add_generation_prompt: bool = True, tools: list[dict[str, Any]] | None = None,
             chat_template: str | None = None, chat_template_kwargs: dict[str, Any] | None = None,
             on_progress: ProgressCallback | None = None) -> list[RequestOutput]:
        """Generates replies to one conversation or a list of conversations.

        Each conversation (OpenAI Chat Completions message dicts) is encoded by deepinfer-recipe
        (see `ChatEncoder`): the chat template renders it, and special tokens are recognised
        only in the template's own text, so a client who types `<|im_start|>` gets plain text.
        Errors behave as in `generate`: a single conversation raises ValueError, a list yields
        error outputs for the bad ones.

        Args:
            messages: a conversation (list of message dicts) or a list of conversations.
            sampling_params: as in `generate`.
            add_generation_prompt: end the prompt with the assistant header.
            tools: OpenAI function tools (`[{"type": "function", "function": {...}}]`), or None.
            chat_template: a jinja template or the name of one of the tokenizer's templates;
                None uses the tokenizer's.
            chat_template_kwargs: extra template variables (e.g. `enable_thinking`).
            on_progress: as in `generate`.

        Returns:
            One RequestOutput per conversation (`prompt` is the rendered text).

        Raises:
            ValueError: `messages` is not a non-empty list, `chat_template` is not a str or
                `chat_template_kwargs` not a dict (names the argument); see also `generate`.
        """
        if not isinstance(messages, (list, tuple)):
            raise ValueError(f"messages must be a list of message dicts or a list of conversations, "
                             f"got {type(messages).__name__}")
        if not messages:
            raise ValueError("messages must not be empty")
        if chat_template is not None and not isinstance(chat_template, str):
            raise ValueError(f"chat_template must be a str or None, got {type(chat_template).__name__}")
        if chat_template_kwargs is not None and not isinstance(chat_template_kwargs, dict):
            raise ValueError(f"chat_template_kwargs must be a dict or None, got {type(chat_template_kwargs).__name__}")
        single = isinstance(messages[0], dict)
        convs = [messages] if single else list(messages)
        params = _params_per_item(sampling_params, len(convs))
        if self._chat_encoder is None:
            self._chat_encoder = ChatEncoder(self.tokenizer)
        kwargs = dict(chat_template_kwargs or {})
        encoder = self._chat_encoder
        if single:   # raises as `encode` does, its own exception
            return self._call([lambda: encoder.encode(convs[0], tools, add_generation_prompt, chat_template, kwargs)],
                              params, single, on_progress)
        results = encoder.encode_many(convs, tools, add_generation_prompt, chat_template, kwargs)
        return self._call([functools.partial(_settled, result) for result in results], params, single, on_progress)

    def _tokenize(self, item: Prompt) -> tuple[str | None, list[int]]:
        if isinstance(item, str):
            return item, self._encode(item)
        if isinstance(item, dict):
            if "prompt_token_ids" in item:
                return item.get("prompt"), _token_ids(item["prompt_token_ids"])
            if isinstance(item.get("prompt"), str):
                return item["prompt"], self._encode(item["prompt"])
            raise ValueError("prompt must be a str, a list of token ids, or a dict with 'prompt_token_ids' (a list "
                             f"of ints) or 'prompt' (a str), got a dict with keys {sorted(map(str, item))}")
        if isinstance(item, (list, tuple)):
            return None, _token_ids(item)
        raise ValueError("prompt must be a str, a list of token ids, or a dict with 'prompt_token_ids' or "
                         f"'prompt', got {type(item).__name__}")

    def _encode(self, text: str) -> list[int]:
        try:
            return self.tokenizer.encode(text)
        except Exception as exc:  # e.g. lone surrogates: the tokenizers library raises TypeError
            raise ValueError(f"prompt: cannot tokenize the text: {type(exc).__name__}: {exc}") from exc

    def _call(self, encoders: list[Callable[[], tuple[str | None, list[int]]]], params: list[SamplingParams],
              raise_errors: bool, on_progress: ProgressCallback | None) -> list[RequestOutput]:
        """One `generate` / `chat` call: its requests submitted, then run to their end, with the
        objects alive at its start frozen out of the garbage collector's passes (`FrozenHeap`)."""
        with self._heap.call():
            return self._run(self._submit_all(encoders, params, raise_errors), on_progress)

    def _submit_all(self, encoders: list[Callable[[], tuple[str | None, list[int]]]], params: list[SamplingParams],
                    raise_errors: bool) -> list[RequestState]:
        states: list[RequestState] = []
        try:
            for encode, p in zip(encoders, params):
                states.append(self._submit(encode, p, raise_errors))
        except BaseException:  # an error or interrupt mid-submission must not leave requests behind
            self._abandon(states)
            raise
        return states

    def _submit(self, encode: Callable[[], tuple[str | None, list[int]]], params: SamplingParams,
                raise_errors: bool) -> RequestState:
        """Encodes and validates one request, then adds its `n` children to the engine."""
        request_id = str(next(self._ids))
        prompt, token_ids = None, None
        try:
            prompt, token_ids = encode()
            self.engine.check_request(token_ids, params)
            if raise_errors:  # a single prompt: a grammar that does not compile raises here
                self.engine.compile_structured(params)
        except Exception as exc:  # noqa: BLE001 - in a batch, a bad request fails alone
            if raise_errors:
                raise
            return self._processor.add_failed(request_id, prompt, token_ids, str(exc), params.n)
        base_seed = params.seed if params.seed is not None else self.engine.draw_seed()
        child_ids = [request_id] if params.n == 1 else [f"{request_id}-{i}" for i in range(params.n)]
        state = self._processor.add(request_id, prompt, token_ids, params, child_ids)
        # Only the first child computes prompt logprobs: the prompt is the same for all.
        child_params = params if params.n == 1 else dataclasses.replace(params, prompt_logprobs=None)
        for i, child in enumerate(child_ids):
            self.engine.add_request(child, token_ids, params if i == 0 else child_params,
                                    seed=derive_seed(base_seed, i))
        return state

    def _run(self, states: list[RequestState], on_progress: ProgressCallback | None) -> list[RequestOutput]:
        total = len(states)
        done = sum(s.finished for s in states)
        try:
            self._steps(done, total, on_progress)
        finally:
            self.engine.draining(False)
            # An exception (or interrupt) must not leave requests behind for the next call.
            self._abandon(states)
        return [s.to_output() for s in states]

    def _steps(self, done: int, total: int, on_progress: ProgressCallback | None) -> None:
        """Steps the engine until it holds no unfinished request (`done` of `total` finished so far)."""
        self.engine.draining(True)   # nothing is added until `_run` returns
        if on_progress is not None:
            on_progress(done, total, 0)
        while self.engine.has_unfinished():
            step = self._processor.process(self.engine.step())
            for child in step.to_abort:
                self.engine.abort(child)
            done += len(step.finished)
            if on_progress is not None:
                on_progress(done, total, step.num_new_tokens)

    def _abandon(self, states: list[RequestState]) -> None:
        """Aborts the unfinished requests of `states` (finish reason "abort") and forgets all of them."""
        for state in states:
            if not state.finished:
                for child in state.child_ids:
                    self.engine.abort(child)
                state.fail("aborted", "abort")
        self._processor.drop([c for s in states for c in s.child_ids])


def _settled(result: tuple[str, list[int]] | ValueError) -> tuple[str, list[int]]:
    """An `encode_many` result as `encode` gives it: the (text, ids) pair, or its error raised (a
    fresh copy: the stored one stays free of tracebacks)."""
    if isinstance(result, ValueError):
        raise ValueError(*result.args)
    return result


def _guidance_factory(tokenizer: Any, vocab_size: int, eos_token_id: int | None) -> Callable[[], Any]:
    """Builds the structured-output backend on the first structured request (imports llguidance then)."""

    def build() -> Any:
        from deepinfer_core.structured.backend import GuidanceBackend

        return GuidanceBackend(tokenizer.to_str(), vocab_size, eos_token_id)

    return build


def _is_single_prompt(prompts: object) -> bool:
    if isinstance(prompts, (str, dict)):
        return True
    if isinstance(prompts, (list, tuple)):
        return bool(prompts) and isinstance(prompts[0], int) and not isinstance(prompts[0], bool)
    raise ValueError(f"prompts must be a prompt or a list of prompts, got {type(prompts).__name__}")


def _params_per_item(params: SamplingParams | Sequence[SamplingParams] | None, count: int) -> list[SamplingParams]:
    if params is None:
        return [SamplingParams()] * count
    if isinstance(params, SamplingParams):
        return [params] * count
    if isinstance(params, (str, bytes, dict)) or not isinstance(params, Iterable):
        raise ValueError(f"sampling_params must be a SamplingParams or a list of {count}, got {type(params).__name__}")
    params = list(params)
    if len(params) != count:
        raise ValueError(f"sampling_params must be one SamplingParams or a list of {count}, got {len(params)} items")
    for i, p in enumerate(params):
        if not isinstance(p, SamplingParams):
            raise ValueError(f"sampling_params[{i}] must be a SamplingParams, got {type(p).__name__}")
    return params


def _token_ids(ids: object) -> list[int]:
    if not isinstance(ids, (list, tuple)) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise ValueError("prompt_token_ids must be a list of ints")
    return list(ids)

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Bad inputs: clear ValueErrors naming the field; in a batch, one bad request fails alone."""

from __future__ import annotations

import pytest

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.engine import output_processor

MAX_LEN = 64


@pytest.fixture(scope="module")
def llm(tiny_checkpoint) -> LLM:
    return LLM(str(tiny_checkpoint("llama")), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=8 << 20)


def greedy(max_tokens: int = 6) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True)


def test_missing_and_malformed_model_paths(tmp_path) -> None:
    with pytest.raises(ValueError, match="model"):
        LLM(str(tmp_path / "does-not-exist"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="model"):
        LLM(str(tmp_path / "empty"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="model"):
        LLM(str(bad))
    (bad / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 8}')
    with pytest.raises(ValueError, match="model"):
        LLM(str(bad))


def test_kv_budget_too_small_for_max_model_len(tiny_checkpoint) -> None:
    with pytest.raises(ValueError, match="kv_cache_memory"):
        LLM(str(tiny_checkpoint("llama")), max_model_len=MAX_LEN, block_size=4, kv_cache_memory=4096)


@pytest.mark.parametrize("field,value,message", [
    ("n", 0, "n must be an int >= 1, got 0"),
    ("temperature", -1, "temperature must be >= 0, got -1"),
    ("top_p", 0.0, "top_p must be in (0, 1], got 0.0"),
    ("top_p", 1.5, "top_p must be in (0, 1], got 1.5"),
    ("top_k", -2, "top_k must be an int >= 0 (0 or -1 disables), got -2"),
    ("min_p", 1.5, "min_p must be in [0, 1], got 1.5"),
    ("presence_penalty", 3.0, "presence_penalty must be in [-2, 2], got 3.0"),
    ("frequency_penalty", -2.5, "frequency_penalty must be in [-2, 2], got -2.5"),
    ("repetition_penalty", 0.0, "repetition_penalty must be > 0, got 0.0"),
    ("seed", 1.5, "seed must be an int or None, got 1.5"),
    ("max_tokens", 0, "max_tokens must be an int >= 1 or None, got 0"),
    ("min_tokens", -1, "min_tokens must be an int >= 0, got -1"),
    ("stop", [""], "stop must contain non-empty strings, got ''"),
    ("stop_token_ids", [-3], "stop_token_ids must contain ints >= 0, got -3"),
    ("logprobs", -1, "logprobs must be an int >= 0 or None, got -1"),
    ("prompt_logprobs", "2", "prompt_logprobs must be an int >= 0 or None, got '2'"),
    ("ignore_eos", "yes", "ignore_eos must be a bool, got 'yes'"),
])
def test_each_invalid_sampling_field_names_itself(field: str, value, message: str) -> None:
    with pytest.raises(ValueError) as info:
        SamplingParams(**{field: value})
    assert str(info.value) == message


def test_min_tokens_above_max_tokens() -> None:
    with pytest.raises(ValueError, match="min_tokens must be <= max_tokens"):
        SamplingParams(max_tokens=2, min_tokens=3)


@pytest.mark.parametrize("params,message", [
    (SamplingParams(top_k=10_000), "top_k must be <= the vocabulary size"),
    (SamplingParams(logprobs=21), "logprobs must be <= 20"),
    (SamplingParams(prompt_logprobs=30), "prompt_logprobs must be <= 20"),
    (SamplingParams(stop_token_ids=[10_000]), "stop_token_ids must be < the vocabulary size"),
])
def test_vocabulary_dependent_checks_at_add_time(llm: LLM, params: SamplingParams, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        llm.generate("hi", params)
    [out] = llm.generate(["hi"], params)
    assert message in out.error and out.outputs[0].finish_reason == "error"


def test_single_bad_prompt_raises(llm: LLM) -> None:
    with pytest.raises(ValueError, match="longer than max_model_len"):
        llm.generate("x" * (MAX_LEN + 1), greedy())
    with pytest.raises(ValueError, match="prompt must not be empty"):
        llm.generate({"prompt_token_ids": []}, greedy())
    with pytest.raises(ValueError, match="prompt token ids must be in"):
        llm.generate([1, 2, 10_000], greedy())
    with pytest.raises(ValueError, match="prompts must be a prompt or a list of prompts"):
        llm.generate(3.5, greedy())
    with pytest.raises(ValueError, match="prompt must be a str"):
        llm.generate({"text": "hi"}, greedy())
    with pytest.raises(ValueError, match="sampling_params"):
        llm.generate(["a", "b"], [greedy()])
    with pytest.raises(ValueError, match=r"messages\[1\]: expected a message object"):
        llm.chat([{"role": "user", "content": "hi"}, "not a message"], greedy())
    with pytest.raises(ValueError, match=r"messages\[0\]\.role: unknown role 'wizard'"):
        llm.chat([{"role": "wizard", "content": "hi"}], greedy())
    with pytest.raises(ValueError, match=r"tools\[0\]\.type"):
        llm.chat([{"role": "user", "content": "hi"}], greedy(), tools=[{"type": "retrieval"}])
    with pytest.raises(ValueError, match="messages must not be empty"):
        llm.chat([], greedy())
    with pytest.raises(ValueError, match="messages: cannot apply the chat template"):
        llm.chat([{"role": "user", "content": "hi"}], greedy(), chat_template="{% if %}")
    assert not llm.engine.has_unfinished()


def test_batch_with_bad_requests_completes_the_good_ones(llm: LLM) -> None:
    good = ["Hello there", "A second, longer prompt for the batch"]
    alone = [llm.generate(p, greedy(8))[0].outputs[0].token_ids for p in good]
    prompts = [good[0], "x" * (MAX_LEN + 5), good[1], {"prompt_token_ids": []}, 3.5]
    params = [greedy(8)] * 4 + [SamplingParams(temperature=-0.0, max_tokens=8, ignore_eos=True)]
    outs = llm.generate(prompts, params)
    assert [o.error is None for o in outs] == [True, False, True, False, False]
    assert "prompt must be a str" in outs[4].error
    assert "longer than max_model_len" in outs[1].error and outs[1].outputs[0].finish_reason == "error"
    assert outs[1].outputs[0].token_ids == [] and outs[1].finished
    assert [outs[0].outputs[0].token_ids, outs[2].outputs[0].token_ids] == alone
    assert not llm.engine.has_unfinished()


@pytest.mark.parametrize("stop", [None, ["<never in these replies>"]], ids=["text-at-end", "streamed"])
def test_a_request_failing_in_detokenization_fails_alone(llm: LLM, monkeypatch, stop) -> None:
    """Both detokenizers: held to the end (no stop string) and token by token (a stop string)."""
    bad_prompt = llm.get_tokenizer().encode("please break")
    name = "FinalDetokenizer" if stop is None else "IncrementalDetokenizer"
    real = getattr(output_processor, name)

    class Breaking(real):
        def push(self, ids) -> str:
            raise RuntimeError("detokenizer exploded")

        def flush(self) -> str:
            raise RuntimeError("detokenizer exploded")

    def factory(decode, prompt_ids, **kwargs):
        cls = Breaking if list(prompt_ids)[-3:] == bad_prompt[-3:] else real
        return cls(decode, prompt_ids, **kwargs)

    monkeypatch.setattr(output_processor, name, factory)
    outs = llm.generate(["fine one", "please break", "fine two"], SamplingParams(temperature=0, max_tokens=5,
                                                                                  n=2, ignore_eos=True, stop=stop))
    assert outs[1].error == "RuntimeError: detokenizer exploded"
    assert [c.finish_reason for c in outs[1].outputs] == ["error", "error"]
    for o in (outs[0], outs[2]):
        assert o.error is None and [len(c.token_ids) for c in o.outputs] == [5, 5]
        assert all(c.text for c in o.outputs)
    assert not llm.engine.has_unfinished()
    assert llm.engine.scheduler.kv.num_free_blocks == llm.engine.scheduler.kv.pool.num_blocks


# --- Regression tests from the error-contract attack (each failed before its fix). ---


@pytest.mark.parametrize("field,value,message", [
    ("stop", 5, "stop must be a str, a list of str or None, got int"),
    ("stop", {"a": 1}, "stop must be a str, a list of str or None, got dict"),
    ("stop_token_ids", 5, "stop_token_ids must be a list of ints or None, got int"),
    ("temperature", float("inf"), "temperature must be finite in float32"),
    ("temperature", 1e300, "temperature must be finite in float32"),
    ("top_p", 1e-300, "top_p must be >= 1.2e-38"),
    ("repetition_penalty", float("inf"), "repetition_penalty must be in [1.2e-38, 3.4e38]"),
    ("repetition_penalty", 1e-300, "repetition_penalty must be in [1.2e-38, 3.4e38]"),
])
def test_sampling_containers_and_float32_limits(field: str, value, message: str) -> None:
    # These used to raise TypeError, or pass and make the float32 sampler emit token 0 from NaN/zero rows.
    with pytest.raises(ValueError) as info:
        SamplingParams(**{field: value})
    assert str(info.value).startswith(message)


def test_reassigned_fields_are_normalized_before_use(llm: LLM) -> None:
    text = llm.generate("Hello there", greedy(8))[0].outputs[0].text
    stop = text[2:4]
    expected = llm.generate("Hello there", SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, stop=[stop]))
    params = greedy(8)
    params.stop, params.stop_token_ids, params.top_k = stop, None, -1  # a plain str was split into characters
    [out] = llm.generate("Hello there", params)
    assert params.stop == [stop] and params.stop_token_ids == [] and params.top_k == 0
    assert out.outputs[0].text == expected[0].outputs[0].text == text[:text.find(stop)]


def test_progress_callback_error_leaves_no_requests_behind(llm: LLM) -> None:
    prompts = ["Hello there", "A second, longer prompt for the batch"]
    fresh = [o.outputs[0].token_ids for o in llm.generate(prompts, greedy(8))]

    def boom(done: int, total: int, new_tokens: int) -> None:
        raise RuntimeError("callback exploded")

    with pytest.raises(RuntimeError, match="callback exploded"):  # raised by the very first call
        llm.generate(prompts, greedy(8), on_progress=boom)
    assert not llm.engine.has_unfinished() and not llm._processor.has_unfinished()
    kv = llm.engine.scheduler.kv
    assert kv.num_free_blocks == kv.pool.num_blocks
    seen: list[tuple[int, int, int]] = []
    outs = llm.generate(prompts, greedy(8), on_progress=lambda *a: seen.append(a))
    assert [o.outputs[0].token_ids for o in outs] == fresh and seen[-1][:2] == (2, 2)


def test_untokenizable_prompt_is_a_value_error(llm: LLM) -> None:
    with pytest.raises(ValueError, match="prompt: cannot tokenize"):
        llm.generate("lone surrogate \ud800", greedy())
    outs = llm.generate(["lone surrogate \ud800", "Hello there"], greedy())
    assert "prompt: cannot tokenize" in outs[0].error and outs[1].error is None
    assert outs[1].outputs[0].token_ids == llm.generate("Hello there", greedy())[0].outputs[0].token_ids


def test_chat_batch_with_bad_conversations_completes_the_good_ones(llm: LLM) -> None:
    """Conversations are rendered one by one and tokenized in one batch: a conversation the
    tokenizer rejects (a lone surrogate) or that is malformed fails alone, with its field named;
    the others get the ids and replies they get alone."""
    good = [[{"role": "user", "content": "Hello there"}], [{"role": "user", "content": "<|im_start|>again"}]]
    alone = [llm.chat(c, greedy(6))[0] for c in good]
    with pytest.raises(ValueError, match="messages: cannot tokenize the prompt"):
        llm.chat([{"role": "user", "content": "lone \ud800"}], greedy())
    batch = [good[0], [{"role": "user", "content": "lone \ud800"}], [{"role": "wizard", "content": "x"}], good[1]]
    outs = llm.chat(batch, greedy(6))
    assert [o.error is None for o in outs] == [True, False, False, True]
    assert "messages: cannot tokenize the prompt" in outs[1].error
    assert "messages[0].role: unknown role 'wizard'" in outs[2].error
    for out, ref in zip((outs[0], outs[3]), alone):
        assert (out.prompt, out.prompt_token_ids, out.outputs[0].token_ids) == \
            (ref.prompt, ref.prompt_token_ids, ref.outputs[0].token_ids)
    assert not llm.engine.has_unfinished()


@pytest.mark.parametrize("call,message", [
    (lambda llm: llm.chat("hello", greedy()), "messages must be a list"),
    (lambda llm: llm.chat({"role": "user", "content": "hi"}, greedy()), "messages must be a list"),
    (lambda llm: llm.chat(None, greedy()), "messages must be a list"),
    (lambda llm: llm.chat([{"role": "user", "content": "hi"}], greedy(), chat_template=5), "chat_template must be"),
    (lambda llm: llm.chat([{"role": "user", "content": "hi"}], greedy(), chat_template_kwargs="x"),
     "chat_template_kwargs must be a dict"),
    (lambda llm: llm.generate(["a", "b"], [greedy(), None]), r"sampling_params\[1\] must be a SamplingParams"),
    (lambda llm: llm.generate("a", {"temperature": 0}), "sampling_params must be a SamplingParams"),
    (lambda llm: llm.generate({"prompt": None}, greedy()), r"prompt must be a str.*got a dict with keys \['prompt'\]"),
])
def test_frontend_argument_types_name_the_field(llm: LLM, call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(llm)
    assert not llm.engine.has_unfinished()


@pytest.mark.parametrize("patch,field", [
    ({"hidden_size": "abc"}, "hidden_size"),
    ({"hidden_size": 64.5}, "hidden_size"),
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"vocab_size": -5}, "vocab_size"),
    ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ({"max_position_embeddings": 0}, "max_position_embeddings"),
    ({"eos_token_id": "x"}, "eos_token_id"),
])
def test_malformed_config_fields_name_the_field(tiny_checkpoint, tmp_path, patch: dict, field: str) -> None:
    import json
    import shutil

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint("llama"), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **patch}))
    with pytest.raises(ValueError, match=f"model: .*'{field}'"):  # was ZeroDivisionError, TypeError, ...
        LLM(str(folder), max_model_len=MAX_LEN, kv_cache_memory=8 << 20)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_unreadable_safetensors_is_a_value_error(tiny_checkpoint, tmp_path, damage: str) -> None:
    import shutil

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint("llama"), folder)
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2] if damage == "truncate" else b"\xff" * 64)
    with pytest.raises(ValueError, match="model: .*model.safetensors is not a readable safetensors file"):
        LLM(str(folder), max_model_len=MAX_LEN, kv_cache_memory=8 << 20)


def test_gguf_missing_metadata_names_the_key(tmp_path) -> None:
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(tmp_path / "x.gguf"), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.ones((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match="model: .*'llama.attention.head_count'"):  # was TypeError: int(None)
        LLM(str(tmp_path / "x.gguf"))


@pytest.mark.parametrize("field,value", [
    ("max_model_len", True), ("seed", True), ("enable_chunked_prefill", "no"),
])
def test_engine_knob_types_name_the_field(field: str, value) -> None:
    from deepinfer_core.config import EngineConfig

    with pytest.raises(ValueError, match=f"^{field}: must be"):  # bools passed as ints; "no" was truthy
        EngineConfig(**{field: value})


def test_speculative_config_names_a_missing_or_misspelt_draft_length() -> None:
    from deepinfer_core.config import EngineConfig

    with pytest.raises(ValueError, match=r"^speculative_config.num_speculative_tokens: required.*'num_speculative_token'"):
        EngineConfig(speculative_config={"method": "ngram", "num_speculative_token": 3})
    with pytest.raises(ValueError, match=r"^speculative_config.num_speculative_tokens: required.*'num_spec_tokens'"):
        EngineConfig(speculative_config={"method": "ngram", "num_spec_tokens": 3})
    for spec in ({"method": "ngram"}, {"method": "ngram", "speculative_model": "x"}):   # no near miss: no hint
        with pytest.raises(ValueError, match=r"^speculative_config.num_speculative_tokens: required, an int in \[1, 64\]$"):
            EngineConfig(speculative_config=spec)
    with pytest.raises(ValueError, match="^speculative_config.num_speculative_tokens: must be an int in"):
        EngineConfig(speculative_config={"method": "ngram", "num_speculative_tokens": 0})


def test_unavailable_device_is_a_value_error() -> None:
    import torch

    from deepinfer_core.config import EngineConfig

    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    with pytest.raises(ValueError, match="device: 'cuda' is not available"):  # was AssertionError
        EngineConfig(device="cuda")


def test_kv_cache_allocation_failure_names_kv_cache_memory() -> None:
    from deepinfer_core.config import EngineConfig
    from deepinfer_core.engine.engine_core import EngineCore

    class RefusingRunner:
        def kv_bytes_per_block(self) -> int:
            return 1024

        def allocate_kv_cache(self, num_blocks: int | None = None) -> int:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory")

    with pytest.raises(ValueError, match="kv_cache_memory: cannot allocate 1024 KV blocks"):
        EngineCore(RefusingRunner(), EngineConfig(kv_cache_memory=1 << 20), 64, 100, None)


def test_logprobs_above_a_small_vocabulary_are_rejected() -> None:
    # top-N logprobs over a vocabulary smaller than N made torch.topk fail inside the step, aborting the batch.
    with pytest.raises(ValueError, match="logprobs must be <= 10, got 15"):
        SamplingParams(logprobs=15).validate(vocab_size=10)
    with pytest.raises(ValueError, match="prompt_logprobs must be <= 10, got 11"):
        SamplingParams(prompt_logprobs=11).validate(vocab_size=10)
    SamplingParams(logprobs=10, prompt_logprobs=10).validate(vocab_size=10)


def test_device_auto_resolves_to_cuda_when_available(monkeypatch):
    import torch

    from deepinfer_core import EngineConfig

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert EngineConfig().device == "cpu"
    if not torch.backends.cuda.is_built():   # CPU build: resolving to cuda must then fail, naming the field
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        with pytest.raises(ValueError, match="device: 'cuda' is not available"):
            EngineConfig()


def test_meta_device_is_refused_by_name():
    from deepinfer_core.config import EngineConfig

    with pytest.raises(ValueError, match="^device: 'meta'"):
        EngineConfig(model="unused", device="meta")

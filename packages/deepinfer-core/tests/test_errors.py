# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Bad inputs: clear ValueErrors naming the field; in a batch, one bad request fails alone."""

from __future__ import annotations

import pytest
from deepinfer_recipe import IncrementalDetokenizer

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


def test_a_request_failing_in_detokenization_fails_alone(llm: LLM, monkeypatch) -> None:
    bad_prompt = llm.get_tokenizer().encode("please break")

    class Breaking(IncrementalDetokenizer):
        def push(self, ids) -> str:
            raise RuntimeError("detokenizer exploded")

    def factory(decode, prompt_ids, **kwargs):
        cls = Breaking if list(prompt_ids)[-3:] == bad_prompt[-3:] else IncrementalDetokenizer
        return cls(decode, prompt_ids, **kwargs)

    monkeypatch.setattr(output_processor, "IncrementalDetokenizer", factory)
    outs = llm.generate(["fine one", "please break", "fine two"], SamplingParams(temperature=0, max_tokens=5,
                                                                                  n=2, ignore_eos=True))
    assert outs[1].error == "RuntimeError: detokenizer exploded"
    assert [c.finish_reason for c in outs[1].outputs] == ["error", "error"]
    for o in (outs[0], outs[2]):
        assert o.error is None and [len(c.token_ids) for c in o.outputs] == [5, 5]
    assert not llm.engine.has_unfinished()
    assert llm.engine.scheduler.kv.num_free_blocks == llm.engine.scheduler.kv.pool.num_blocks

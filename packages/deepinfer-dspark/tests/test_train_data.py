# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Training data: stdlib docstrings as prompts, and the target's replies from the engine.

Docstrings are checked against `inspect.getdoc` of the live stdlib objects; the engine's greedy
replies against HF transformers' greedy `generate` on the same chat-templated prompt.
"""

from __future__ import annotations

import inspect
import json
import textwrap

import pytest
import torch
import transformers

from deepinfer_core import LLM

from deepinfer_dspark.train.data import (TEMPLATES, TrainingSequence, build_prompts, generate_sequences,
                                         stdlib_docstrings, unused_special_token)
from deepinfer_dspark.train.tiny import build_tiny_target

PROMPTS = ["What does zip do?", "Explain a dict.", "Sort a list.", "Hello!"]


def test_stdlib_docstrings_are_the_stdlib_docs() -> None:
    docs = stdlib_docstrings(seed=0)
    assert len(docs) > 1000 and len(set(docs)) == len(docs)
    assert all(40 <= len(d) <= 1500 for d in docs)
    for obj in (json, json.dumps, textwrap.dedent, inspect.getdoc):
        assert inspect.getdoc(obj)[:1500].strip() in docs, obj
    assert stdlib_docstrings(50, seed=0) == docs[:50]               # deterministic, capped
    reshuffled = stdlib_docstrings(seed=1)
    assert reshuffled[:50] != docs[:50] and sorted(reshuffled) == sorted(docs)


def test_docstring_walk_skips_tests_broken_files_and_duplicates(tmp_path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "test").mkdir()
    doc = "A module docstring that is long enough to be kept."
    (tmp_path / "a.py").write_text(f'"""{doc}"""\ndef f():\n    """Short."""\n')
    (tmp_path / "pkg" / "b.py").write_text(f'"""{doc}"""\nclass C:\n    """{doc} Twice as long, {doc}"""\n')
    (tmp_path / "test" / "c.py").write_text('"""A test module docstring, long enough to be kept too."""\n')
    (tmp_path / "broken.py").write_text("def (:\n")
    docs = stdlib_docstrings(root=tmp_path, max_chars=60)
    assert sorted(docs) == sorted([doc, f"{doc} Twice as long, {doc}"[:60].strip()])
    with pytest.raises(ValueError, match="limit"):
        stdlib_docstrings(-1, root=tmp_path)


def test_build_prompts_cycles_templates() -> None:
    prompts = build_prompts(["d0", "d1", "d2", "d3", "d4"])
    assert prompts[0] == TEMPLATES[0].format(doc="d0")
    assert prompts[4] == TEMPLATES[0].format(doc="d4")
    assert prompts[1] == TEMPLATES[1].format(doc="d1")


def test_build_prompts_per_docstring_uses_distinct_templates() -> None:
    docs = ["d0", "d1", "d2"]
    assert build_prompts(docs, 1) == build_prompts(docs)
    three = build_prompts(docs, 3)
    assert len(three) == 9
    assert three[3:6] == [TEMPLATES[(1 + j) % len(TEMPLATES)].format(doc="d1") for j in range(3)]
    every = build_prompts(["x"], len(TEMPLATES))
    assert sorted(every) == sorted(t.format(doc="x") for t in TEMPLATES)
    for bad in (0, len(TEMPLATES) + 1):
        with pytest.raises(ValueError, match="per_doc"):
            build_prompts(docs, bad)


@pytest.fixture(scope="module")
def target_folder(tmp_path_factory):
    return build_tiny_target(tmp_path_factory.mktemp("tiny-target"), seed=2)


def test_replies_are_the_targets_greedy_generations(target_folder) -> None:
    llm = LLM(str(target_folder), dtype="float32", max_model_len=256)
    seqs = generate_sequences(llm, PROMPTS, 12)
    assert len(seqs) == len(PROMPTS)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(target_folder))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(target_folder), dtype=torch.float32).eval()
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for prompt, seq in zip(PROMPTS, seqs):
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert list(seq.token_ids[:seq.prompt_len]) == ids
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False, eos_token_id=eos,
                                 pad_token_id=eos)
        assert list(seq.token_ids[seq.prompt_len:]) == out[0, len(ids):].tolist()


def test_rejected_requests_are_left_out(target_folder) -> None:
    llm = LLM(str(target_folder), dtype="float32", max_model_len=64)
    seqs = generate_sequences(llm, ["short", "x" * 200, "also short"], 4)
    assert len(seqs) == 2 and all(len(s.token_ids) <= 64 for s in seqs)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate_sequences(llm, ["a"], 0)


def test_mask_token_is_an_unused_special() -> None:
    class Tok:
        all_special_ids = [258, 256, 257]
        added_tokens_decoder = {}

    seqs = [TrainingSequence((1, 256, 3, 257), 2)]
    assert unused_special_token(Tok(), seqs, 259) == 258
    with pytest.raises(ValueError, match="mask_token_id"):
        unused_special_token(Tok(), [TrainingSequence((256, 257, 258), 1)], 259)
    with pytest.raises(ValueError, match="prompt_len"):
        TrainingSequence((1, 2), 3)

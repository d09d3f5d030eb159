# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Tokenizer + chat template loading: the default GGUF vs transformers' GGUF tokenizer, and HF folders."""

from __future__ import annotations

import pytest
from gguf import GGUFReader
from transformers import AutoTokenizer

from deepinfer_core import assets
from deepinfer_core.loader import load_tokenizer

TEXTS = ["Hello, world!", "  leading spaces and tabs\tand\nnewlines", "naïve café — 東京 🚀",
         "<|im_start|>user\nhi<|im_end|>"]
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}]


@pytest.fixture(scope="module")
def gguf_path():
    return assets.default_model_path()


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("deepinfer-cache")


@pytest.fixture(scope="module")
def reference(gguf_path):
    return AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)


def check_same(ours, ref) -> None:
    for text in TEXTS:
        ids = ref(text, add_special_tokens=False).input_ids
        assert ours(text, add_special_tokens=False).input_ids == ids
        assert ours.decode(ids) == ref.decode(ids)
    for gen in (False, True):
        expected = ref.apply_chat_template(CHAT, add_generation_prompt=gen, tokenize=False)
        assert ours.apply_chat_template(CHAT, add_generation_prompt=gen, tokenize=False) == expected
    assert (ours.eos_token_id, ours.bos_token_id, len(ours)) == (ref.eos_token_id, ref.bos_token_id, len(ref))


def test_gguf_tokenizer_matches_transformers_and_cache(gguf_path, reference, cache_root):
    first = load_tokenizer(gguf_path, cache_root=cache_root)  # converts and caches
    cached = list((cache_root / "tokenizers").iterdir())
    assert len(cached) == 1 and (cached[0] / "tokenizer.json").is_file()
    second = load_tokenizer(gguf_path, cache_root=cache_root)  # reads the cache
    check_same(first, reference)
    check_same(second, reference)


def test_chat_template_is_the_gguf_metadata_template(gguf_path, cache_root):
    stored = GGUFReader(str(gguf_path)).get_field("tokenizer.chat_template").contents()
    assert load_tokenizer(gguf_path, cache_root=cache_root).chat_template == stored


def test_hf_folder_tokenizer(tiny_checkpoint):
    folder = tiny_checkpoint("qwen2")
    ours, ref = load_tokenizer(folder), AutoTokenizer.from_pretrained(str(folder))
    assert ours("héllo").input_ids == ref("héllo").input_ids
    assert ours.chat_template == ref.chat_template is not None


def test_missing_tokenizer_path_names_field(tmp_path):
    with pytest.raises(ValueError, match="tokenizer"):
        load_tokenizer(tmp_path / "nope")

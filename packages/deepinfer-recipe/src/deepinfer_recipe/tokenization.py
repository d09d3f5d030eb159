# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Token-id encoding of prompts with control-token defense (needs the ``tokenizers`` extra).

Special (added) tokens are recognised only inside template segments. Everything else —
client content and the plain-text parts of the template between two special tokens — is
encoded by a copy of the tokenizer whose added vocabulary is empty, so a client string
equal to ``<｜User｜>`` or ``<|im_start|>`` becomes ordinary byte-level BPE pieces.

Because the full tokenizer also splits its input at added tokens before running the model,
a benign prompt gets exactly the ids that whole-string encoding would give (tested on the
real DeepSeek-V3 and Qwen3 tokenizers).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from deepinfer_recipe.encoding.prompt import Prompt


def added_token_strings(tokenizer_json: dict) -> list[str]:
    """Every added-token string of a ``tokenizer.json`` document (special or not).

    Args:
        tokenizer_json: The parsed ``tokenizer.json``.

    Returns:
        The token strings, in file order.
    """
    return [tok["content"] for tok in tokenizer_json.get("added_tokens", [])]


class PromptTokenizer:
    """Encode :class:`Prompt` segments to ids without letting client text become control ids.

    Args:
        tokenizer_json: The parsed ``tokenizer.json`` (Hugging Face ``tokenizers`` format).

    Raises:
        ImportError: the ``tokenizers`` package is missing (install ``deepinfer-recipe[tokenizers]``).
    """

    def __init__(self, tokenizer_json: dict) -> None:
        from tokenizers import Tokenizer

        self._full = Tokenizer.from_str(json.dumps(tokenizer_json))
        plain = copy.deepcopy(tokenizer_json)
        plain["added_tokens"] = []
        self._plain = Tokenizer.from_str(json.dumps(plain))
        self.added_tokens: dict[str, int] = {t["content"]: t["id"] for t in tokenizer_json.get("added_tokens", [])}
        self.special_ids = frozenset(self.added_tokens.values())
        ordered = sorted(self.added_tokens, key=len, reverse=True)
        self._split = re.compile("|".join(re.escape(t) for t in ordered)) if ordered else None

    @classmethod
    def from_file(cls, path: str | Path) -> PromptTokenizer:
        """Load from a ``tokenizer.json`` path (or a folder that holds one)."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        return cls(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def from_hf(cls, tokenizer) -> PromptTokenizer:
        """Build from a transformers fast tokenizer (uses its ``backend_tokenizer``; no import)."""
        return cls(json.loads(tokenizer.backend_tokenizer.to_str()))

    def encode(self, prompt: Prompt) -> list[int]:
        """Token ids of a prompt.

        Args:
            prompt: Segments from an encoder.

        Returns:
            Ids; an added-token id appears only where a template segment spells that token.
        """
        ids: list[int] = []
        run: list[str] = []
        for seg in prompt.segments:
            if not seg.control or self._split is None:
                run.append(seg.text)
                continue
            pos = 0
            for match in self._split.finditer(seg.text):
                run.append(seg.text[pos : match.start()])
                ids.extend(self.encode_plain("".join(run)))
                run = []
                ids.append(self.added_tokens[match.group(0)])
                pos = match.end()
            run.append(seg.text[pos:])
        ids.extend(self.encode_plain("".join(run)))
        return ids

    def encode_plain(self, text: str) -> list[int]:
        """Ids of ``text`` with no added-token matching (every character is plain text)."""
        if not text:
            return []
        return self._plain.encode(text, add_special_tokens=False).ids

    def encode_with_specials(self, text: str) -> list[int]:
        """Ids of ``text`` with added tokens recognised anywhere (the unsafe whole-string path)."""
        return self._full.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """Text of ``ids``; partial UTF-8 sequences decode to U+FFFD."""
        return self._full.decode(ids, skip_special_tokens=skip_special_tokens)

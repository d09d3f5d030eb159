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
from collections.abc import Sequence
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

        # No padding or truncation a tokenizer.json may carry: a batch would pad every run to
        # the longest, and truncation would cut runs, where a prompt's ids must be its text's.
        unpadded = {**tokenizer_json, "padding": None, "truncation": None}
        self._full = Tokenizer.from_str(json.dumps(unpadded))
        plain = copy.deepcopy(unpadded)
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
        for piece in self._pieces(prompt):
            if isinstance(piece, int):
                ids.append(piece)
            else:
                ids.extend(self.encode_plain(piece))
        return ids

    def encode_batch(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """Token ids of several prompts: the plain-text runs of all of them go to the tokenizer
        in one ``Tokenizer.encode_batch`` call (the ``tokenizers`` library encodes them on its
        own threads), so a batch of chat prompts spends less time in Python and on one core.

        Args:
            prompts: Segments from an encoder, one :class:`Prompt` per item.

        Returns:
            One id list per prompt, in order, equal to :meth:`encode` of that prompt.

        Raises:
            Exception: whatever the tokenizer raises for a run it cannot encode (e.g. ``TypeError``
                for a lone surrogate), for the whole batch; a caller that must keep the other
                prompts then encodes them one by one with :meth:`encode`.
        """
        plans = [self._pieces(prompt) for prompt in prompts]
        texts = [piece for plan in plans for piece in plan if not isinstance(piece, int)]
        runs = iter(self._plain.encode_batch(texts, add_special_tokens=False) if texts else ())
        out: list[list[int]] = []
        for plan in plans:
            ids: list[int] = []
            for piece in plan:
                if isinstance(piece, int):
                    ids.append(piece)
                else:
                    ids.extend(next(runs).ids)
            out.append(ids)
        return out

    def _pieces(self, prompt: Prompt) -> list[str | int]:
        """The prompt as non-empty plain-text runs (str) and added-token ids (int), in order:
        runs join client text with the template text around it up to the next added token."""
        pieces: list[str | int] = []
        run: list[str] = []
        for seg in prompt.segments:
            if not seg.control or self._split is None:
                run.append(seg.text)
                continue
            pos = 0
            for match in self._split.finditer(seg.text):
                run.append(seg.text[pos : match.start()])
                text = "".join(run)
                if text:
                    pieces.append(text)
                run = []
                pieces.append(self.added_tokens[match.group(0)])
                pos = match.end()
            run.append(seg.text[pos:])
        text = "".join(run)
        if text:
            pieces.append(text)
        return pieces

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

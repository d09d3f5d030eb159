# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Structured-output masks on a toy vocabulary against brute force.

The toy vocabulary: 256 byte tokens, a few multi-byte merges ("ab", "abc", '{"', ...), EOS and
padding ids past the tokenizer. The reference is the third-party `regex` module's partial
matching: token t may follow prefix p iff `p + bytes(t)` can still be extended to a full match;
EOS iff p is a full match. llguidance also drops a token that is a strict prefix of forced bytes
when a longer allowed token covers them (it keeps tokenization canonical), so the check is:
allowed is a subset of the brute-force set, EOS agrees exactly, and every brute-force token left
out is a strict byte prefix of an allowed token. The masks go through our batch fill
(`GuidanceBackend.fill_bitmask`, rows shuffled, unconstrained rows between) and are applied with
`ops.apply_token_bitmask` to poisoned random logits.
"""

from __future__ import annotations

import random

import pytest
import torch
from deepinfer_kernels import ops

regex = pytest.importorskip("regex")
pytest.importorskip("llguidance")

from deepinfer_core.structured.backend import GuidanceBackend  # noqa: E402
from deepinfer_core.structured.params import StructuredOutputs  # noqa: E402
from deepinfer_core.structured.state import GrammarState  # noqa: E402

MERGES = ["ab", "abc", "cd", "12", "123", "x1", '{"', '":', '",', "1.", "e+", "tr", "tru", "true"]
PATTERNS = [r"(ab|cd)[0-9]{1,3}x?", r"abc(12|x1)+", r"[a-d]+\.[0-9]{2}", r'\{"a":(true|false)\}',
            r"(abc|ab)c?d", r"-?[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?"]
PAD = 5  # logits columns past the tokenizer (never allowed)


@pytest.fixture(scope="module")
def toy():
    """(tokenizer JSON, vocab size V, EOS id, {token id: bytes})."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    b2u = bytes_to_unicode()
    u2b = {v: k for k, v in b2u.items()}
    vocab = {b2u[i]: i for i in range(256)}
    merges = []
    for word in MERGES:
        chars = "".join(b2u[b] for b in word.encode())
        left, right = next((chars[:c], chars[c:]) for c in range(len(chars) - 1, 0, -1)
                           if chars[:c] in vocab and chars[c:] in vocab)
        merges.append((left, right))
        vocab[chars] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<eos>"])
    eos = tok.token_to_id("<eos>")
    token_bytes = {i: bytes(u2b[c] for c in t) for t, i in tok.get_vocab().items() if i != eos}
    return tok.to_str(), tok.get_vocab_size() + PAD, eos, token_bytes


def brute_force(pattern: str, prefix: bytes, token_bytes: dict[int, bytes], eos: int) -> set[int]:
    allowed = {t for t, b in token_bytes.items()
               if regex.fullmatch(pattern, (prefix + b).decode("latin-1"), partial=True)}
    if regex.fullmatch(pattern, prefix.decode("latin-1")):
        allowed.add(eos)
    return allowed


def unpack(bitmask_row: torch.Tensor, vocab: int) -> set[int]:
    bits = (bitmask_row.unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1
    return set(torch.nonzero(bits.flatten()[:vocab]).flatten().tolist())


def check_mask(allowed: set[int], expected: set[int], token_bytes: dict[int, bytes], eos: int) -> None:
    assert allowed <= expected, f"tokens outside the language: {sorted(allowed - expected)}"
    assert (eos in allowed) == (eos in expected)
    longer = [token_bytes[t] for t in allowed if t != eos]
    for t in expected - allowed:  # left out only in favour of a longer token over forced bytes
        assert any(len(b) > len(token_bytes[t]) and b.startswith(token_bytes[t]) for b in longer), t


def test_batch_masks_match_brute_force_and_apply(toy) -> None:
    tokenizer_json, vocab, eos, token_bytes = toy
    backend = GuidanceBackend(tokenizer_json, vocab, eos)
    grammars = {p: backend.compile(StructuredOutputs(regex=p)) for p in PATTERNS}
    rnd = random.Random(0)
    walks = [(p, seed) for p in PATTERNS for seed in range(3)]
    states = [GrammarState(grammars[p]) for p, _ in walks]
    prefixes = [b""] * len(walks)
    done = [False] * len(walks)
    batch = 2 * len(walks)  # every other row unconstrained
    for _ in range(24):
        live = [i for i in range(len(walks)) if not done[i]]
        if not live:
            break
        rows = rnd.sample(range(batch), len(live))
        bitmask = torch.full((batch, backend.bitmask_width), 0x5A5A5A5A, dtype=torch.int32)  # poison
        backend.fill_bitmask([(states[i].matcher, r) for i, r in zip(live, rows)], bitmask)
        logits = torch.randn(batch, vocab) + 3.0
        original = logits.clone()
        ops.apply_token_bitmask(logits, bitmask, torch.tensor(rows))
        for i, r in zip(live, rows):
            pattern = walks[i][0]
            expected = brute_force(pattern, prefixes[i], token_bytes, eos)
            allowed = unpack(bitmask[r], vocab)
            check_mask(allowed, expected, token_bytes, eos)
            keep = torch.zeros(vocab, dtype=torch.bool)
            keep[sorted(allowed)] = True
            torch.testing.assert_close(logits[r], original[r].masked_fill(~keep, float("-inf")))
            token = rnd.choice(sorted(allowed))
            assert states[i].accept([token])
            done[i] = token == eos
            if not done[i]:
                prefixes[i] += token_bytes[token]
        untouched = sorted(set(range(batch)) - set(rows))
        torch.testing.assert_close(logits[untouched], original[untouched])
    assert all(done) or any(prefixes)


def test_rollback_and_validate_agree_with_replay(toy) -> None:
    tokenizer_json, vocab, eos, token_bytes = toy
    backend = GuidanceBackend(tokenizer_json, vocab, eos)
    grammar = backend.compile(StructuredOutputs(regex=r"-?[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?"))
    by_bytes = {b: t for t, b in token_bytes.items()}
    tokens = [by_bytes[b] for b in (b"-", b"123", b"1.", b"5", b"e+", b"7")]
    state = GrammarState(grammar)
    assert state.accept(tokens)
    state.rollback(3)
    assert state.num_tokens == 3
    fresh = GrammarState(grammar)
    assert fresh.accept(tokens[:3])
    rolled, replayed = (torch.zeros(1, backend.bitmask_width, dtype=torch.int32) for _ in range(2))
    state.fill_bitmask(rolled)
    fresh.fill_bitmask(replayed)
    assert torch.equal(rolled, replayed)
    assert unpack(rolled[0], vocab) <= brute_force(r"-?[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?", b"-1231.", token_bytes, eos)
    # Drafts: the grammar takes "5", "e+", "7", then rejects "x1"; nothing is consumed.
    assert state.validate(tokens[3:] + [by_bytes[b"x1"]]) == 3
    assert state.num_tokens == 3 and state.accept(tokens[3:]) and state.is_accepting
    with pytest.raises(ValueError, match="num_tokens"):
        state.rollback(7)


def test_eos_only_when_accepting_and_rejected_token_fails(toy) -> None:
    tokenizer_json, vocab, eos, token_bytes = toy
    backend = GuidanceBackend(tokenizer_json, vocab, eos)
    state = GrammarState(backend.compile(StructuredOutputs(choice=["ab", "abcd"])))
    by_bytes = {b: t for t, b in token_bytes.items()}
    mask = torch.zeros(1, backend.bitmask_width, dtype=torch.int32)
    state.fill_bitmask(mask)
    assert eos not in unpack(mask[0], vocab)
    assert state.accept([by_bytes[b"ab"]]) and state.is_accepting
    state.fill_bitmask(mask)
    allowed = unpack(mask[0], vocab)
    assert eos in allowed and allowed <= brute_force(r"ab|abcd", b"ab", token_bytes, eos)
    assert not state.accept([by_bytes[b"x1"]])
    assert state.error is not None

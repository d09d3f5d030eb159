# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""GrammarState: one request's position in its grammar (accept, rollback, next-token mask)."""

from __future__ import annotations

import torch

from deepinfer_core.structured.backend import CompiledGrammar


class GrammarState:
    """The matcher of one request; it has consumed exactly `num_tokens` output tokens.

    The engine keeps `num_tokens == len(request.output_token_ids)`: tokens are accepted as
    they are sampled and never re-fed (a recompute after preemption recomputes KV only), so the
    state is right after preemption by construction. A speculative decoder checks drafts with
    `validate`, or accepts them and `rollback`s the rejected ones.

    Args:
        grammar: the compiled grammar to follow.
    """

    def __init__(self, grammar: CompiledGrammar) -> None:
        self.grammar = grammar
        self.matcher, self.shard = grammar.new_matcher()
        self.tokens: list[int] = []   # consumed so far, in order (replayed by `move_to`)

    @property
    def num_tokens(self) -> int:
        """Tokens consumed so far."""
        return len(self.tokens)

    def consumed(self, token_id: int) -> None:
        """Records a token the matcher consumed outside `accept` (a batched consume)."""
        self.tokens.append(token_id)

    def accept(self, token_ids: list[int]) -> bool:
        """Consumes tokens in order; False (and an error state) if the grammar rejects one.

        EOS is accepted only when the text so far is a complete match; after it the matcher is
        terminated.
        """
        for token_id in token_ids:
            if not self.matcher.consume_token(token_id) or self.matcher.is_error():
                return False
            self.tokens.append(token_id)
        return True

    def move_to(self, matcher: object, shard: int) -> bool:
        """Replaces the matcher by `matcher` (start state, template `shard`) after replaying the
        tokens consumed so far; False, changing nothing, if the new matcher rejects them."""
        for token_id in self.tokens:
            if not matcher.consume_token(token_id) or matcher.is_error():
                return False
        self.matcher, self.shard = matcher, shard
        return True

    def validate(self, token_ids: list[int]) -> int:
        """How many leading `token_ids` the grammar would accept, without consuming any."""
        return self.matcher.validate_tokens(token_ids)

    def rollback(self, num_tokens: int) -> None:
        """Un-consumes the last `num_tokens` tokens.

        Raises:
            ValueError: `num_tokens` is negative or more than were consumed (names `num_tokens`).
        """
        if not 0 <= num_tokens <= self.num_tokens:
            raise ValueError(f"num_tokens must be in [0, {self.num_tokens}], got {num_tokens}")
        if num_tokens and not self.matcher.rollback(num_tokens):
            raise ValueError(f"num_tokens: the matcher cannot roll back {num_tokens} tokens ({self.error})")
        del self.tokens[len(self.tokens) - num_tokens:]

    def fill_bitmask(self, bitmask: torch.Tensor, row: int = 0) -> None:
        """Writes the next-token mask into `bitmask[row]` ([B, ceil(V/32)] int32, CPU, contiguous).

        Bit `t % 32` of word `t // 32` is set when token t may come next (EOS only when
        `is_accepting`). Batches go through `GuidanceBackend.fill_bitmask` instead.
        """
        words = bitmask[row]
        if bitmask.dtype != torch.int32 or bitmask.device.type != "cpu" or not words.is_contiguous():
            raise ValueError("bitmask: need a contiguous CPU int32 tensor")
        self.matcher.unsafe_compute_mask_ptr(words.data_ptr(), words.numel() * 4)

    @property
    def is_accepting(self) -> bool:
        """The output so far is a complete match (EOS may come next)."""
        return self.matcher.is_accepting()

    @property
    def is_terminated(self) -> bool:
        """No token but EOS can follow (or EOS was consumed, or the state is an error)."""
        return self.matcher.is_stopped()

    @property
    def error(self) -> str | None:
        """The matcher's error message once a token was rejected, else None."""
        return self.matcher.get_error() if self.matcher.is_error() else None

# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Repetition, presence and frequency penalties over per-request token statistics.

Each penalised request keeps a `PenaltyState` (a prompt-token mask and output-token counts over
the vocabulary) that is updated with only the tokens added since the last step, so a step costs
O(new tokens) Python per request, never O(history).
"""

from __future__ import annotations

import torch


class PenaltyState:
    """Token statistics of one request on the logits' device.

    Args:
        prompt_token_ids: the prompt.
        vocab_size: V.
        device: where the statistics live.

    Attributes:
        prompt_mask: [V] bool, token occurs in the prompt.
        output_counts: [V] float32, occurrences in the output so far.
    """

    def __init__(self, prompt_token_ids: list[int], vocab_size: int, device: torch.device) -> None:
        self.prompt_mask = torch.zeros(vocab_size, dtype=torch.bool, device=device)
        self.prompt_mask[torch.tensor(prompt_token_ids, dtype=torch.int64, device=device)] = True
        self.output_counts = torch.zeros(vocab_size, dtype=torch.float32, device=device)
        self.num_counted = 0

    def sync(self, output_token_ids: list[int]) -> None:
        """Counts the output tokens added since the last call."""
        new = output_token_ids[self.num_counted:]
        if new:
            index = torch.tensor(new, dtype=torch.int64, device=self.output_counts.device)
            self.output_counts.index_put_((index,), torch.ones_like(index, dtype=torch.float32), accumulate=True)
            self.num_counted = len(output_token_ids)


def apply_penalties(logits: torch.Tensor, prompt_mask: torch.Tensor, output_counts: torch.Tensor,
                    repetition: torch.Tensor, presence: torch.Tensor, frequency: torch.Tensor) -> torch.Tensor:
    """Applies the three penalties row-wise and returns the new logits.

    Repetition (CTRL, Keskar et al. 2019; as in HF `RepetitionPenaltyLogitsProcessor` and vLLM,
    over prompt and output tokens): a seen token's logit `l` becomes `l / r` if `l > 0` else
    `l * r`. Then presence/frequency (OpenAI API definition, output tokens only):
    `l -= frequency * count + presence * (count > 0)`.

    Args:
        logits: [B, V] float32.
        prompt_mask: [B, V] bool.
        output_counts: [B, V] float32.
        repetition: [B] float32 (> 0; 1 = off).
        presence: [B] float32.
        frequency: [B] float32.

    Returns:
        [B, V] float32 penalised logits (a new tensor).
    """
    in_output = output_counts > 0
    seen = prompt_mask | in_output
    r = repetition.unsqueeze(1)
    logits = torch.where(seen, torch.where(logits > 0, logits / r, logits * r), logits)
    return logits - frequency.unsqueeze(1) * output_counts - presence.unsqueeze(1) * in_output.to(logits.dtype)

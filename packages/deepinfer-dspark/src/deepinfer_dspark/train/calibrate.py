# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Offline confidence calibration: held-out greedy rollouts -> STS -> `calibration.json`.

Sequential temperature scaling (DSpark, Cheng et al. 2026, section 3.3; see
`deepinfer_dspark.calibration`) needs, per rollout, the raw confidence logits of the γ drafted
positions and how many drafts the target accepted. A rollout here is what one greedy serving
round does: at anchor s of a held-out sequence the drafter (the engine's own
`DSparkDraftRunner`, context = the target features of positions 0..s-1) drafts γ tokens
greedily; the target then runs over `tokens[0..s] + drafts` and the accepted length is the
number of leading drafts equal to its argmax. The fit is therefore for greedy (T = 0) serving.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from deepinfer_dspark.calibration import SequentialTemperatureScaling, cumulative_ece
from deepinfer_dspark.draft_runner import DraftRequest, DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.train.blocks import pad_batch, sample_anchors
from deepinfer_dspark.train.data import TrainingSequence
from deepinfer_dspark.train.features import TargetModel

CALIBRATION_FILE = "calibration.json"


@dataclass
class Rollouts:
    """Greedy rollouts with every drafted token verified.

    Attributes:
        confidence_logits: `[N, γ]` float32 raw confidence logits.
        accepted: `[N]` int64 accepted drafts (0..γ).
        drafts: `[N, γ]` int64 drafted tokens.
        sequence_index: `[N]` int64 index of the rollout's sequence in the input list.
        anchors: `[N]` int64 anchor position s of each rollout.
    """

    confidence_logits: torch.Tensor
    accepted: torch.Tensor
    drafts: torch.Tensor
    sequence_index: torch.Tensor
    anchors: torch.Tensor

    @property
    def mean_accepted(self) -> float:
        """Mean accepted drafts per round (add 1 for the tokens a round emits)."""
        return float(self.accepted.float().mean()) if self.accepted.numel() else 0.0


@torch.no_grad()
def greedy_rollouts(drafter: DSparkDrafter, target: TargetModel, sequences: Sequence[TrainingSequence],
                    num_tokens: int, anchors_per_sequence: int = 16, seed: int = 0,
                    batch_size: int = 16) -> Rollouts:
    """Drafts and verifies γ = `num_tokens` tokens at random reply anchors of each sequence.

    Args:
        drafter: the drafter (any dtype; on the target's device), with a confidence head.
        target: the frozen target with the drafter's `target_layer_ids`.
        sequences: held-out sequences.
        num_tokens: γ, drafts per rollout (<= block_size).
        anchors_per_sequence: rollouts per sequence (fewer for short replies).
        seed: anchor draws.
        batch_size: sequences per target forward.

    Raises:
        ValueError: the drafter has no confidence head, or `num_tokens` is out of range (named).
    """
    if drafter.confidence_head is None:
        raise ValueError("drafter: calibration needs a confidence head (enable_confidence_head)")
    runner = DSparkDraftRunner(drafter.eval(), graphs=False)   # one-off shapes: nothing to replay
    generator = torch.Generator().manual_seed(seed)
    logits, accepted, drafted, where = [], [], [], []
    for start in range(0, len(sequences), batch_size):
        indices = [i for i in range(start, min(start + batch_size, len(sequences))) if sequences[i].reply_len > 0]
        chunk = [sequences[i] for i in indices]
        if not chunk:
            continue
        ids, lengths = pad_batch([s.token_ids for s in chunk])
        features = target(ids.to(target.device)).features
        seq_index, anchors = sample_anchors(lengths.tolist(), [s.prompt_len for s in chunk],
                                            anchors_per_sequence, generator)
        for i, s in enumerate(chunk):
            runner.observe(str(i), list(range(len(s.token_ids))), features[i, :len(s.token_ids)])
        rows = list(zip(seq_index.tolist(), anchors.tolist()))
        for group in _distinct_groups([i for i, _ in rows]):
            picked = [rows[r] for r in group]
            requests = [DraftRequest(str(i), chunk[i].token_ids[s], s) for i, s in picked]
            outs = runner.draft(requests, num_tokens)
            drafts = [o.tokens.tolist() for o in outs]
            prefixes = [list(chunk[i].token_ids[:s + 1]) for i, s in picked]
            accepted += _accepted_lengths(target, prefixes, drafts)
            logits += [o.confidence_logits.float().cpu() for o in outs]
            drafted += drafts
            where += [(indices[i], s) for i, s in picked]
        for i in range(len(chunk)):
            runner.remove(str(i))
    if not logits:
        raise ValueError("sequences: no held-out sequence has a reply to roll out on")
    index = torch.tensor(where, dtype=torch.int64)
    return Rollouts(torch.stack(logits), torch.tensor(accepted, dtype=torch.int64),
                    torch.tensor(drafted, dtype=torch.int64), index[:, 0], index[:, 1])


def _distinct_groups(seq_index: list[int]) -> list[list[int]]:
    """Splits rows into groups where each sequence appears at most once (one draft call each)."""
    groups: list[list[int]] = []
    seen: list[set[int]] = []
    for row, seq in enumerate(seq_index):
        for group, ids in zip(groups, seen):
            if seq not in ids:
                group.append(row)
                ids.add(seq)
                break
        else:
            groups.append([row])
            seen.append({seq})
    return groups


def _accepted_lengths(target: TargetModel, prefixes: list[list[int]], drafts: list[list[int]]) -> list[int]:
    """Leading drafts equal to the target's greedy choice after `prefix` (+ earlier drafts)."""
    ids, _ = pad_batch([p + d for p, d in zip(prefixes, drafts)])
    greedy = target(ids.to(target.device)).logits.argmax(dim=-1).cpu()
    out = []
    for row, (prefix, draft) in enumerate(zip(prefixes, drafts)):
        s = len(prefix) - 1
        n = 0
        while n < len(draft) and int(greedy[row, s + n]) == draft[n]:
            n += 1
        out.append(n)
    return out


def fit_calibration(rollouts: Rollouts) -> tuple[SequentialTemperatureScaling, dict]:
    """STS temperatures and a report (cumulative ECE per position before and after, mean accepted).

    Raises:
        ValueError: no rollouts (from `SequentialTemperatureScaling.fit`).
    """
    sts = SequentialTemperatureScaling.fit(rollouts.confidence_logits, rollouts.accepted)
    raw = cumulative_ece(torch.sigmoid(rollouts.confidence_logits.double()), rollouts.accepted)
    fitted = cumulative_ece(sts.apply(rollouts.confidence_logits.double()), rollouts.accepted)
    report = {"rollouts": int(rollouts.accepted.numel()), "mean_accepted": rollouts.mean_accepted,
              "temperatures": list(sts.temperatures), "ece_raw": raw.tolist(), "ece_calibrated": fitted.tolist()}
    return sts, report


def calibrate_checkpoint(folder: str | Path, drafter: DSparkDrafter, target: TargetModel,
                         sequences: Sequence[TrainingSequence], anchors_per_sequence: int = 16,
                         seed: int = 0) -> dict:
    """Fits STS on held-out rollouts and writes `<folder>/calibration.json`.

    The file is what `speculative_config["calibration"]` takes: one temperature per block
    position (γ = block_size; the engine uses the first k for k speculative tokens).

    Returns:
        The report of `fit_calibration` plus `"path"`.
    """
    gamma = drafter.config.block_size
    rollouts = greedy_rollouts(drafter, target, sequences, gamma, anchors_per_sequence, seed)
    sts, report = fit_calibration(rollouts)
    path = Path(folder) / CALIBRATION_FILE
    sts.save(path)
    return {**report, "path": str(path)}

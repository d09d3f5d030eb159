# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Training a drafter for a tiny random target, end to end on the CPU.

Blocks are checked against a brute-force construction; training must lower the loss and raise
the drafter's greedy acceptance in the engine (`speculative_config`, as users load it) above an
untrained drafter's, with greedy output identical to decoding without speculation; the saved
folder must have DeepSpec's key names and shapes (the table transcribed in conftest.py).
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from deepinfer_core import LLM, SamplingParams

from deepinfer_dspark import load_checkpoint
from deepinfer_dspark.train.blocks import build_blocks, pad_batch, sample_anchors
from deepinfer_dspark.train.data import generate_sequences, unused_special_token
from deepinfer_dspark.train.features import TargetModel, load_hf_target
from deepinfer_dspark.train.model import drafter_config, init_drafter, save_checkpoint
from deepinfer_dspark.train.tiny import build_tiny_target
from deepinfer_dspark.train.trainer import DraftTrainer, TrainConfig, lr_factor

PROMPTS = ["Hello there, how are you?", "Explain lists.", "What is a dict?", "Write code.",
           "Tell me a story.", "Sort numbers."]
LAYERS = (0, 2)
FAST = dict(steps=50, batch_size=6, anchors_per_sequence=32, lr=1e-2, log_every=10)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = build_tiny_target(tmp_path_factory.mktemp("tiny-target"), seed=0)
    llm = LLM(str(folder), dtype="float32", max_model_len=256)
    seqs = generate_sequences(llm, PROMPTS, 32)
    target = TargetModel(load_hf_target(folder), LAYERS)
    mask = unused_special_token(llm.get_tokenizer(), seqs, target.vocab_size)
    config = drafter_config(target.config, num_layers=2, block_size=4, target_layer_ids=LAYERS,
                            mask_token_id=mask, markov_rank=32)
    return folder, seqs, target, config


@pytest.fixture(scope="module")
def trained(setup, tmp_path_factory):
    folder, seqs, target, config = setup
    untrained = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=0)
    untrained_dir = save_checkpoint(untrained, config, tmp_path_factory.mktemp("untrained"))
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=0)
    history = DraftTrainer(drafter, target, seqs, TrainConfig(**FAST)).train()
    trained_dir = save_checkpoint(drafter, config, tmp_path_factory.mktemp("trained"))
    return drafter, history, untrained_dir, trained_dir


def brute_force_blocks(seqs, seq_index, anchors, width, mask):
    """Blocks by explicit indexing of each Python list."""
    rows = []
    for b, s in zip(seq_index.tolist(), anchors.tolist()):
        seq = seqs[b]
        labels = [seq[s + k] if s + k < len(seq) else None for k in range(1, width + 1)]
        rows.append(dict(tokens=[seq[s]] + [mask] * (width - 1), positions=list(range(s, s + width)),
                         labels=labels, prev=[seq[s]] + labels[:-1]))
    return rows


def test_blocks_match_brute_force() -> None:
    gen = torch.Generator().manual_seed(0)
    seqs = [torch.randint(0, 50, (n,), generator=gen).tolist() for n in (12, 5, 20)]
    prompt_lens = [4, 4, 1]
    ids, lengths = pad_batch(seqs, pad_id=99)
    seq_index, anchors = sample_anchors(lengths.tolist(), prompt_lens, 6, gen)
    blocks = build_blocks(ids, lengths, seq_index, anchors, 4, 77)
    for r, ref in enumerate(brute_force_blocks(seqs, seq_index, anchors, 4, 77)):
        assert blocks.block_tokens[r].tolist() == ref["tokens"]
        assert blocks.positions[r].tolist() == ref["positions"]
        assert blocks.valid[r].tolist() == [x is not None for x in ref["labels"]]
        valid = blocks.valid[r]
        assert blocks.labels[r][valid].tolist() == [x for x in ref["labels"] if x is not None]
        assert [t for t, ok in zip(blocks.prev_tokens[r].tolist(), [True] + valid[:-1].tolist()) if ok] == \
            [x for x in ref["prev"] if x is not None]
        assert blocks.target_positions[r][valid].tolist() == [p for p, ok in zip(ref["positions"], valid) if ok]


def test_anchors_are_distinct_and_followed_by_a_reply_token() -> None:
    gen = torch.Generator().manual_seed(1)
    lengths, prompt_lens = [30, 10, 6, 7], [10, 10, 2, 7]
    seq_index, anchors = sample_anchors(lengths, prompt_lens, 8, gen)
    for b in range(4):
        picked = anchors[seq_index == b].tolist()
        valid = list(range(prompt_lens[b] - 1, lengths[b] - 1))
        assert len(set(picked)) == len(picked) == min(8, len(valid))
        assert set(picked) <= set(valid)
    with pytest.raises(ValueError, match="anchors_per_sequence"):
        sample_anchors(lengths, prompt_lens, 0, gen)


def test_lr_schedule() -> None:
    total = 100
    factors = [lr_factor(s, total, 0.04) for s in range(total)]
    assert factors[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert factors[4] == pytest.approx(1.0)
    assert factors[52] == pytest.approx(0.5 * (1 + math.cos(math.pi * 48 / 96)))
    assert all(a >= b for a, b in zip(factors[4:], factors[5:]))


def test_training_lowers_the_loss(trained) -> None:
    _, history, _, _ = trained
    assert len(history) == 5
    assert history[-1]["loss"] < 0.9 * history[0]["loss"]
    assert history[-1]["top1"] > history[0]["top1"]


def test_checkpoint_has_deepspec_names_and_loads(setup, trained, tiny) -> None:
    _, _, target, config = setup
    drafter, _, _, trained_dir = trained
    _, deepspec_shapes, _ = tiny
    state = load_file(str(trained_dir / "model.safetensors"))
    assert {k: tuple(v.shape) for k, v in state.items()} == deepspec_shapes(config)
    assert json.loads((trained_dir / "config.json").read_text())["architectures"] == ["Qwen3DSparkModel"]
    loaded = load_checkpoint(trained_dir)
    for name, tensor in drafter.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
    assert torch.equal(loaded.embed_tokens.weight, target.embed_weight)
    assert torch.equal(loaded.lm_head.weight, target.lm_head_weight)


def greedy_chat(llm: LLM) -> list[list[int]]:
    outs = llm.chat([[{"role": "user", "content": p}] for p in PROMPTS], SamplingParams(temperature=0, max_tokens=32))
    assert all(o.error is None for o in outs)
    return [o.outputs[0].token_ids for o in outs]


def test_trained_drafter_raises_acceptance_in_the_engine(setup, trained) -> None:
    folder = setup[0]
    _, _, untrained_dir, trained_dir = trained
    kw = dict(dtype="float32", max_model_len=256, deterministic=True)
    expected = greedy_chat(LLM(str(folder), **kw))
    accepted = {}
    for name, path in (("untrained", untrained_dir), ("trained", trained_dir)):
        llm = LLM(str(folder), speculative_config={"method": "dspark", "model": str(path),
                                                   "num_speculative_tokens": 4}, **kw)
        assert greedy_chat(llm) == expected, name
        stats = llm.engine.speculative.stats
        assert stats.verified > 0, name
        accepted[name] = stats.accepted / stats.verified
    assert accepted["trained"] > 0
    assert accepted["trained"] > accepted["untrained"] + 0.05, accepted


def test_bf16_autocast_steps(setup) -> None:
    _, seqs, target, config = setup
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=1)
    before = drafter.fc.weight.detach().clone()
    trainer = DraftTrainer(drafter, target, seqs, TrainConfig(steps=3, batch_size=2, anchors_per_sequence=4,
                                                              precision="bf16"))
    assert trainer.use_autocast
    history = trainer.train()               # the first step checks that every parameter got a gradient
    assert math.isfinite(history[-1]["loss"])
    assert not torch.equal(drafter.fc.weight, before)
    assert drafter.fc.weight.dtype == torch.float32


def test_a_time_budget_sets_the_schedule_length(setup, monkeypatch) -> None:
    """With `max_seconds` the cosine schedule spans the steps that fit the budget (measured rate),
    so the learning rate ends near 0, not at the value step `steps`' schedule has there."""
    import deepinfer_dspark.train.trainer as trainer_module

    _, seqs, target, config = setup
    clock = iter(range(10**6))
    monkeypatch.setattr(trainer_module.time, "monotonic", lambda: 0.5 * next(clock))   # 1 s per step
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=2)
    trainer = DraftTrainer(drafter, target, seqs, TrainConfig(steps=1000, batch_size=2, anchors_per_sequence=4,
                                                              lr=1e-3, log_every=1))
    history = trainer.train(max_seconds=20)
    assert 8 <= trainer.step_count <= 25 and trainer.horizon < 30   # other callers of the clock use ticks too
    assert history[-1]["lr"] < 0.05 * 1e-3                   # decayed by the deadline
    assert history[len(history) // 2]["lr"] > 0.3 * 1e-3     # a cosine over ~20 steps, not 1000
    untimed = DraftTrainer(drafter, target, seqs, TrainConfig(steps=3, batch_size=2, anchors_per_sequence=4))
    untimed.train()
    assert untimed.horizon == 3


def test_invalid_settings_raise(setup) -> None:
    _, seqs, target, config = setup
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=-1)
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp8")
    with pytest.raises(ValueError, match="target_layer_ids"):
        bad = {**config, "target_layer_ids": [0, 1]}
        DraftTrainer(init_drafter(bad, target.embed_weight, target.lm_head_weight), target, seqs)
    with pytest.raises(ValueError, match="embed"):
        init_drafter(config, target.embed_weight[:10], target.lm_head_weight)


def test_the_target_cache_gives_the_loss_of_running_the_target(setup) -> None:
    """`TargetCache` (the target's features and last hidden states kept once per sequence, its LM
    head applied where the loss reads): the same anchors and the same loss, to float32 rounding,
    as running the target over each batch; a target whose logits are not its LM head on its last
    hidden state is refused."""
    from deepinfer_dspark.train.target_cache import TargetCache

    _, seqs, target, config = setup
    losses = []
    for cache in (True, False):
        drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=1)
        trainer = DraftTrainer(drafter, target, seqs, TrainConfig(**{**FAST, "cache_target": cache}))
        assert (trainer.cache is not None) == cache
        indices = trainer.next_indices()
        out = trainer.loss_at(indices)
        losses.append((float(out.total), out.ce, out.tv, out.conf, out.acceptance))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5, abs=1e-6)
    cache = TargetCache(target, seqs[:3], batch_size=2)
    assert cache.features.shape[0] == sum(len(s.token_ids) for s in seqs[:3])
    rows = cache.rows(torch.tensor([2, 0]), max(len(s.token_ids) for s in seqs[:3]) + 5)
    assert int(rows[0, -1]) == cache.offsets[2] + cache.lengths[2] - 1   # past the end: its last row
    scaled = TargetModel(target.model, LAYERS)
    scaled.lm_head = lambda hidden: 2 * target.lm_head(hidden)
    with pytest.raises(ValueError, match="cache_target"):
        TargetCache(scaled, seqs[:2])


def test_grouped_attention_gives_the_per_block_loss_and_gradients(setup) -> None:
    """A sequence's blocks run side by side in one attention call (`grouped_blocks`): the loss and
    every gradient equal the per-block path's (each block with its own copy of the context), to
    float32 rounding, with sequences holding different numbers of blocks (padding blocks)."""
    from deepinfer_dspark.train.grouped_blocks import block_slots, grouped_mask

    _, seqs, target, config = setup
    from deepinfer_dspark.train.data import TrainingSequence

    short = [TrainingSequence(s.token_ids[:s.prompt_len + 3 + 5 * i], s.prompt_len) for i, s in enumerate(seqs)]
    results = []
    for grouped in (True, False):
        drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=3)
        with torch.no_grad():   # a drafter with random weights everywhere, not only at init's values
            for p in drafter.parameters():
                if p.requires_grad:
                    p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        trainer = DraftTrainer(drafter, target, short, TrainConfig(**{**FAST, "grouped_attention": grouped,
                                                                      "anchors_per_sequence": 24}))
        indices = trainer.next_indices()
        _, lengths, blocks = trainer.blocks_of([trainer.sequences[i] for i in indices])
        counts = torch.bincount(blocks.seq_index, minlength=len(indices))
        out = trainer.loss_at(indices)
        out.total.backward()
        grads = {n: p.grad.clone() for n, p in drafter.named_parameters() if p.grad is not None}
        results.append((float(out.total), out.ce, out.tv, out.conf, grads, counts))
    assert len(set(results[0][5].tolist())) > 1, "every sequence has the same block count: no padding tested"
    assert results[0][:4] == pytest.approx(results[1][:4], rel=1e-5, abs=1e-6)
    assert results[0][4].keys() == results[1][4].keys() and len(results[0][4]) > 10
    for name, grad in results[0][4].items():
        torch.testing.assert_close(grad, results[1][4][name], rtol=1e-4, atol=1e-6, msg=name)
    slot, count = block_slots(torch.tensor([0, 0, 0, 2, 2]), 3)
    assert slot.tolist() == [0, 1, 2, 0, 1] and count == 3
    mask = grouped_mask(torch.tensor([[2, 0]]), 3, 2, 9)[0, 0]
    assert mask.tolist() == [[True, True, False, True, True, False, False, False, False]] * 2 + \
        [[False, False, False, False, False, True, True, False, False]] * 2


def test_grouped_blocks_refuse_unsorted_blocks_and_ignore_padding_past_every_anchor(setup) -> None:
    """Blocks out of sequence order would collide in their slots: refused by name. Context rows
    past every anchor of their sequence (a short sequence's padding) never reach the output, even
    when not finite (the per-block path zeroes them in `attend`)."""
    from deepinfer_dspark.train.grouped_blocks import block_slots, grouped_hidden

    with pytest.raises(ValueError, match="seq_index"):
        block_slots(torch.tensor([1, 0, 1]), 2)
    _, _, target, config = setup
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=4)
    gen = torch.Generator().manual_seed(4)
    ids, lengths = pad_batch([torch.randint(0, 200, (n,), generator=gen).tolist() for n in (6, 20)])
    seq_index, anchors = torch.tensor([0, 0, 1, 1]), torch.tensor([2, 4, 3, 17])
    blocks = build_blocks(ids, lengths, seq_index, anchors, 4, 0)
    features = torch.randn(2, 20, target.hidden_size * len(LAYERS), generator=gen)
    clean = grouped_hidden(drafter, features, blocks, torch.float32)
    features[0, 4:] = float("nan")   # sequence 0's anchors are 2 and 4: rows 4.. unseen
    dirty = grouped_hidden(drafter, features, blocks, torch.float32)
    assert bool(clean.isfinite().all()) and torch.equal(clean, dirty)


def test_blocks_at_pads_by_gather_as_blocks_of_pads_by_list(setup) -> None:
    """`blocks_at` (one gather from the joined tokens) gives `blocks_of`'s ids, lengths and blocks
    for the same sequences and the same anchor draws, sequences of different lengths included."""
    from deepinfer_dspark.train.data import TrainingSequence

    _, seqs, target, config = setup
    mixed = [TrainingSequence(s.token_ids[:s.prompt_len + 2 + 7 * i], s.prompt_len) for i, s in enumerate(seqs)]
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=5)
    trainer = DraftTrainer(drafter, target, mixed, TrainConfig(**FAST))
    indices = [4, 0, 5, 2]
    state = trainer.generator.get_state()
    ids, lengths, blocks = trainer.blocks_of([trainer.sequences[i] for i in indices])
    trainer.generator.set_state(state)
    ids2, lengths2, blocks2 = trainer.blocks_at(indices)
    assert len(set(lengths.tolist())) == len(indices)
    assert torch.equal(ids, ids2) and torch.equal(lengths, lengths2)
    for name in ("seq_index", "anchors", "block_tokens", "positions", "labels", "valid", "prev_tokens",
                 "target_positions"):
        assert torch.equal(getattr(blocks, name), getattr(blocks2, name)), name


def test_anchors_are_a_uniform_subset_of_the_valid_ones() -> None:
    """Each valid anchor of a sequence is drawn with probability count / valid anchors (a uniform
    subset, as a per-sequence randperm gave), whatever the other sequences' lengths."""
    gen = torch.Generator().manual_seed(7)
    hits = torch.zeros(2, 40)
    draws = 3000
    for _ in range(draws):
        seq_index, anchors = sample_anchors([14, 40], [3, 1], 4, gen)   # valid: 2..12 (11), 0..38 (39)
        for b, a in zip(seq_index.tolist(), anchors.tolist()):
            hits[b, a] += 1
    assert hits[0, :2].sum() == 0 and hits[0, 13:].sum() == 0 and hits[1, 39:].sum() == 0
    assert torch.allclose(hits[0, 2:13] / draws, torch.full((11,), 4 / 11), atol=0.03)
    assert torch.allclose(hits[1, :39] / draws, torch.full((39,), 4 / 39), atol=0.02)

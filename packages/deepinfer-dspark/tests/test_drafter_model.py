# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The DSpark drafter against a float64 reference written from the formulas, and draft().

The reference (`Reference` below) recomputes, from the raw DeepSpec state dict: the context
projection H_ctx = RMSNorm(W_fc F), each layer's context K/V at absolute positions, the block
of [x0, MASK, ...] attending to context positions before the anchor and bidirectionally within
the block, base logits U_k, the Markov bias B_k of each head type, q_k = softmax((U_k + B_k)/T)
and c_k = sigmoid(logit_k / T_k) (Cheng et al. 2026, "DSpark"; DeepSpec `Qwen3DSparkModel`).
Filtered draft distributions are checked against HF transformers' logits warpers.
"""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import (MinPLogitsWarper, TemperatureLogitsWarper,
                                                    TopKLogitsWarper, TopPLogitsWarper)

from deepinfer_dspark.checkpoint import load_state_dict
from deepinfer_dspark.config import DSparkConfig
from deepinfer_dspark.draft_runner import DraftRequest, DraftSampling, DSparkDraftRunner
from deepinfer_dspark.drafter import DSparkDrafter

torch.set_num_threads(1)
HEAD_TYPES = ["vanilla", "gated", "rnn"]


class Reference:
    """Float64 DSpark forward for one request, straight from the formulas."""

    def __init__(self, config: dict, state: dict[str, torch.Tensor]) -> None:
        self.c = config
        self.w = {k: v.double() for k, v in state.items()}

    def rms(self, x: torch.Tensor, key: str) -> torch.Tensor:
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.c["rms_norm_eps"]) * self.w[key]

    def rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # x [n, heads, D]; GPT-NeoX pairing (i, i + D/2), inv_freq = theta^(-2i/D).
        dim = x.shape[-1]
        inv_freq = self.c["rope_theta"] ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        angle = positions.double()[:, None] * inv_freq[None, :]
        cos, sin = torch.cat([angle.cos()] * 2, -1)[:, None], torch.cat([angle.sin()] * 2, -1)[:, None]
        x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def hidden(self, features: torch.Tensor, anchor: int, s: int) -> torch.Tensor:
        """h_1..h_G `[G, d]` for anchor token `anchor` at position s, context features[:s]."""
        c, w, g = self.c, self.w, self.c["block_size"]
        hd, nh, nkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
        ctx = self.rms(features[:s].double() @ w["fc.weight"].T, "hidden_norm.weight")
        x = w["embed_tokens.weight"][torch.tensor([anchor] + [c["mask_token_id"]] * (g - 1))]
        block_pos, ctx_pos = torch.arange(s, s + g), torch.arange(s)
        for i in range(c["num_hidden_layers"]):
            p = f"layers.{i}."
            hn = self.rms(x, p + "input_layernorm.weight")

            def proj(inp, name, heads):
                return (inp @ w[p + f"self_attn.{name}.weight"].T).reshape(len(inp), heads, hd)

            q = self.rope(self.rms(proj(hn, "q_proj", nh), p + "self_attn.q_norm.weight"), block_pos)
            k = torch.cat([self.rope(self.rms(proj(src, "k_proj", nkv), p + "self_attn.k_norm.weight"), pos)
                           for src, pos in ((ctx, ctx_pos), (hn, block_pos))])
            v = torch.cat([proj(ctx, "v_proj", nkv), proj(hn, "v_proj", nkv)])
            out = torch.empty(g, nh, hd, dtype=torch.float64)
            for h in range(nh):
                kv = h // (nh // nkv)
                att = torch.softmax(q[:, h] @ k[:, kv].T / hd ** 0.5, dim=-1)
                out[:, h] = att @ v[:, kv]
            x = x + out.reshape(g, -1) @ w[p + "self_attn.o_proj.weight"].T
            hn = self.rms(x, p + "post_attention_layernorm.weight")
            gate, up = hn @ w[p + "mlp.gate_proj.weight"].T, hn @ w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        return self.rms(x, "norm.weight")

    def corrected(self, h: torch.Tensor, prev: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(U_k + B_k `[K, V]`, confidence logits `[K]`) along the path of previous tokens."""
        c, w = self.c, self.w
        base = h[: len(prev)] @ w["lm_head.weight"].T
        w1, w2 = w["markov_head.markov_w1.weight"], w["markov_head.markov_w2.weight"]
        state = torch.zeros(c["markov_rank"], dtype=torch.float64)
        out, conf = [], []
        for k, x in enumerate(prev):
            e = w1[x]
            if c["markov_head_type"] == "vanilla":
                bias = w2 @ e
            elif c["markov_head_type"] == "gated":
                gate = torch.sigmoid(w["markov_head.gate_proj.weight"] @ torch.cat([h[k], e])
                                     + w["markov_head.gate_proj.bias"])
                bias = w2 @ (gate * e)
            else:
                z = (w["markov_head.joint_proj.weight"] @ torch.cat([state, e, h[k]])
                     + w["markov_head.joint_proj.bias"])
                g_raw, cand, o = z.chunk(3)
                state = torch.sigmoid(g_raw) * state + (1 - torch.sigmoid(g_raw)) * torch.tanh(cand)
                bias = w2 @ torch.tanh(o)
            out.append(base[k] + bias)
            conf.append(w["confidence_head.proj.weight"][0] @ torch.cat([h[k], e])
                        + w["confidence_head.proj.bias"][0])
        return torch.stack(out), torch.stack(conf)


def build(config: dict, state: dict) -> DSparkDraftRunner:
    drafter = DSparkDrafter(DSparkConfig.from_dict(config))
    load_state_dict(drafter, state)
    return DSparkDraftRunner(drafter.eval())


def features(config: dict, n: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, len(config["target_layer_ids"]) * config["hidden_size"], generator=gen)


@pytest.mark.parametrize("head_type", HEAD_TYPES)
def test_matches_float64_reference(tiny, head_type):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type=head_type)
    state = random_state_dict(config, seed=1)
    runner, ref = build(config, state), Reference(config, state)
    feats = features(config, 11, seed=2)
    runner.observe("a", list(range(11)), feats)
    temps = torch.tensor([0.7, 1.3, 2.0, 0.9])
    runner.set_confidence_temperatures(temps)
    s, anchor = 9, 37                      # context holds more than the anchor may see
    h_ref = ref.hidden(feats, anchor, s)

    # Base logits U_k through the module's public forward.
    drafter = runner.drafter
    k_ctx, v_ctx = drafter.context_kv(feats[:s], torch.arange(s))
    block = torch.tensor([[anchor] + [config["mask_token_id"]] * 3])
    h = drafter(block, torch.arange(s, s + 4)[None], k_ctx[:, None], v_ctx[:, None],
                torch.ones(1, s, dtype=torch.bool))
    u_ref = h_ref @ ref.w["lm_head.weight"].T
    torch.testing.assert_close(drafter.compute_logits(h)[0].double(), u_ref, atol=2e-5, rtol=1e-5)

    for temperature in (1.0, 0.6, 0.0):
        sampling = DraftSampling(temperature=temperature, seed=5, step=3)
        out = runner.draft([DraftRequest("a", anchor, s, sampling)], num_tokens=4)[0]
        prev = [anchor] + out.tokens[:-1].tolist()
        logits, conf = ref.corrected(h_ref, prev)
        if temperature == 0:
            assert out.tokens.tolist() == logits.argmax(-1).tolist()
            assert out.probs is None   # greedy round: q is one-hot on the tokens, left implicit
        else:
            q_ref = torch.softmax(logits / temperature, dim=-1)
            torch.testing.assert_close(out.probs.double(), q_ref, atol=1e-6, rtol=1e-4)
            assert bool((out.probs.gather(1, out.tokens[:, None]) > 0).all())
        torch.testing.assert_close(out.confidence_logits.double(), conf, atol=2e-5, rtol=1e-5)
        torch.testing.assert_close(out.confidences.double(), torch.sigmoid(conf / temps.double()),
                                   atol=1e-6, rtol=1e-5)


def test_filtered_law_matches_hf_warpers(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type="gated")
    state = random_state_dict(config, seed=3)
    runner, ref = build(config, state), Reference(config, state)
    feats = features(config, 6, seed=4)
    runner.observe("a", list(range(6)), feats)
    h_ref = ref.hidden(feats, 3, 6)
    cases = [dict(temperature=0.8, top_k=20), dict(temperature=1.0, top_p=0.7),
             dict(temperature=1.2, min_p=0.05), dict(temperature=0.9, top_k=40, top_p=0.9, min_p=0.02)]
    for i, case in enumerate(cases):
        sampling = DraftSampling(seed=11 + i, step=0, **case)
        out = runner.draft([DraftRequest("a", 3, 6, sampling)], num_tokens=4)[0]
        logits, _ = ref.corrected(h_ref, [3] + out.tokens[:-1].tolist())
        scores = TemperatureLogitsWarper(case["temperature"])(None, logits.clone())
        if "top_k" in case:
            scores = TopKLogitsWarper(case["top_k"])(None, scores)
        if "top_p" in case:
            scores = TopPLogitsWarper(case["top_p"])(None, scores)
        if "min_p" in case:
            scores = MinPLogitsWarper(case["min_p"])(None, scores)
        q_ref = torch.softmax(scores, dim=-1)
        torch.testing.assert_close(out.probs.double(), q_ref, atol=1e-6, rtol=1e-4)
        assert bool((out.probs.gather(1, out.tokens[:, None]) > 0).all()), case


def test_batched_equals_per_request_and_seeded(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type="rnn")
    runner = build(config, random_state_dict(config, seed=5))
    lengths = {"a": 13, "b": 5, "c": 13, "d": 0}
    for i, (rid, n) in enumerate(lengths.items()):
        if n:
            runner.observe(rid, list(range(n)), features(config, n, seed=10 + i))
        else:
            runner.observe(rid, [], features(config, 0, seed=0))
    requests = [
        DraftRequest("a", 5, 13, DraftSampling(temperature=1.0, seed=1, step=13)),
        DraftRequest("b", 9, 4, DraftSampling(temperature=0.0)),
        DraftRequest("c", 2, 13, DraftSampling(temperature=0.7, top_k=30, top_p=0.9, seed=-3, step=2)),
        DraftRequest("d", 77, 0, DraftSampling(temperature=1.0, min_p=0.1, seed=2**62, step=0)),
    ]
    batched = runner.draft(requests, num_tokens=3)
    for req, out in zip(requests, batched):
        alone = runner.draft([req], num_tokens=3)[0]
        assert torch.equal(out.tokens, alone.tokens), req.request_id
        if alone.probs is None:   # a greedy request alone: an all-greedy round leaves q implicit
            assert req.sampling.temperature == 0
            assert torch.equal(out.probs, torch.nn.functional.one_hot(out.tokens, out.probs.shape[1]).float())
        else:
            torch.testing.assert_close(out.probs, alone.probs, atol=1e-6, rtol=0)
        torch.testing.assert_close(out.confidences, alone.confidences, atol=1e-6, rtol=0)
    # Same batch shapes, different neighbour: row "a" is bitwise unchanged. (Across batch
    # sizes the GEMMs differ in M, hence the 1e-6 above.)
    other = DraftRequest("c", 40, 13, DraftSampling(temperature=1.0, seed=9, step=7))
    first, second = runner.draft([requests[0], requests[2]], 3)[0], runner.draft([requests[0], other], 3)[0]
    assert torch.equal(first.tokens, second.tokens) and torch.equal(first.probs, second.probs)
    assert torch.equal(first.confidences, second.confidences)
    # Seeded: the same (seed, step) repeats; other seeds draw other tokens.
    again = runner.draft(requests, num_tokens=3)
    assert all(torch.equal(x.tokens, y.tokens) for x, y in zip(batched, again))
    draws = {tuple(runner.draft([DraftRequest("a", 5, 13, DraftSampling(temperature=1.0, seed=s, step=13))],
                                num_tokens=3)[0].tokens.tolist()) for s in range(8)}
    assert len(draws) > 1


def test_cache_append_crop_equals_fresh(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config()
    state = random_state_dict(config, seed=6)
    feats = features(config, 150, seed=7)
    grown = build(config, state)
    grown.observe("r", list(range(40)), feats[:40])
    grown.observe("r", list(range(40, 100)), feats[40:100])             # spans several pool blocks
    grown.observe("r", list(range(100, 120)), torch.randn(20, feats.shape[1]))  # rejected
    grown.rollback("r", 20)
    grown.observe("r", list(range(100, 150)), feats[100:150])
    fresh = build(config, state)
    fresh.observe("r", list(range(150)), feats)
    (keys_a, values_a), (keys_b, values_b) = grown.context_of("r"), fresh.context_of("r")
    assert keys_a.shape[1] == keys_b.shape[1] == 150
    torch.testing.assert_close(keys_a, keys_b, atol=1e-6, rtol=0)
    torch.testing.assert_close(values_a, values_b, atol=1e-6, rtol=0)
    req = DraftRequest("r", 11, 150, DraftSampling(temperature=1.0, seed=4, step=150))
    a, b = grown.draft([req], 4)[0], fresh.draft([req], 4)[0]
    assert torch.equal(a.tokens, b.tokens)
    torch.testing.assert_close(a.probs, b.probs, atol=1e-6, rtol=0)
    torch.testing.assert_close(a.confidences, b.confidences, atol=1e-6, rtol=0)


def test_api_errors(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config()
    runner = build(config, random_state_dict(config))
    runner.observe("r", [0, 1, 2], features(config, 3, 0))
    with pytest.raises(ValueError, match="positions"):
        runner.observe("r", [4, 5], features(config, 2, 0))
    with pytest.raises(ValueError, match="target_features"):
        runner.observe("r", [3], features(config, 2, 0))
    with pytest.raises(ValueError, match="anchor_position"):
        runner.draft([DraftRequest("r", 1, 4)], 2)
    with pytest.raises(ValueError, match="request_id"):
        runner.draft([DraftRequest("x", 1, 0)], 2)
    with pytest.raises(ValueError, match="num_tokens"):
        runner.draft([DraftRequest("r", 1, 3)], 5)
    with pytest.raises(ValueError, match="anchor_token"):
        runner.draft([DraftRequest("r", 128, 3)], 2)
    with pytest.raises(ValueError, match="num_positions"):
        runner.rollback("r", 4)
    with pytest.raises(ValueError, match="top_p"):
        DraftSampling(top_p=0.0)
    with pytest.raises(ValueError, match="confidence_temperatures"):
        runner.set_confidence_temperatures(torch.tensor([1.0, 0.0, 1.0, 1.0]))
    runner.remove("r")
    assert runner.num_positions("r") == 0


def test_forward_is_differentiable(tiny):
    tiny_config, _, random_state_dict = tiny
    config = tiny_config(markov_head_type="rnn")
    drafter = build(config, random_state_dict(config, seed=8)).drafter.train()
    feats = features(config, 7, seed=9)
    k, v = drafter.context_kv(feats, torch.arange(7))
    block = torch.tensor([[3, 127, 127, 127]])
    h = drafter(block, torch.arange(7, 11)[None], k[:, None], v[:, None], torch.ones(1, 7, dtype=torch.bool))
    prev = torch.tensor([[3, 10, 20, 30]])
    loss = drafter.corrected_logits(h, prev).logsumexp(-1).sum() + drafter.confidence_logits(h, prev).sum()
    loss.backward()
    for name in ("fc.weight", "layers.0.self_attn.k_proj.weight", "markov_head.joint_proj.weight",
                 "confidence_head.proj.weight", "hidden_norm.weight"):
        grad = drafter.get_parameter(name).grad
        assert grad is not None and bool(grad.abs().sum() > 0), name

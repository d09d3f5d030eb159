# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Proposer plug-in hooks. A faulty plug-in fails only the requests it touches, never the engine
or their tokens (found by an adversarial review: a proposer writing into `DraftRequest.token_ids`
changed greedy outputs silently, and a raising `observe`, `commit` or `remove` took down every
request of the call and, for `remove`, every later call).

`Proposer.wants_features`: a proposer that declines a step's target features gets none (the
step runs with `execute_model(..., features=False)`, no `observe` call reports it); steps with
drafts always carry them; a proposer that raises or answers anything but False keeps them.
Greedy output never changes.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft, DraftRequest

PROMPTS = [[5, 6, 7, 8, 5, 6, 7], [9, 10, 11, 9, 10], [3, 4, 3, 4, 3, 4]]


class Echo:
    """Drafts the last token again (sometimes right, sometimes wrong); hooks can be made to fail."""

    target_layer_ids = ()

    def __init__(self, fail: str = "", layers: object = ()) -> None:
        self.fail = fail
        self.target_layer_ids = layers

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        if self.fail == "write":
            for r in requests:
                r.token_ids[-1] = 7           # must not reach the engine's token list
        return [Draft([int(r.token_ids[-1])] * min(2, r.max_tokens)) for r in requests]

    def observe(self, request_id, positions, features) -> None:
        if self.fail == "observe":
            raise RuntimeError("observe broke")

    def commit(self, request_id: str, num_tokens: int) -> None:
        if self.fail == "commit":
            raise RuntimeError("commit broke")

    def remove(self, request_id: str) -> None:
        if self.fail == "remove":
            raise RuntimeError("remove broke")


def build(folder, proposer=None, **kw) -> LLM:
    spec = None if proposer is None else {"proposer": proposer, "num_speculative_tokens": 2}
    return LLM(str(folder), max_model_len=64, block_size=4, kv_cache_memory=16 << 20, deterministic=True,
               speculative_config=spec, **kw)


def run(llm: LLM):
    return llm.generate([{"prompt_token_ids": p} for p in PROMPTS],
                        SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))


@pytest.mark.parametrize("async_scheduling", [True, False])
@pytest.mark.parametrize("fail", ["write", "observe", "commit", "remove"])
def test_a_faulty_proposer_fails_requests_alone(tiny_checkpoint, fail: str, async_scheduling: bool) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder))]
    layers = (0,) if fail == "observe" else ()     # observe is called only for feature-reading proposers
    llm = build(folder, Echo(fail, layers), async_scheduling=async_scheduling)
    for _ in range(2):                              # the engine stays usable after the fault
        outs = run(llm)
        for out, want in zip(outs, expected):
            if out.error is not None:
                assert out.error.startswith("speculative_config.proposer"), out.error
                assert out.outputs[0].token_ids == want[:len(out.outputs[0].token_ids)]
            else:
                assert out.outputs[0].token_ids == want
        if fail == "remove":
            assert all(o.error is None for o in outs)   # a raising remove is contained
        else:
            assert any(o.error is not None for o in outs)


def test_target_layer_ids_must_be_a_sequence(tiny_checkpoint) -> None:
    with pytest.raises(ValueError, match="^speculative_config: the proposer's target_layer_ids must be a sequence"):
        build(tiny_checkpoint("qwen3"), Echo(layers=3))


class Napper(Echo):
    """Declares every other round idle; idle rounds arrive through `idle_round`, never `propose`."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail_idle = fail
        self.idle_calls: list[int] = []
        self.round = 0

    def idle_rounds(self) -> int:
        return self.round % 2

    def idle_round(self, num_requests: int) -> None:
        self.round += 1
        self.idle_calls.append(num_requests)
        if self.fail_idle:
            raise RuntimeError("idle broke")

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        assert self.idle_rounds() == 0, "propose called in an idle round"
        self.round += 1
        return super().propose(requests)


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_idle_rounds_go_through_idle_round(tiny_checkpoint, async_scheduling: bool) -> None:
    """A proposer with `idle_round` gets paused rounds as a request count (no DraftRequests are
    built); greedy output is unchanged; a raising `idle_round` fails the requests it was asked
    about, naming the proposer."""
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder))]
    napper = Napper()
    llm = build(folder, napper, async_scheduling=async_scheduling)
    assert [o.outputs[0].token_ids for o in run(llm)] == expected
    assert napper.idle_calls and max(napper.idle_calls) == len(PROMPTS)
    assert llm.engine.speculative.stats.verified > 0          # non-idle rounds still drafted
    broken = build(folder, Napper(fail=True), async_scheduling=async_scheduling)
    outs = run(broken)
    assert all(o.error is not None and "idle_round failed" in o.error for o in outs)


def test_a_plugins_validate_runs_before_the_target_loads(tiny_checkpoint, monkeypatch) -> None:
    """`check_proposer_config`: a factory's optional `validate(spec_config)` runs before any
    weight loads, and what it raises reaches the caller; a factory without one, an instance
    given as `proposer` and no config at all are passed through."""
    import deepinfer_core.engine.proposer_plugins as plugins
    import deepinfer_core.llm as llm_module

    calls = []

    def factory(spec_config, model_info):
        return Echo()

    def validate(spec_config):
        calls.append(dict(spec_config))
        if "bad" in spec_config:
            raise ValueError("speculative_config.bad: unknown key")

    factory.validate = validate
    monkeypatch.setattr(plugins, "_factory", lambda method: factory)
    spec = {"method": "echo", "num_speculative_tokens": 2}
    plugins.check_proposer_config(spec)
    assert calls == [spec]
    plugins.check_proposer_config(None)
    plugins.check_proposer_config({**spec, "proposer": Echo()})
    assert len(calls) == 1

    def never(*args, **kwargs):
        raise AssertionError("the target was loaded before the speculative config was checked")

    monkeypatch.setattr(llm_module, "load_model_config", never)
    with pytest.raises(ValueError, match="speculative_config.bad"):
        LLM(str(tiny_checkpoint("qwen3")), load_format="dummy", speculative_config={**spec, "bad": 1})
    monkeypatch.setattr(plugins, "_factory", lambda method: lambda spec_config, model_info: Echo())
    plugins.check_proposer_config(spec)   # no validate: nothing to run

class Dimmer:
    """Reads layer 0; declines the features of every other draft-free step (`answer` then, or
    raises when `answer` is "raise"); drafts on every third round."""

    target_layer_ids = (0,)

    def __init__(self, answer: object = False) -> None:
        self.answer = answer
        self.asked = 0
        self.declined = 0
        self.rounds = 0
        self.observed: dict[str, list[int]] = {}

    def wants_features(self) -> object:
        self.asked += 1
        if self.asked % 2:
            return True
        self.declined += 1
        if self.answer == "raise":
            raise RuntimeError("wants_features broke")
        return self.answer

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        self.rounds += 1
        n = 2 if self.rounds % 3 == 0 else 0
        return [Draft([int(r.token_ids[-1])] * min(n, r.max_tokens)) for r in requests]

    def observe(self, request_id, positions, features) -> None:
        assert features.shape[0] == len(positions)
        self.observed.setdefault(request_id, []).extend(positions)

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass


def spy(llm: LLM) -> list[tuple[bool, bool, bool]]:
    """Records (features asked, drafts verified, features returned) of every `execute_model` call."""
    calls = []
    runner = llm.engine.runner
    real = runner.execute_model

    def execute_model(chunks, *args, features: bool = True, **kw):
        out = real(chunks, *args, features=features, **kw)
        calls.append((features, any(c.num_logits > 1 for c in chunks), out.aux_hidden is not None))
        return out

    runner.execute_model = execute_model
    return calls


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_declined_steps_run_and_report_without_features(tiny_checkpoint, async_scheduling: bool) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder))]
    dimmer = Dimmer()
    llm = build(folder, dimmer, async_scheduling=async_scheduling)
    calls = spy(llm)
    outs = run(llm)
    assert [o.outputs[0].token_ids for o in outs] == expected and all(o.error is None for o in outs)
    assert llm.engine.speculative.stats.verified > 0          # drafted steps happened
    declined = [c for c in calls if not c[0]]
    assert dimmer.declined and len(declined) == dimmer.declined   # each False reached the runner
    assert all(not drafts and not returned for _, drafts, returned in declined)   # none with drafts
    assert all(returned for asked, _, returned in calls if asked)
    # The positions of declined steps are missing from what an always-True proposer observes.
    always = Dimmer(True)
    run(build(folder, always, async_scheduling=async_scheduling))
    assert always.declined and sorted(always.observed) == sorted(dimmer.observed)
    for request_id, positions in dimmer.observed.items():
        assert set(positions) < set(always.observed[request_id]) and len(set(positions)) == len(positions)


@pytest.mark.parametrize("answer", ["raise", None, 0, "no"])
def test_anything_but_false_keeps_the_features(tiny_checkpoint, answer: object) -> None:
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder))]
    dimmer = Dimmer(answer)
    llm = build(folder, dimmer)
    calls = spy(llm)
    outs = run(llm)
    assert [o.outputs[0].token_ids for o in outs] == expected and all(o.error is None for o in outs)
    assert dimmer.declined and all(asked and returned for asked, _, returned in calls)
    always = Dimmer(True)
    run(build(folder, always))
    assert dimmer.observed == always.observed


def test_steps_with_drafts_always_carry_features(tiny_checkpoint) -> None:
    """The synchronous engine does not even ask while a step carries drafts."""
    dimmer = Dimmer()
    llm = build(tiny_checkpoint("qwen3"), dimmer, async_scheduling=False)
    calls = spy(llm)
    run(llm)
    verifications = sum(1 for _, drafts, _ in calls if drafts)
    assert verifications > 0 and all(asked and returned for asked, drafts, returned in calls if drafts)
    assert dimmer.asked == len(calls) - verifications


def test_feature_free_graphs_only_for_proposers_that_may_decline(tiny_checkpoint) -> None:
    """The runner captures decode graphs without the features (`plain_graphs`, on CUDA) only
    for a proposer with `wants_features`."""
    folder = tiny_checkpoint("qwen3")
    assert build(folder, Dimmer()).engine.runner.feature_free_graphs is True
    assert build(folder, Echo(layers=(0,))).engine.runner.feature_free_graphs is False
    assert build(folder).engine.runner.feature_free_graphs is False


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU (run on the device machine)")
@pytest.mark.parametrize("async_scheduling", [True, False])
def test_declined_steps_replay_the_feature_free_graphs_on_cuda(tiny_checkpoint, async_scheduling: bool) -> None:
    """On CUDA the declined decode steps replay `plain_graphs` (captured without the features,
    sharing the feature graphs' pool) and the output is that of the engine without a proposer."""
    folder = tiny_checkpoint("qwen3")
    expected = [o.outputs[0].token_ids for o in run(build(folder, device="cuda"))]
    dimmer = Dimmer()
    llm = build(folder, dimmer, device="cuda", async_scheduling=async_scheduling)
    runner = llm.engine.runner
    assert runner.plain_graphs is not None and runner.plain_graphs.pool == runner.graphs.pool
    outs = run(llm)
    assert [o.outputs[0].token_ids for o in outs] == expected and all(o.error is None for o in outs)
    assert dimmer.declined and runner.plain_graphs.replays > 0 and runner.graphs.replays > 0

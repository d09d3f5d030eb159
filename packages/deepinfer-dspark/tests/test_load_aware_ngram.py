# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`ngram` with `scheduling: load_aware`: prompt lookup rounds only where they pay at the current
load (`LookupAssist` over `NoDrafter`); greedy output stays plain decoding's. (The tiny target:
`folders` and `kit` in conftest.py; its prompts repeat a motif, so lookup finds matches.)"""

from __future__ import annotations

import pytest

from deepinfer_dspark.factories import ngram_factory
from deepinfer_dspark.lookup_assist import LookupAssist
from deepinfer_dspark.ngram import NgramSpecProposer
from deepinfer_dspark.no_drafter import NoDrafter
from deepinfer_dspark.sps import SPSProfile

AWARE = {"method": "ngram", "num_speculative_tokens": 4, "scheduling": "load_aware"}


def test_the_factory_builds_each_scheduling_and_names_bad_keys() -> None:
    fixed = ngram_factory({"method": "ngram", "num_speculative_tokens": 4}, {})
    assert isinstance(fixed, NgramSpecProposer)
    aware = ngram_factory({**AWARE, "decode_profile": SPSProfile([1, 8], [1000.0, 900.0])}, {})
    assert isinstance(aware, LookupAssist) and isinstance(aware.inner, NoDrafter)
    assert aware.min_n == 2 and aware.inner.num_tokens == 4 and aware.inner.decode.at(8) == 900.0
    bad = [({**AWARE, "scheduling": "confidence"}, "speculative_config.scheduling"),
           ({**AWARE, "prompt_lookup_max": 4}, "speculative_config.prompt_lookup_max: only used with"),
           ({**AWARE, "prompt_lookup_min": 1024}, "speculative_config.prompt_lookup_min: must be below 1024"),
           ({**AWARE, "prompt_lookup_min": 0}, "speculative_config.prompt_lookup_min"),
           ({**AWARE, "decode_profile": 3}, "speculative_config.decode_profile"),
           ({"method": "ngram", "num_speculative_tokens": 4, "decode_profile": {}},
            "speculative_config.decode_profile: only used with scheduling='load_aware'"),
           ({**AWARE, "sps_profile": {}}, "speculative_config.sps_profile: unknown key")]
    for config, message in bad:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            ngram_factory(config, {})


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_lookup_rounds_at_one_request_none_where_they_cannot_pay(folders, kit, async_scheduling: bool) -> None:
    """One request whose prompt repeats a motif: load-aware lookup drafts and the reply is plain
    decoding's. Sixteen at once, with a flat decode profile: even a whole accepted draft could
    not pay for a round there (`LookupAssist.pays`), so nothing is searched or drafted and the
    steps run dormant, where `ngram` every step drafts."""
    from deepinfer_core import SamplingParams

    target, _ = folders
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    lone = [{"prompt_token_ids": p} for p in kit.prompts(1, seed=3)]
    plain = kit.build(target, async_scheduling=async_scheduling)
    aware = kit.build(target, {**AWARE, "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0])},
                      async_scheduling=async_scheduling)
    assert aware.generate(lone, params)[0].outputs[0].token_ids == plain.generate(lone, params)[0].outputs[0].token_ids
    assert aware.engine.speculative.stats.proposed > 0 and aware.engine.speculative.proposer.lookup_rounds > 0
    crowd = [{"prompt_token_ids": p} for p in kit.prompts(16, seed=4)]
    before = aware.engine.speculative.stats.proposed
    outs = aware.generate(crowd, params)
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in plain.generate(crowd, params)]
    assert aware.engine.speculative.stats.proposed == before and aware.engine.speculative.dormant.steps > 20
    every = kit.build(target, {"method": "ngram", "num_speculative_tokens": 4}, async_scheduling=async_scheduling)
    every.generate(crowd, params)
    assert every.engine.speculative.stats.proposed > 0


def test_counters_hold_every_round_and_unasked_matches_do_not_stop_the_overlap(folders, kit) -> None:
    """The wrapper's `lookup_accepted` equals core's accepted drafts, the requests' last rounds
    included (core commits none after them: `remove` credits them). A looping request that may not
    be drafted for (a presence penalty) is not searched every step: its match made each step a
    due round with nothing to ask, which gave up the step's overlap (session 29's review)."""
    from deepinfer_core import SamplingParams

    target, _ = folders
    flat = {**AWARE, "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0])}
    # (7 drafts: a lone round at 4 requests costs +1.5 plain steps, `RoundCosts`; 4 short matches pay it)
    llm = kit.build(target, {**flat, "num_speculative_tokens": 7}, async_scheduling=True)
    prompts = [{"prompt_token_ids": p} for p in kit.prompts(4, seed=3)]
    llm.generate(prompts, SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
    stats, proposer = llm.engine.speculative.stats, llm.engine.speculative.proposer
    assert stats.accepted > 0 and proposer.lookup_accepted == stats.accepted
    assert proposer.lookup_drafts == stats.proposed and not proposer._open
    lone = [{"prompt_token_ids": p} for p in kit.prompts(1, seed=3)]
    overlapped = []
    for penalty in (0.0, 0.01):
        params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True, presence_penalty=penalty)
        plain = kit.build(target, async_scheduling=True)
        plain.generate(lone, params)
        aware = kit.build(target, flat, async_scheduling=True)
        aware.generate(lone, params)
        overlapped.append((plain.engine.num_overlapped_steps, aware.engine.num_overlapped_steps,
                           aware.engine.speculative.stats.proposed))
    (_, drafted_overlap, drafted), (plain_overlap, unasked_overlap, unasked) = overlapped
    assert drafted > 0 and drafted_overlap < plain_overlap     # eligible: lookup rounds (synchronous)
    assert unasked == 0 and unasked_overlap >= plain_overlap - 4, overlapped   # a search every 32 tokens

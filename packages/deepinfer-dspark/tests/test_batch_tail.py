# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`batch_tail.tail_weights`: a draining batch's requests ahead of the least advanced one weigh
`TAIL_AHEAD`; nothing is weighted unless draining, with a request waiting, or at one request."""

from __future__ import annotations

from deepinfer_dspark.batch_tail import TAIL_AHEAD, TAIL_SLACK, known_tokens, tail_weights

PROMPT = 10


def test_known_tokens_stops_before_placeholders() -> None:
    assert known_tokens([5, 6, -1, -1]) == 2 and known_tokens([-1]) == 0 and known_tokens([3]) == 1


def test_weights_only_while_draining_with_nothing_waiting() -> None:
    views = {"ahead": list(range(PROMPT + TAIL_SLACK + 3)), "behind": list(range(PROMPT + 1))}
    prompts = dict.fromkeys(views, PROMPT)   # outputs 7 and 1: "ahead" is past the slack
    assert tail_weights(views, prompts, 2, draining=False) == {}
    assert tail_weights(views, prompts, 2, draining=True) == {"ahead": TAIL_AHEAD, "behind": 1.0}
    assert tail_weights(views, prompts, 1, draining=True) == {}          # one request: no tail
    views["waiting"], prompts["waiting"] = list(range(PROMPT)), PROMPT
    assert tail_weights(views, prompts, 2, draining=True) == {}          # a request waits
    assert tail_weights(views, prompts, 3, draining=True)["ahead"] == TAIL_AHEAD
    views["ahead"].extend([-1, -1])                                      # placeholders do not count
    assert tail_weights(views, prompts, 3, draining=True)["ahead"] == TAIL_AHEAD
    assert tail_weights({}, {}, 2, draining=True) == {}


def test_within_the_slack_every_request_counts_fully() -> None:
    views = {"a": list(range(PROMPT + 5)), "b": list(range(PROMPT + 5 + TAIL_SLACK))}
    assert tail_weights(views, dict.fromkeys(views, PROMPT), 2, draining=True) == {"a": 1.0, "b": 1.0}

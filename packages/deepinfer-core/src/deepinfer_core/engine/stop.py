# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""When a request stops on a token (engine core).

Stop strings act on text in the frontend (`deepinfer_recipe.StopStringMatcher` in
`engine.output_processor`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepinfer_core.engine.request import RequestStatus

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request


def stop_token_rule(request: Request, token_id: int, num_output: int) -> tuple[bool, int | None]:
    """Whether `token_id`, as the request's `num_output`-th output token, stops it on a token.

    EOS (unless `ignore_eos`) and `stop_token_ids` count only once `min_tokens` tokens exist;
    EOS after a complete structured-output match always stops (nothing else could follow).

    Returns:
        (stops, stop_reason): stop_reason is the stop token id for `stop_token_ids`, None for EOS.
    """
    params = request.sampling_params
    if request.grammar_terminated and token_id == request.eos_token_id:
        return True, None
    if num_output < params.min_tokens:
        return False, None
    if token_id == request.eos_token_id and not params.ignore_eos:
        return True, None
    if token_id in request.stop_token_ids:
        return True, token_id
    return False, None


def check_token_stop(request: Request, max_model_len: int) -> bool:
    """Finishes `request` if its last output token ends it; sets `status` and `stop_reason`.

    EOS (unless `ignore_eos`) and `stop_token_ids` count only once `min_tokens` tokens exist
    (the sampler also bans them before that). Length limits: `max_tokens` output tokens, or
    prompt + output reaching `max_model_len`.

    Returns:
        True when the request finished.
    """
    num_output = len(request.output_token_ids)   # (not the properties: once a request a step)
    stops, reason = stop_token_rule(request, request.output_token_ids[-1], num_output)
    if stops:
        request.status = RequestStatus.FINISHED_STOPPED
        request.stop_reason = reason
        return True
    if ((request.max_tokens is not None and num_output >= request.max_tokens)
            or len(request.all_token_ids) >= max_model_len):
        request.status = RequestStatus.FINISHED_LENGTH
        return True
    return False


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


def check_token_stop(request: Request, max_model_len: int) -> bool:
    """Finishes `request` if its last output token ends it; sets `status` and `stop_reason`.

    EOS (unless `ignore_eos`) and `stop_token_ids` count only once `min_tokens` tokens exist
    (the sampler also bans them before that). Length limits: `max_tokens` output tokens, or
    prompt + output reaching `max_model_len`.

    Returns:
        True when the request finished.
    """
    params = request.sampling_params
    last = request.output_token_ids[-1]
    num_output = request.num_output_tokens
    if num_output >= params.min_tokens:
        if last == request.eos_token_id and not params.ignore_eos:
            request.status = RequestStatus.FINISHED_STOPPED
            return True
        if last in request.stop_token_ids:
            request.status = RequestStatus.FINISHED_STOPPED
            request.stop_reason = last
            return True
    if (request.max_tokens is not None and num_output >= request.max_tokens) or request.num_tokens >= max_model_len:
        request.status = RequestStatus.FINISHED_LENGTH
        return True
    return False


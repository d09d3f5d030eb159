# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Errors raised by the recipe layer and their wire shapes per protocol."""

from __future__ import annotations


class RequestError(ValueError):
    """A client request that cannot be served as sent.

    Args:
        message: Human-readable reason; always names the offending field.
        param: Dotted path of the offending field (e.g. ``messages[2].role``), or None.
        status: HTTP status to answer with (400 for client errors).
        error_type: Protocol-neutral error type, ``invalid_request_error`` by default.
    """

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.error_type = error_type

    def openai_body(self) -> dict:
        """Error body in the OpenAI shape (Chat Completions and Responses).

        Returns:
            ``{"error": {"message", "type", "param", "code"}}``.
        """
        return {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": None,
            }
        }

    def anthropic_body(self) -> dict:
        """Error body in the Anthropic Messages shape.

        Returns:
            ``{"type": "error", "error": {"type", "message"}}``.
        """
        return {"type": "error", "error": {"type": self.error_type, "message": self.message}}


def field_error(param: str, problem: str) -> RequestError:
    """Build a 400 RequestError whose message starts with the field path.

    Args:
        param: Dotted path of the offending field.
        problem: What is wrong with it.

    Returns:
        The error (not raised).
    """
    return RequestError(f"{param}: {problem}", param=param)

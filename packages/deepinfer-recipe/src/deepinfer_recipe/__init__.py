# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepInfer recipe: chat encoding, control-token defense, streaming parsers, API protocols.

Pure Python (jinja2; ``tokenizers`` optional for token ids). Never imports torch.
"""

from __future__ import annotations

from deepinfer_recipe.completion import ChatResult, Usage
from deepinfer_recipe.conversation import Conversation, Message, ToolCall, ToolSpec
from deepinfer_recipe.detokenizer import IncrementalDetokenizer
from deepinfer_recipe.encoding.hf_template import render_chat_template
from deepinfer_recipe.encoding.prompt import Prompt, Segment
from deepinfer_recipe.encoding.registry import CHAT_FORMATS, encode_chat
from deepinfer_recipe.errors import RequestError
from deepinfer_recipe.events import (
    ContentDelta,
    ParsedOutput,
    ParseIssue,
    ReasoningDelta,
    StopMatched,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    merge_events,
)
from deepinfer_recipe.final_detokenizer import FinalDetokenizer
from deepinfer_recipe.parsing.output_parser import OutputParser, ParserConfig
from deepinfer_recipe.parsing.registry import PARSER_FORMATS, make_output_parser, parser_config
from deepinfer_recipe.protocols.anthropic_messages import MessagesStreamer, messages_response, parse_messages_request
from deepinfer_recipe.protocols.openai_chat import (
    ChatCompletionStreamer,
    chat_completion_response,
    conversation_from_openai,
    parse_chat_completions_request,
)
from deepinfer_recipe.protocols.openai_responses import ResponsesStreamer, parse_responses_request, responses_response
from deepinfer_recipe.protocols.sse import sse_frame
from deepinfer_recipe.request import ChatRequest, GenerationOptions, ToolChoice
from deepinfer_recipe.stop import StopStringMatcher
from deepinfer_recipe.tokenization import PromptTokenizer, added_token_strings

__all__ = [
    "CHAT_FORMATS",
    "PARSER_FORMATS",
    "ChatCompletionStreamer",
    "ChatRequest",
    "ChatResult",
    "ContentDelta",
    "Conversation",
    "FinalDetokenizer",
    "GenerationOptions",
    "IncrementalDetokenizer",
    "Message",
    "MessagesStreamer",
    "OutputParser",
    "ParseIssue",
    "ParsedOutput",
    "ParserConfig",
    "Prompt",
    "PromptTokenizer",
    "ReasoningDelta",
    "RequestError",
    "ResponsesStreamer",
    "Segment",
    "StopMatched",
    "StopStringMatcher",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "added_token_strings",
    "chat_completion_response",
    "conversation_from_openai",
    "encode_chat",
    "make_output_parser",
    "merge_events",
    "messages_response",
    "parse_chat_completions_request",
    "parse_messages_request",
    "parse_responses_request",
    "parser_config",
    "render_chat_template",
    "responses_response",
    "sse_frame",
]

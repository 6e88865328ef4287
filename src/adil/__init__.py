"""ADIL Edge SDK: run a language model in-process through a versioned C
engine, and drive it as an agent with tools, confirmations, cancellation,
deadlines and typed errors.

    import adil
    engine = adil.Engine.open()                      # the bundled CPU engine
    model = engine.load_model(adil.models.path("gemma3-270m"))
    print(model.complete("The capital of France is", max_tokens=16).text)
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import models
from ._binding import ENGINE_LIBRARY, STUB_LIBRARY
from .agent import Agent, AgentHandle, DisplayField, Proposal, RunOutcome, ToolCall
from .cancel import CancelToken
from .chat_api import ChatChunk, ChatResponse, ChatStream
from .client import Client, OpenAIClient
from .engine import Engine, EngineInfo, Model, ModelInfo
from .errors import (
    AdilError,
    BusyError,
    CancelledError,
    CapabilityError,
    ComponentRefusedError,
    ContextLengthError,
    DeadlineError,
    EngineInternalError,
    EngineMemoryError,
    InvalidArgumentError,
    ModelFileError,
    ModelFormatError,
    ModelNotReadyError,
    OutputValidationError,
    PermissionDeniedError,
    ServiceConnectionError,
    ToolSchemaError,
)
from .generation import Completion, Generation, Piece, Stats, StopReason, TokenLogprob
from .messages import ChatMessage, ChatToolCall, Usage
from .sampling import DEFAULT_SAMPLING, Sampling
from .timeouts import Timeout
from .tools import Tool, ToolContext, tool

__all__ = [
    "AdilError",
    "Agent",
    "AgentHandle",
    "BusyError",
    "CancelToken",
    "CancelledError",
    "CapabilityError",
    "ChatChunk",
    "ChatMessage",
    "ChatResponse",
    "ChatStream",
    "ChatToolCall",
    "Client",
    "Completion",
    "ComponentRefusedError",
    "ContextLengthError",
    "DEFAULT_SAMPLING",
    "DeadlineError",
    "DisplayField",
    "ENGINE_LIBRARY",
    "Engine",
    "EngineInfo",
    "EngineInternalError",
    "EngineMemoryError",
    "Generation",
    "InvalidArgumentError",
    "Model",
    "ModelFileError",
    "ModelFormatError",
    "ModelInfo",
    "ModelNotReadyError",
    "OpenAIClient",
    "OutputValidationError",
    "PermissionDeniedError",
    "Piece",
    "Proposal",
    "RunOutcome",
    "STUB_LIBRARY",
    "Sampling",
    "ServiceConnectionError",
    "Stats",
    "StopReason",
    "Timeout",
    "Tool",
    "ToolCall",
    "ToolContext",
    "TokenLogprob",
    "ToolSchemaError",
    "Usage",
    "tool",
    "__version__",
    "models",
]

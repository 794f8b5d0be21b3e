"""The ACP method table this build knows (docs/PROTOCOL.md): one row per method, with the
capability that gates it and how each face exposes it."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Literal, Optional, TypedDict, Union


from . import _native
from ._schema import ContentBlock

__all__ = ["MethodFaces", "MethodInfo", "methods", "content_from_file"]


class MethodFaces(TypedDict):
    """The call of each face that maps to a method (``""``: not exposed)."""

    rust: str
    c: str
    node: str
    python: str
    kotlin: str
    swift: str


class MethodInfo(TypedDict):
    """One ACP method or notification."""

    name: str
    direction: Literal["client_to_agent", "agent_to_client", "both"]
    kind: Literal["request", "notification"]
    stability: Literal["stable", "unstable"]
    #: the capability that gates it (``agentCapabilities.loadSession``, ...), or None
    gate: Optional[str]
    #: params and result type names in the ACP schema
    params: str
    result: Optional[str]
    #: whether this host sends (or serves) it
    implemented: bool
    faces: MethodFaces


def methods() -> List[MethodInfo]:
    """Every ACP v1 method and notification this build knows, and how each face exposes it."""
    rows: List[MethodInfo] = json.loads(_native.methods_json())
    return rows


def content_from_file(path: Union[str, "os.PathLike[str]"]) -> ContentBlock:
    """A prompt content block from a file: an ``image``/``audio`` block (base64, MIME type from
    the extension) or an embedded text ``resource``. The path must be absolute; files over 16 MiB
    are refused (InvalidArgumentError). Whether the agent accepts the block is checked when the
    prompt is sent (UnsupportedError, nothing sent)."""
    block: ContentBlock = json.loads(_native.content_from_file(os.fspath(path)))
    return block

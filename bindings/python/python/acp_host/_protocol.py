"""The ACP method table this build knows (docs/PROTOCOL.md): one row per method, with the
capability that gates it and how each face exposes it."""

from __future__ import annotations

import json
from typing import List, Literal, Optional, TypedDict


from . import _native

__all__ = ["MethodFaces", "MethodInfo", "methods"]


class MethodFaces(TypedDict):
    """The call of each face that maps to a method (``""``: not exposed)."""

    rust: str
    c: str
    node: str
    python: str


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

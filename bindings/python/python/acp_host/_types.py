"""Plain value types returned by the API (frozen dataclasses, JSON-friendly via ``to_dict``)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "PermissionOption",
    "PermissionRequest",
    "TurnResult",
    "SessionState",
    "AgentExit",
]


@dataclasses.dataclass(frozen=True)
class PermissionOption:
    """One option the agent offered: answer with its ``option_id``."""

    option_id: str
    name: str
    #: ``allow_once``, ``allow_always``, ``reject_once``, ``reject_always`` (or a future kind)
    kind: str


@dataclasses.dataclass(frozen=True)
class PermissionRequest:
    """A permission request no rule decided, as the host's handler sees it.

    Return one of ``options``' ``option_id`` to choose it, or ``None`` to deny. Anything else
    (another id, another type, an exception, a timeout) denies.
    """

    #: The host's id (for ``respond_permission``).
    id: int
    #: The host's id of the agent asking.
    agent: int
    session_id: str
    #: The turn in flight when the request arrived.
    turn: Optional[int]
    #: The request's ``toolCall`` merged over the tool call the session already knows (ACP shape).
    tool_call: Dict[str, Any]
    options: List[PermissionOption]
    _settled: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def settled(self) -> bool:
        """True once the request was resolved elsewhere (timeout, cancel, agent exit)."""
        return bool(self._settled) if self._settled is not None else False

    def option_id(self, kind: str) -> Optional[str]:
        """The id of the first offered option of ``kind`` (e.g. ``"allow_once"``), or ``None``."""
        for opt in self.options:
            if opt.kind == kind:
                return opt.option_id
        return None

    @property
    def title(self) -> Optional[str]:
        t = self.tool_call.get("title")
        return t if isinstance(t, str) else None

    @property
    def tool_kind(self) -> Optional[str]:
        k = self.tool_call.get("kind")
        return k if isinstance(k, str) else None

    @classmethod
    def _from_json(cls, raw: str, settled: Any = None) -> "PermissionRequest":
        d = json.loads(raw)
        return cls(
            id=int(d["requestId"]),
            agent=int(d["agent"]),
            session_id=str(d["sessionId"]),
            turn=d.get("turn"),
            tool_call=d.get("toolCall") if isinstance(d.get("toolCall"), dict) else {},
            options=[
                PermissionOption(str(o["optionId"]), str(o.get("name", "")), str(o.get("kind", "")))
                for o in d.get("options", [])
            ],
            _settled=settled,
        )

    def to_dict(self) -> Dict[str, Any]:
        return {
            "requestId": self.id,
            "agent": self.agent,
            "sessionId": self.session_id,
            "turn": self.turn,
            "toolCall": self.tool_call,
            "options": [
                {"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in self.options
            ],
        }


@dataclasses.dataclass(frozen=True)
class TurnResult:
    """How a prompt turn ended."""

    #: The host's turn id (the ``turn`` field of this turn's events).
    turn: int
    #: ``end_turn``, ``max_tokens``, ``max_turn_requests``, ``refusal``, ``cancelled`` (or future).
    stop_reason: str
    #: ``usage`` of the prompt response, when the agent sent it.
    usage: Optional[Dict[str, Any]]
    #: The whole ``session/prompt`` response.
    raw: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SessionState:
    """A snapshot of a session, kept current by the host as updates arrive."""

    session_id: str
    cwd: Optional[str]
    additional_directories: List[str]
    #: False once the session was closed, deleted, or its agent exited.
    open: bool
    #: ``{currentModeId, availableModes}`` when the agent has modes.
    modes: Optional[Dict[str, Any]]
    current_mode_id: Optional[str]
    config_options: Optional[List[Dict[str, Any]]]
    #: Tool calls merged from ``tool_call`` + ``tool_call_update``, in order of first appearance.
    tool_calls: List[Dict[str, Any]]
    plan: Optional[List[Dict[str, Any]]]
    available_commands: Optional[List[Dict[str, Any]]]
    usage: Optional[Dict[str, Any]]
    title: Optional[str]
    updated_at: Optional[str]
    #: The turn in flight, if any.
    active_turn: Optional[int]
    last_stop_reason: Optional[str]

    @classmethod
    def _from_json(cls, raw: str) -> "SessionState":
        d: Mapping[str, Any] = json.loads(raw)
        return cls(
            session_id=d.get("sessionId", ""),
            cwd=d.get("cwd"),
            additional_directories=list(d.get("additionalDirectories") or []),
            open=bool(d.get("open")),
            modes=d.get("modes"),
            current_mode_id=d.get("currentModeId"),
            config_options=d.get("configOptions"),
            tool_calls=list(d.get("toolCalls") or []),
            plan=d.get("plan"),
            available_commands=d.get("availableCommands"),
            usage=d.get("usage"),
            title=d.get("title"),
            updated_at=d.get("updatedAt"),
            active_turn=d.get("activeTurn"),
            last_stop_reason=d.get("lastStopReason"),
        )

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class AgentExit:
    """How an agent process ended."""

    exit_code: Optional[int]
    signal: Optional[str]
    #: The last bytes the agent wrote to stderr (bounded).
    stderr_tail: str

    @classmethod
    def _from_json(cls, raw: Optional[str]) -> Optional["AgentExit"]:
        if not raw:
            return None
        d = json.loads(raw)
        return cls(d.get("exitCode"), d.get("signal"), d.get("stderrTail") or "")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

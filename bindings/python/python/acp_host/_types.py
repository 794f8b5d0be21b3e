"""Plain value types returned by the API (frozen dataclasses, JSON-friendly via ``to_dict``)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple, TypedDict, Union, cast

# ACP shapes, generated from schema/events.schema.json (annotations only: the values are the
# JSON as the agent sent it, so kinds and fields newer than the schema may still appear).
from ._errors import ConfigError, _loads
from ._schema import (
    AgentCapabilities,
    AuthMethod,
    AvailableCommand,
    ElicitationSchema,
    PermissionOptionKind,
    PlanEntry,
    SessionConfigOption,
    SessionModeState,
    StopReason,
    ToolCallUpdate,
    ToolKind,
    UsageUpdate,
)

__all__ = [
    "PermissionOption",
    "PermissionRequest",
    "ElicitationMode",
    "ElicitationRequest",
    "ElicitationAnswer",
    "ElicitationAccept",
    "ElicitationDecline",
    "ElicitationCancel",
    "TurnResult",
    "ModelInfo",
    "ModelSwitch",
    "SessionModels",
    "SessionState",
    "AgentExit",
    "SessionStatus",
    "SessionDefaults",
    "AgentSpec",
    "RestartPolicy",
    "Replay",
    "ReplayPace",
    "PoolMode",
    "PoolStats",
    "Progress",
    "ProgressPhase",
    "ProgressStage",
]


@dataclasses.dataclass(frozen=True)
class PermissionOption:
    """One option the agent offered: answer with its ``option_id``."""

    option_id: str
    name: str
    #: ``allow_once``, ``allow_always``, ``reject_once``, ``reject_always`` (or a future kind)
    kind: PermissionOptionKind


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
    #: The request's ``toolCall`` merged over the tool call the session already knows (ACP shape;
    #: ``{}`` if the agent sent none).
    tool_call: ToolCallUpdate
    options: List[PermissionOption]
    _settled: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def settled(self) -> bool:
        """True once the request was resolved elsewhere (timeout, cancel, agent exit)."""
        return bool(self._settled) if self._settled is not None else False

    def option_id(self, kind: PermissionOptionKind) -> Optional[str]:
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
    def tool_kind(self) -> Optional[ToolKind]:
        k = self.tool_call.get("kind")
        return k if isinstance(k, str) else None

    @classmethod
    def _from_json(cls, raw: str, settled: Any = None) -> "PermissionRequest":
        d = _loads(raw, "the permission request")
        return cls(
            id=int(d["requestId"]),
            agent=int(d["agent"]),
            session_id=str(d["sessionId"]),
            turn=d.get("turn"),
            tool_call=d.get("toolCall") if isinstance(d.get("toolCall"), dict) else cast(ToolCallUpdate, {}),
            options=[
                PermissionOption(str(o["optionId"]), str(o.get("name", "")),
                                 cast(PermissionOptionKind, str(o.get("kind", ""))))
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


#: An elicitation mode: a form built from a flat JSON schema, or consent to open a URL.
#: (Spelled as a Union of Literals: mypy.stubtest checks such an alias as a Union at runtime.)
ElicitationMode = Union[Literal["form"], Literal["url"]]


class _AcceptAction(TypedDict):
    action: Literal["accept"]


class ElicitationAccept(_AcceptAction, total=False):
    """``{"action": "accept", "content": {...}}``: for a form, the values (checked against
    ``requested_schema``); for a URL, consent to open it (``content`` is ignored)."""

    content: Dict[str, Any]


class ElicitationDecline(TypedDict):
    """``{"action": "decline"}``: the user said no."""

    action: Literal["decline"]


class ElicitationCancel(TypedDict):
    """``{"action": "cancel"}``: the user dismissed the question."""

    action: Literal["cancel"]


#: An answer to an elicitation, in the ACP response shape.
ElicitationAnswer = Union[ElicitationAccept, ElicitationDecline, ElicitationCancel]


@dataclasses.dataclass(frozen=True)
class ElicitationRequest:
    """The agent asks the user for input (``elicitation/create``), as ``on_elicitation`` sees it.

    ``mode == "form"``: render ``requested_schema`` (a flat object of primitive and enum
    properties) and answer ``{"action": "accept", "content": {...}}`` with the values. ``mode ==
    "url"``: show the full ``url`` (and ``agent``, who asks), and answer ``{"action": "accept"}``
    only if the user consents to open it; the host never opens it. ``{"action": "decline"}`` and
    ``{"action": "cancel"}`` refuse. An exception, anything that is not such an answer, content
    that does not match the schema, or the elicitation timeout answers ``cancel``.
    """

    #: The host's id (for ``respond_elicitation``).
    request_id: int
    #: The host's id of the agent asking.
    agent: int
    #: Session scope: the session (and tool call) it belongs to.
    session_id: Optional[str]
    tool_call_id: Optional[str]
    #: Request scope: the id of the host's request in flight it belongs to (e.g. ``authenticate``).
    scope_request_id: Any
    #: False when ``scope_request_id`` names none of the host's requests in flight (the agent
    #: chose the id): still asked, under the same fail-closed rules. True for session scope.
    scope_known: bool
    #: The turn in flight when it arrived, if any.
    turn: Optional[int]
    message: str
    mode: ElicitationMode
    #: Form mode: the JSON schema of the form (``None`` in URL mode).
    requested_schema: Optional[ElicitationSchema] = None
    #: URL mode: the agent's id for this elicitation (``elicitation_completed`` names it).
    elicitation_id: Optional[str] = None
    #: URL mode: the URL to show (never opened by the host).
    url: Optional[str] = None
    _settled: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def id(self) -> int:
        """The same as ``request_id`` (like ``PermissionRequest.id``)."""
        return self.request_id

    @property
    def settled(self) -> bool:
        """True once the request was resolved elsewhere (timeout, cancel, agent exit, another
        answer): a UI can close its form."""
        return bool(self._settled) if self._settled is not None else False

    @classmethod
    def _from_json(cls, raw: str, settled: Any = None) -> "ElicitationRequest":
        d = _loads(raw, "the elicitation request")
        mode = d.get("mode")
        schema = d.get("requestedSchema")
        return cls(
            request_id=int(d["requestId"]),
            agent=int(d["agent"]),
            session_id=d.get("sessionId"),
            tool_call_id=d.get("toolCallId"),
            scope_request_id=d.get("scopeRequestId"),
            scope_known=bool(d.get("scopeKnown", True)),
            turn=d.get("turn"),
            message=str(d.get("message", "")),
            mode="url" if mode == "url" else "form",
            requested_schema=cast(ElicitationSchema, schema) if isinstance(schema, dict) else None,
            elicitation_id=d.get("elicitationId"),
            url=d.get("url"),
            _settled=settled,
        )

    def to_dict(self) -> Dict[str, Any]:
        """The ``elicitation_requested`` event's shape (camelCase)."""
        d: Dict[str, Any] = {
            "requestId": self.request_id,
            "agent": self.agent,
            "sessionId": self.session_id,
            "toolCallId": self.tool_call_id,
            "scopeRequestId": self.scope_request_id,
            "scopeKnown": self.scope_known,
            "turn": self.turn,
            "message": self.message,
            "mode": self.mode,
        }
        if self.mode == "form":
            d["requestedSchema"] = self.requested_schema
        else:
            d["elicitationId"] = self.elicitation_id
            d["url"] = self.url
        return d


@dataclasses.dataclass(frozen=True)
class TurnResult:
    """How a prompt turn ended."""

    #: The host's turn id (the ``turn`` field of this turn's events).
    turn: int
    #: ``end_turn``, ``max_tokens``, ``max_turn_requests``, ``refusal``, ``cancelled`` (or future).
    stop_reason: StopReason
    #: ``usage`` of the prompt response, when the agent sent it.
    usage: Optional[Dict[str, Any]]
    #: The whole ``session/prompt`` response.
    raw: Dict[str, Any]
    #: The agent's message text of this turn, assembled from its ``agent_message_chunk`` text
    #: blocks (under ACP v2 also its ``agent_message`` upserts, each replacing its message's text)
    #: (print the answer without reading events).
    text: str = ""
    #: The agent's thought text of this turn (``agent_thought_chunk``), kept apart from ``text``.
    thought: str = ""
    #: ``text`` or ``thought`` reached 4 MiB and was cut there.
    text_truncated: bool = False

    @classmethod
    def _from_native(cls, text: str) -> "TurnResult":
        j = _loads(text, "the turn's result")
        return cls(j["turn"], cast(StopReason, j["stopReason"]), j["usage"], j["raw"], j["text"], j["thought"],
                   j["textTruncated"])

    def to_dict(self) -> Dict[str, Any]:
        """The fields by their Python names."""
        return dataclasses.asdict(self)

    def to_json(self) -> Dict[str, Any]:
        """The core's one result shape, as every face returns it: ``{"turn", "stopReason",
        "usage", "raw", "text", "thought", "textTruncated"}`` (``usage`` is ``None`` when the
        agent sent none)."""
        return {"turn": self.turn, "stopReason": self.stop_reason, "usage": self.usage, "raw": self.raw,
                "text": self.text, "thought": self.thought, "textTruncated": self.text_truncated}


#: What ``Session.steer`` did with the text.
#: (Spelled as a Union of Literals, as ``ElicitationMode``.)
SteerOutcome = Union[Literal["injected"], Literal["started_new_turn"], Literal["queued"], Literal["prompted"]]


@dataclasses.dataclass(frozen=True)
class SteerResult:
    """What ``Session.steer`` did with the text (its later fate is in ``steer`` events)."""

    #: The host's id for the steer (the ``steer`` field of its events).
    steer: int
    #: ``injected`` (into the running turn), ``started_new_turn`` (the agent began a turn of its
    #: own), ``queued`` (waits for the running turn to end) or ``prompted`` (sent as the next
    #: prompt at once: ``turn`` is its turn).
    outcome: SteerOutcome
    #: ``injected``: the turn it joined; ``prompted``: its own turn; else ``None``.
    turn: Optional[int]

    @classmethod
    def _from_native(cls, text: str) -> "SteerResult":
        j = _loads(text, "the steer's result")
        return cls(j["steer"], cast(SteerOutcome, j["outcome"]), j["turn"])

    def to_json(self) -> Dict[str, Any]:
        """The core's one result shape, as every face returns it: ``{"steer", "outcome", "turn"}``."""
        return {"steer": self.steer, "outcome": self.outcome, "turn": self.turn}


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """One model the agent offers for a session."""

    #: The id to pass to ``set_model``.
    id: str
    name: str
    description: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ModelSwitch:
    """How ``set_model`` switches models for this agent."""

    #: ``"config_option"``: ``session/set_config_option`` on the session's config option of
    #: category ``model`` (ACP v1); ``"legacy"``: the legacy ``session/set_model``.
    kind: Literal["config_option", "legacy"]
    #: The id of that config option (``kind == "config_option"``), else ``None``.
    config_id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """``{"kind": "config_option", "configId": ...}`` or ``{"kind": "legacy"}``."""
        if self.kind == "config_option":
            return {"kind": self.kind, "configId": self.config_id}
        return {"kind": self.kind}


@dataclasses.dataclass(frozen=True)
class SessionModels:
    """The models the agent offers for a session, and the current one (``session.models()``)."""

    #: The current model's id, when the agent said.
    current: Optional[str]
    available: List[ModelInfo]
    via: ModelSwitch

    @classmethod
    def _from_json(cls, raw: Optional[str]) -> Optional["SessionModels"]:
        if not raw:
            return None
        d = _loads(raw, "the session's models")
        via = d.get("via") or {}
        return cls(
            current=d.get("current"),
            available=[
                ModelInfo(str(m["id"]), str(m.get("name") or ""), m.get("description"))
                for m in d.get("available") or []
            ],
            via=ModelSwitch("config_option", via.get("configId"))
            if via.get("kind") == "config_option"
            else ModelSwitch("legacy"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The core's shape: ``{current, available: [{id, name, description}], via}``."""
        return {
            "current": self.current,
            "available": [m.to_dict() for m in self.available],
            "via": self.via.to_dict(),
        }


@dataclasses.dataclass(frozen=True)
class SessionState:
    """A snapshot of a session, kept current by the host as updates arrive."""

    session_id: str
    cwd: Optional[str]
    additional_directories: List[str]
    #: False once the session was closed, deleted, or its agent exited.
    open: bool
    #: ``{currentModeId, availableModes}`` when the agent has modes.
    modes: Optional[SessionModeState]
    current_mode_id: Optional[str]
    config_options: Optional[List[SessionConfigOption]]
    #: Tool calls merged from ``tool_call`` + ``tool_call_update`` (+ ACP v2's
    #: ``tool_call_content_chunk``), in order of first appearance:
    #: ``toolCallId`` always, the other fields as last sent (a call first seen in an update may
    #: have no ``title``), hence the ``ToolCallUpdate`` shape.
    tool_calls: List[ToolCallUpdate]
    #: The current plan entries (each ``plan`` replaces them; under ACP v2, the ``items`` plan of
    #: the latest ``plan_update``, cleared by its ``plan_removed``).
    plan: Optional[List[PlanEntry]]
    available_commands: Optional[List[AvailableCommand]]
    #: The latest ``usage_update`` (``{used, size, cost?}``).
    usage: Optional[UsageUpdate]
    title: Optional[str]
    updated_at: Optional[str]
    #: The turn in flight, if any.
    active_turn: Optional[int]
    last_stop_reason: Optional[StopReason]

    @classmethod
    def _from_json(cls, raw: str) -> "SessionState":
        d: Mapping[str, Any] = _loads(raw, "the session state")
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
        d = _loads(raw, "the exit status")
        return cls(d.get("exitCode"), d.get("signal"), d.get("stderrTail") or "")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SessionStatus:
    """``Agent.session_status`` (unstable ``session/status``): whether the agent has the session
    in memory."""

    #: ``"open"`` (in memory for any connection: load or resume it before prompting if it was not
    #: opened here) or ``"saved"`` (known, resumable). A value this host does not know is ``"saved"``.
    status: Literal["open", "saved"]
    #: The agent's value verbatim (differs from ``status`` only for one this host does not know).
    reported: str

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    @classmethod
    def _from_json(cls, raw: str) -> "SessionStatus":
        d = _loads(raw, "the session/status result")
        return cls("open" if d.get("status") == "open" else "saved", str(d.get("reported", "")))

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SessionDefaults:
    """``Agent.session_options`` (unstable ``session/options``): the modes and config options a
    session would start with, without one being created."""

    modes: Optional[SessionModeState]
    config_options: Optional[List[SessionConfigOption]]

    @classmethod
    def _from_json(cls, raw: str) -> "SessionDefaults":
        d = _loads(raw, "the session/options result")
        return cls(d.get("modes"), d.get("configOptions"))

    def to_dict(self) -> Dict[str, Any]:
        return {"modes": self.modes, "configOptions": self.config_options}


#: The largest ``max_restarts`` (the core counts attempts in 32 bits).
_MAX_RESTARTS = 2**32 - 1
#: The largest delay, in seconds (the core takes milliseconds as a 64-bit integer).
_MAX_SECONDS = (2**64 - 1) / 1000


@dataclasses.dataclass(frozen=True)
class RestartPolicy:
    """Supervision for a spawned agent (``spawn(..., restart=RestartPolicy())``): when its process
    ends without being asked to, it is started again under the same agent id, its open sessions
    are reopened (``session/resume``, else ``session/load``, else reported ``session_lost``) and the
    existing ``Agent`` and ``Session`` objects reach the new process (``agent_restarting`` /
    ``agent_restarted`` events).

    ``max_restarts``: consecutive attempts before giving up (``agent_failed``; 0 = never restart,
    only report). ``backoff``: seconds before the first attempt, doubling for each further
    consecutive one up to ``max_backoff``. ``reset_after``: a process that ran this many seconds
    counts as healthy, and the next crash starts counting attempts from 1 again. A value that
    cannot be used raises ``ConfigError`` (``data["path"]``: ``restart.backoff``, ...).
    """

    max_restarts: int = 3
    backoff: float = 0.25
    max_backoff: float = 10.0
    reset_after: float = 60.0

    def __post_init__(self) -> None:
        n = self.max_restarts
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _MAX_RESTARTS:
            raise _restart_error("max_restarts", f"max_restarts must be an int from 0 to {_MAX_RESTARTS}, got {n!r}")
        for name in ("backoff", "max_backoff", "reset_after"):
            v = getattr(self, name)
            ok = not isinstance(v, bool) and isinstance(v, (int, float))
            if not ok or not 0 <= v <= _MAX_SECONDS:  # NaN fails the comparison too
                raise _restart_error(name, f"{name} must be a non-negative, finite number of seconds, got {v!r}")

    def to_json(self) -> Dict[str, int]:
        """The JSON form every face takes: ``{"maxRestarts", "backoffMs", "maxBackoffMs",
        "resetAfterMs"}`` (milliseconds, rounded)."""
        return {
            "maxRestarts": self.max_restarts,
            "backoffMs": _ms(self.backoff),
            "maxBackoffMs": _ms(self.max_backoff),
            "resetAfterMs": _ms(self.reset_after),
        }

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def _ms(seconds: float) -> int:
    return min(round(seconds * 1000), 2**64 - 1)


def _restart_error(field: str, message: str) -> ConfigError:
    path = f"restart.{field}"
    return ConfigError(f"invalid config: {path}: {message}", code="invalid_config", data={"path": path})


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """A command to start an agent with: ``program``, its ``args`` and the ``env`` it needs set.

    ``Host.spawn`` / ``AsyncHost.spawn`` take it as their command (``host.spawn(spec, cwd=...)``);
    a ``env=`` given to ``spawn`` overlays ``spec.env``, a ``restart=`` given to ``spawn`` replaces
    ``spec.restart`` (the agent's supervision, ``RestartPolicy``; ``None``: not restarted).
    ``acp_host.registry`` resolves agents of the ACP registry into one (``ResolvedAgent.spec``;
    add supervision with ``dataclasses.replace(spec, restart=RestartPolicy())``).
    """

    program: str
    args: Tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    restart: Optional[RestartPolicy] = None

    @property
    def command(self) -> List[str]:
        """``[program, *args]``, the form ``spawn`` also takes."""
        return [self.program, *self.args]

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"program": self.program, "args": list(self.args), "env": dict(self.env)}
        if self.restart is not None:
            d["restart"] = self.restart.to_dict()
        return d


#: ``Replay(pace=...)``: the recorded delays between the agent's messages, or none.
ReplayPace = Union[Literal["recorded"], Literal["fast"]]


@dataclasses.dataclass(frozen=True)
class Replay:
    """A recording to play instead of starting an agent (``spawn(replay=Replay(...))``;
    docs/RECORDING.md, "Replaying"): the recorded agent's side is played inside the host, and
    where this host does otherwise than the recorded one is reported (a divergence: on the
    agent's stderr, ``agent_stderr`` events, and in the ``report`` file).

    ``file``: the recording (an absolute path). ``pace``: ``"recorded"`` (the recorded delays)
    or ``"fast"`` (none). ``wait``: seconds a recorded host message is waited for before it is
    reported missing (``None``: until the host closes the connection). ``report``: write the
    JSON report there (an absolute path) before the agent's side closes. ``ignore``: fields
    never compared, as a divergence names them (``"params.prompt"``). The core checks the values
    when ``spawn`` is called: one it refuses raises ``ConfigError`` (``path``: ``replay.file``,
    ``replay.waitMs``, ...), as does a file that is not a recording (naming the line).
    """

    file: Union[str, "os.PathLike[str]"]
    pace: ReplayPace = "recorded"
    wait: Optional[float] = 10.0
    report: Union[str, "os.PathLike[str]", None] = None
    ignore: Tuple[str, ...] = ()

    def to_json(self) -> Dict[str, Any]:
        """The JSON form every face takes: ``{"file", "pace", "waitMs", "report", "ignore"}``
        (paths as given, milliseconds rounded; no ``report`` when none)."""
        from ._options import seconds_to_ms  # here: _options imports this module

        # Not checked here: what the core cannot use (a file that is not a path, NaN, a text as
        # `ignore`) is handed over as it is, and refused there at its path (`replay.waitMs`, ...).
        d: Dict[str, Any] = {"file": _fspath(self.file), "pace": self.pace,
                             "waitMs": seconds_to_ms(self.wait, nullable=True), "ignore": _texts(self.ignore)}
        if self.report is not None:
            d["report"] = _fspath(self.report)
        return d

    def to_dict(self) -> Dict[str, Any]:
        return {"file": _fspath(self.file), "pace": self.pace, "wait": self.wait,
                "report": None if self.report is None else _fspath(self.report), "ignore": _texts(self.ignore)}


def _fspath(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, (str, os.PathLike)) else value


def _texts(value: Any) -> Any:
    """A sequence as a list; a text (``ignore="params.prompt"``) or a mapping as it is."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        return value
    return list(value)


#: ``host.pool(mode=...)``: one process per session, or sessions packed onto shared processes.
#: (A Union of Literals, as ``ElicitationMode``, for mypy.stubtest.)
PoolMode = Union[Literal["process-per-session"], Literal["shared"]]


@dataclasses.dataclass(frozen=True)
class PoolStats:
    """What a pool holds right now (``pool.stats``)."""

    #: Processes serving sessions (in shared mode also idle ones, until evicted).
    agents: int
    #: Warm spares: started and initialized, ready for a session.
    spares: int
    #: Processes being started.
    starting: int
    #: Sessions handed out and not released.
    sessions: int

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


#: The slow step a ``Progress`` is about: the host's own (``spawn``, ``handshake``, ``login``:
#: ``progress`` events) or a registry install's (``download``, ``extract``: ``Registry.install``'s
#: ``progress`` callback). Other names may come later.
ProgressPhase = Union[Literal["spawn"], Literal["handshake"], Literal["login"], Literal["download"],
                      Literal["extract"]]
#: Where the step is: ``waiting`` repeats every 5 s while a step of the host's has not ended.
ProgressStage = Union[Literal["started"], Literal["waiting"], Literal["done"], Literal["failed"]]


@dataclasses.dataclass(frozen=True)
class Progress:
    """One report of a slow step (the core's ``acp_host::progress::Progress``): a ``progress``
    event's ``data`` (``Progress.from_dict(ev.data)``; with ``progress_events=True``), or what
    ``Registry.install(..., progress=...)`` is called with."""

    phase: ProgressPhase
    stage: ProgressStage
    #: Milliseconds since the step started.
    elapsed_ms: int
    #: Bytes done (a download's size once fetched).
    bytes: Optional[int] = None
    #: What failed, or what is being waited for (a download's URL when it starts).
    message: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Progress":
        """From the JSON shape (``{"phase", "stage", "elapsedMs", "bytes", "message"}``, a
        ``progress`` event's ``data``)."""
        return cls(
            phase=d["phase"],
            stage=d["stage"],
            elapsed_ms=int(d["elapsedMs"]),
            bytes=d.get("bytes"),
            message=d.get("message"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The JSON shape, as in a ``progress`` event's ``data``."""
        return {"phase": self.phase, "stage": self.stage, "elapsedMs": self.elapsed_ms,
                "bytes": self.bytes, "message": self.message}

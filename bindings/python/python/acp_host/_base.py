"""What the sync classes (``_host.py``) and their asyncio twins (``_aio.py``) share, written once.

Each class here holds the members that do not wait for the agent: the native handle, the
properties and lookups read from it, ``__repr__``, and ``Host``'s option list. A twin adds only
its calls — awaitables in ``_aio.py``, and their blocking rewrite in ``_host.py``, generated from
it by scripts/unasync.py — and builds its own kind of related object through the class attributes
``_Session`` / ``_Agent``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, Iterable, List, Literal, Mapping, Optional, Sequence, TypeVar, Union

from . import _native
from ._common import (
    ElicitationModes,
    ExtRequestHandler,
    FsHandler,
    PathLike,
    PolicyLike,
    TerminalAuthHandler,
    TerminalHandler,
    register,
)
from ._errors import _loads
from ._options import UNSET, NotGiven, given, host_document
from ._schema import AgentCapabilities, AuthMethod
from ._types import AgentExit, ElicitationRequest, PermissionRequest, PoolStats, SessionModels, SessionState

PermissionHandler = Callable[[PermissionRequest], Any]
#: ``on_elicitation``: ``(ElicitationRequest) -> ElicitationAnswer`` (or a coroutine function).
ElicitationHandler = Callable[[ElicitationRequest], Any]

HostT = TypeVar("HostT")
AgentT = TypeVar("AgentT", bound="AgentBase[Any, Any]")
SessionT = TypeVar("SessionT", bound="SessionBase[Any]")
PoolT = TypeVar("PoolT", bound="PoolBase[Any]")


class StreamBase:
    """``dropped`` and ``missed`` of ``EventStream`` and ``AsyncEventStream``."""

    __slots__ = ("_sub", "__weakref__")

    def __init__(self, sub: _native.Subscription) -> None:
        self._sub = sub

    @property
    def dropped(self) -> int:
        """How many events this stream left out before its first one (the same as ``missed``)."""
        return self._sub.dropped

    @property
    def missed(self) -> int:
        """How many events this stream left out before its first one, reported, never silent: for
        a session's stream, those the host's bounded history of the session (``early_update_limit``
        events) no longer held when it was opened; for the host's first stream, those let go
        before it was opened; else 0."""
        return self._sub.missed


class SessionBase(Generic[AgentT]):
    __slots__ = ("_n", "_agent", "__weakref__")

    def __init__(self, native: _native.NativeSession, agent: AgentT) -> None:
        self._n = native
        self._agent = agent

    @property
    def id(self) -> str:
        return self._n.id

    @property
    def agent(self) -> AgentT:
        return self._agent

    @property
    def state(self) -> SessionState:
        """A snapshot: modes, config options, merged tool calls, plan, usage, title, ..."""
        return SessionState._from_json(self._n.state_json())

    def models(self) -> Optional[SessionModels]:
        """The models the agent offers for this session and the current one (from its config
        option of category ``model``, else the legacy ``models`` of the session/new, load or resume
        response), or ``None`` when the agent offers no model choice. Not awaitable in asyncio
        either: it reads the session's state."""
        return SessionModels._from_json(self._n.models_json())

    def _open_at_agent(self) -> bool:
        return self._agent._n.session(self.id) is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, agent={self._agent.id})"


class AgentBase(Generic[HostT, SessionT]):
    __slots__ = ("_n", "_host", "__weakref__")
    #: The twin's session class.
    _Session: Callable[[_native.NativeSession, Any], SessionT]

    def __init__(self, native: _native.NativeAgent, host: HostT) -> None:
        self._n = native
        self._host = host

    @property
    def id(self) -> int:
        """The host's id for the agent (the ``agent`` field of events)."""
        return self._n.id

    @property
    def info(self) -> Dict[str, Any]:
        """``{protocolVersion, agentInfo, capabilities, authMethods}`` from ``initialize``."""
        raw = self._n.info_json
        return _loads(raw, "the initialize result") if raw else {}

    @property
    def name(self) -> Optional[str]:
        ai = self.info.get("agentInfo")
        return ai.get("name") if isinstance(ai, dict) else None

    @property
    def capabilities(self) -> AgentCapabilities:
        caps = self.info.get("capabilities")
        return caps if caps else {}

    @property
    def auth_methods(self) -> List[AuthMethod]:
        methods = self.info.get("authMethods")
        return methods if methods else []

    @property
    def exit_info(self) -> Optional[AgentExit]:
        """How the agent's process ended, once it has (``None`` again once a supervised agent was
        restarted)."""
        return AgentExit._from_json(self._n.exit_info_json)

    @property
    def pid(self) -> Optional[int]:
        """The agent's process id (a restarted agent has a new one)."""
        return self._n.pid

    @property
    def restarts_exhausted(self) -> bool:
        """Whether the supervisor gave up on this agent (``agent_failed``): it stays down and its
        calls raise ``AgentExitedError``. Always ``False`` for an agent spawned without
        ``restart``."""
        return self._n.restarts_exhausted

    @property
    def auth_method_kinds(self) -> Dict[str, str]:
        """How each of ``auth_methods`` authenticates, by id: ``"agent"`` (use ``authenticate``),
        ``"terminal"`` or ``"legacy_terminal"`` (``_meta["terminal-auth"]``; use
        ``terminal_auth``)."""
        return {m["id"]: m["kind"] for m in _loads(self._n.auth_methods(), "the auth methods")}

    def session(self, session_id: str) -> Optional[SessionT]:
        """A handle to an open session of this agent."""
        n = self._n.session(session_id)
        return None if n is None else self._Session(n, self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id}, name={self.name!r})"


class PooledSessionBase(Generic[PoolT, AgentT, SessionT]):
    __slots__ = ("_n", "_pool", "_agent", "_session", "__weakref__")
    #: The twin's agent and session classes.
    _Agent: Callable[[_native.NativeAgent, Any], AgentT]
    _Session: Callable[[_native.NativeSession, AgentT], SessionT]

    def __init__(self, native: _native.NativePooledSession, pool: PoolT) -> None:
        self._n = native
        self._pool = pool
        self._agent = self._Agent(native.agent(), pool._host)
        self._session = self._Session(native.session(), self._agent)

    @property
    def id(self) -> str:
        return self._n.id

    @property
    def pool(self) -> PoolT:
        return self._pool

    @property
    def agent(self) -> AgentT:
        """The pooled process serving the session (``agent.pid``, ``agent.info``, ...). Shutting
        it down yourself ends the session."""
        return self._agent

    @property
    def session(self) -> SessionT:
        """The underlying ``Session``: ``set_mode``, ``models``, ``set_config_option``, ...
        (its ``prompt`` does not queue: it raises ``BusyError`` while a turn runs)."""
        return self._session

    @property
    def state(self) -> SessionState:
        """A snapshot of the session's state (``session.state``)."""
        return self._session.state

    @property
    def pending_prompts(self) -> int:
        """Prompts of this session handed over and not finished: the running one and the queued
        ones."""
        return self._n.pending

    @property
    def released(self) -> bool:
        return self._n.released

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, agent={self._agent.id})"


class PoolBase(Generic[HostT]):
    __slots__ = ("_n", "_host", "__weakref__")

    def __init__(self, native: _native.NativePool, host: HostT) -> None:
        self._n = native
        self._host = host

    @property
    def closed(self) -> bool:
        """Whether the pool was shut down (``shutdown()`` or ``Host.close()``)."""
        return self._n.closed

    @property
    def stats(self) -> PoolStats:
        """What the pool holds right now."""
        return PoolStats(*self._n.stats())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.stats}, closed={self.closed})"


class HostBase(Generic[AgentT]):
    #: The twin's agent class.
    _Agent: Callable[[_native.NativeAgent, Any], AgentT]

    def __init__(
        self,
        *,
        policy: PolicyLike = None,
        permission: Optional[Literal["deny", "manual", "handler"]] = None,
        on_permission: Union[PermissionHandler, str, None] = None,
        permission_timeout: Optional[float] = None,
        permission_timeout_ms: Optional[int] = None,
        roots: Optional[Iterable[PathLike]] = None,
        elicitation: Optional[Literal["none", "manual", "handler"]] = None,
        on_elicitation: Union[ElicitationHandler, str, None] = None,
        elicitation_modes: Optional[ElicitationModes] = None,
        elicitation_timeout: Optional[float] = None,
        elicitation_timeout_ms: Optional[int] = None,
        request_timeout: Union[Optional[float], NotGiven] = UNSET,
        request_timeout_ms: Union[Optional[int], NotGiven] = UNSET,
        prompt_timeout: Union[Optional[float], NotGiven] = UNSET,
        prompt_timeout_ms: Union[Optional[int], NotGiven] = UNSET,
        cancel_grace: Optional[float] = None,
        cancel_grace_ms: Optional[int] = None,
        shutdown_grace: Optional[float] = None,
        shutdown_grace_ms: Optional[int] = None,
        events: Optional[bool] = None,
        event_capacity: Optional[int] = None,
        event_queue_bytes: Optional[int] = None,
        event_stall_timeout: Union[Optional[float], NotGiven] = UNSET,
        event_stall_timeout_ms: Union[Optional[int], NotGiven] = UNSET,
        wire_events: Optional[bool] = None,
        record: Optional[Mapping[str, Any]] = None,
        progress_events: Optional[bool] = None,
        coalesce_tool_call_updates: Optional[bool] = None,
        max_line_bytes: Optional[int] = None,
        stderr_tail_bytes: Optional[int] = None,
        max_outbound_bytes: Optional[int] = None,
        max_pending_agent_requests: Optional[int] = None,
        early_update_limit: Optional[int] = None,
        fs: Union[bool, Literal["builtin", "embedder", "disabled"], FsHandler, None] = None,
        fs_limits: Optional[Mapping[str, Optional[int]]] = None,
        terminal: Union[bool, Literal["builtin", "embedder", "disabled"], TerminalHandler, None] = None,
        terminal_limits: Optional[Mapping[str, Optional[int]]] = None,
        ext: Optional[Literal["none", "embedder"]] = None,
        on_ext_request: Optional[ExtRequestHandler] = None,
        terminal_auth: Optional[Literal["none", "embedder"]] = None,
        on_terminal_auth: Optional[TerminalAuthHandler] = None,
        client_info: Optional[Mapping[str, str]] = None,
        client_name: Optional[str] = None,
        client_version: Optional[str] = None,
        unstable: Optional[Sequence[str]] = None,
        log_level: Optional[Literal["error", "warn", "info", "debug", "trace"]] = None,
        **options: Any,
    ) -> None:
        doc, hooks = host_document({**given(locals()), **options})
        self._n = _native.NativeHost(doc, **hooks)
        self._bind_loop()
        register(self)

    def _bind_loop(self) -> None:
        """The asyncio twin binds the running loop here; the sync host has none."""

    @property
    def closed(self) -> bool:
        return self._n.closed

    @property
    def dropped_log_records(self) -> int:
        """Log records the host dropped because the ``acp_host`` logging handlers fell 1024
        records behind (each loss is also told by one ``warn`` record on ``acp_host.log``); 0
        without ``log_level``."""
        return self._n.dropped_log_records

    @property
    def policy_name(self) -> str:
        """The effective policy's name (a preset name, or ``custom``)."""
        return self._n.policy_name

    def agent(self, agent_id: int) -> Optional[AgentT]:
        n = self._n.agent(agent_id)
        return None if n is None else self._Agent(n, self)

    def _close_at_exit(self) -> None:
        self._n.close(aio=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.policy_name!r}, closed={self.closed})"

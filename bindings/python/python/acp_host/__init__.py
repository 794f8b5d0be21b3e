"""acp_host: run Agent Client Protocol (ACP) agents from Python.

A small typed API over the acp-host Rust core, as a synchronous ``Host`` and an asyncio
``AsyncHost``::

    import acp_host

    with acp_host.Host(policy="read-only") as host:
        agent = host.spawn(["claude-agent-acp"])
        session = agent.new_session(cwd=os.getcwd())  # absolute
        result = session.prompt("Summarise the README")
        print(result.stop_reason)

    async with acp_host.AsyncHost(on_permission=decide) as host:
        agent = await host.spawn(["my-agent"])
        session = await agent.new_session(os.getcwd())
        async with session.events() as events:
            task = asyncio.create_task(session.prompt("hello"))
            async for ev in events:
                ...

Events carry exactly the docs/EVENTS.md envelope (``seq``, ``at``, ``agent``, ``session``, ``turn``,
``kind``, ``replay``, ``data``; ``to_dict()`` / ``to_json()``). Streams are typed ``AnyEvent``:
narrowing on ``ev.kind`` (then on ``ev.data["sessionUpdate"]``) types ``ev.data``
(``acp_host.types``, generated from schema/events.schema.json). Permission requests go through a
fail-closed flow: a policy (``"deny-all"``, ``"read-only"``, ``"ask"`` or a document), then the
``on_permission`` handler; anything but an offered option id denies. Elicitations (forms, URL
consent) go to ``on_elicitation`` the same fail-closed way: anything but a valid answer cancels.
``acp_host.registry`` resolves agents of the ACP registry into an ``AgentSpec`` that ``spawn``
takes (and installs binary distributions from local archives, when asked).
Errors are ``AcpError`` subclasses with ``.code`` and ``.data``. Agents run in their own process
groups and are shut down when their host closes (``with``/``async with``, ``close()``, or
interpreter exit). ``spawn(..., restart=RestartPolicy())`` supervises an agent: a process that
dies is started again, its sessions reopened, and the same ``Agent``/``Session`` objects go on.
``Host(record={"file": ...})`` records each connection; ``spawn(replay=Replay(file))`` plays a
recording's agent side back instead of starting one and reports where this host diverges.
``host.pool(command, ...)`` keeps agents started ahead and hands out sessions on them
(process per session or shared, warm spares, a cap); a pooled session's prompts queue.
``Host(log_level="info")`` sends the host's log records to the ``logging`` logger ``acp_host``
(one child per part of the host: ``acp_host.spawn``, ``acp_host.permission``, ...; a
``NullHandler`` is installed, so nothing is printed until logging is configured);
``progress_events=True`` adds ``progress`` events for slow steps (spawn, handshake, login).
"""

from __future__ import annotations

from . import _native, registry, types
from ._logging import TRACE
from ._aio import AsyncAgent, AsyncEventStream, AsyncHost, AsyncPool, AsyncPooledSession, AsyncSession
from ._errors import (
    AcpError,
    AgentError,
    AgentExitedError,
    AlreadyResolvedError,
    EventsStalledError,
    AuthRequiredError,
    BusyError,
    CancelledError,
    ClosedError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    ConfigError,
    PolicyError,
    ProtocolError,
    ServiceError,
    SpawnError,
    TimeoutError,
    UnsupportedError,
    VersionUnsupportedError,
)
from ._common import ExtRequestHandler, FsHandler, TerminalHandler
from ._host import Agent, EventStream, Host, Pool, PooledSession, Session
from ._protocol import MethodFaces, MethodInfo, content_from_file, methods
from ._schema import AnyEvent, EventEnvelope, EventKind, Receipt, RequestState
from ._types import (
    AgentExit,
    SessionDefaults,
    SessionStatus,
    AgentSpec,
    ElicitationAccept,
    ElicitationAnswer,
    ElicitationCancel,
    ElicitationDecline,
    ElicitationMode,
    ElicitationRequest,
    ModelInfo,
    ModelSwitch,
    PermissionOption,
    PermissionRequest,
    PoolMode,
    PoolStats,
    Progress,
    ProgressPhase,
    ProgressStage,
    Replay,
    ReplayPace,
    RestartPolicy,
    SessionModels,
    SessionState,
    SteerOutcome,
    SteerResult,
    TurnResult,
)

Event = _native.Event

__version__: str = _native.__version__
#: The ACP protocol version this host speaks.
PROTOCOL_VERSION: int = _native.PROTOCOL_VERSION

__all__ = [
    "Host",
    "Receipt",
    "RequestState",
    "Agent",
    "Session",
    "EventStream",
    "AsyncHost",
    "AsyncAgent",
    "AsyncSession",
    "AsyncEventStream",
    "Pool",
    "PooledSession",
    "AsyncPool",
    "AsyncPooledSession",
    "PoolStats",
    "PoolMode",
    "Progress",
    "ProgressPhase",
    "ProgressStage",
    "TRACE",
    "Event",
    "AnyEvent",
    "EventKind",
    "EventEnvelope",
    "types",
    "PermissionRequest",
    "PermissionOption",
    "ElicitationRequest",
    "ElicitationAnswer",
    "ElicitationAccept",
    "ElicitationDecline",
    "ElicitationCancel",
    "ElicitationMode",
    "TurnResult",
    "SteerResult",
    "SteerOutcome",
    "SessionModels",
    "ModelInfo",
    "ModelSwitch",
    "SessionState",
    "AgentExit",
    "SessionStatus",
    "SessionDefaults",
    "AgentSpec",
    "RestartPolicy",
    "Replay",
    "ReplayPace",
    "registry",
    "AcpError",
    "AgentExitedError",
    "TimeoutError",
    "UnsupportedError",
    "ProtocolError",
    "AgentError",
    "AuthRequiredError",
    "VersionUnsupportedError",
    "InvalidArgumentError",
    "ConfigError",
    "PolicyError",
    "SpawnError",
    "IoError",
    "ClosedError",
    "CancelledError",
    "BusyError",
    "NotFoundError",
    "AlreadyResolvedError",
    "EventsStalledError",
    "ServiceError",
    "FsHandler",
    "TerminalHandler",
    "ExtRequestHandler",
    "methods",
    "content_from_file",
    "MethodInfo",
    "MethodFaces",
    "PROTOCOL_VERSION",
    "__version__",
]

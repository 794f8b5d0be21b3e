"""The exception tree: ``AcpError`` with ``.code`` (the core's stable error kind) and ``.data``."""

from __future__ import annotations

import builtins
import json
from typing import Any, Dict, Optional, Type

__all__ = [
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
]


class AcpError(Exception):
    """Base of every error raised by acp_host.

    ``code`` is the core's stable error kind (``"agent_exited"``, ``"timeout"``, ...), the same
    string on every face; ``data`` holds structured details (JSON-RPC error data, exit status, ...)
    or ``None``.
    """

    code: str = "error"
    data: Any

    def __init__(self, message: str = "", *, code: Optional[str] = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data = data

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"

    def __reduce__(self) -> Any:
        # Pickled with its code, data and attributes (Exception's default keeps only the
        # message): errors cross process boundaries intact (multiprocessing, acp_host.ray).
        return (_rebuild, (type(self), self.message), dict(self.__dict__))


def _rebuild(cls: Type["AcpError"], message: str) -> "AcpError":
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.message = message
    return err


class AgentExitedError(AcpError):
    """The agent process exited (or closed its stdout) while the operation was pending.

    ``data`` is ``{"exitCode", "signal", "stderrTail"}``.
    """

    code = "agent_exited"

    @property
    def exit_code(self) -> Optional[int]:
        v = self._field("exitCode")
        return v if isinstance(v, int) else None

    @property
    def signal(self) -> Optional[str]:
        v = self._field("signal")
        return v if isinstance(v, str) else None

    @property
    def stderr_tail(self) -> str:
        v = self._field("stderrTail")
        return v if isinstance(v, str) else ""

    def _field(self, name: str) -> Any:
        return self.data.get(name) if isinstance(self.data, dict) else None


class TimeoutError(AcpError, builtins.TimeoutError):
    """The operation did not complete in time (also a builtin ``TimeoutError``)."""

    code = "timeout"


class UnsupportedError(AcpError):
    """The agent does not advertise the capability this call needs; nothing was sent."""

    code = "unsupported"


class ProtocolError(AcpError):
    """The agent broke the protocol in a way that prevents this operation."""

    code = "protocol"


class AgentError(AcpError):
    """The agent answered with a JSON-RPC error; ``data`` is ``{"code", "data"}``."""

    code = "agent_error"

    @property
    def rpc_code(self) -> Optional[int]:
        return self.data.get("code") if isinstance(self.data, dict) else None


class AuthRequiredError(AcpError):
    """The agent requires ``authenticate`` first (JSON-RPC -32000)."""

    code = "auth_required"


class VersionUnsupportedError(AcpError):
    """The agent speaks a protocol version this host does not."""

    code = "version_unsupported"


class InvalidArgumentError(AcpError, ValueError):
    """The caller passed something invalid (also a ``ValueError``)."""

    code = "invalid_argument"


class ConfigError(InvalidArgumentError):
    """An option the core refused (``Host(...)``, ``spawn``, ``new_session``, ``pool``
    arguments; docs/OPTIONS.md), or a registry document or entry that cannot be used
    (``acp_host.registry``); ``path`` (also ``data["path"]``) is the core's full field path in
    the canonical names, whichever spelling was used (``maxLineBytes``, ``roots[1]``,
    ``pool.maxAgents``, ``policy.rules[0].action``, ``agents[3].distribution.npx.package``)."""

    code = "invalid_config"

    @property
    def path(self) -> Optional[str]:
        """The field path (``data["path"]``)."""
        p = self.data.get("path") if isinstance(self.data, dict) else None
        return p if isinstance(p, str) else None


class PolicyError(ConfigError):
    """A policy that cannot be used: a ``ConfigError`` whose ``data["path"]`` starts with
    ``policy`` (``policy.rules[0].action``), code ``invalid_config`` as in every face."""


class SpawnError(AcpError, OSError):
    """The agent command could not be started (also an ``OSError``)."""

    code = "spawn_failed"


class IoError(AcpError, OSError):
    """An I/O error: the agent's pipes, or a registry install (its cache directory, the
    archive, the ``fetch`` hook). Also an ``OSError``."""

    code = "io"


class ClosedError(AcpError):
    """The host or the agent connection was shut down."""

    code = "closed"


class CancelledError(AcpError):
    """The request was cancelled (JSON-RPC -32800, or by the caller)."""

    code = "cancelled"


class BusyError(AcpError):
    """The session already has a prompt turn in flight."""

    code = "busy"


class NotFoundError(AcpError, LookupError):
    """Unknown id (agent, session, permission request)."""

    code = "not_found"


class AlreadyResolvedError(AcpError):
    """The id refers to something already finished (a permission request answered twice)."""

    code = "already_resolved"


class EventsStalledError(AcpError):
    """A call gave up: the host's event queue is full and nobody pulled an event for the stall
    timeout. Iterate events while calls are pending. The call was abandoned."""

    code = "events_stalled"


class ServiceError(AcpError):
    """Raise from an ``fs``/``terminal``/``on_ext_request`` handler to answer the agent with a
    JSON-RPC error.

    ``ServiceError("no such buffer", rpc_code=-32002)``: ``rpc_code`` is the JSON-RPC error code
    (-32002 is ACP's "resource not found"; default -32603, internal error), ``data`` its data.
    """

    code = "service_error"

    def __init__(self, message: str = "", *, rpc_code: int = -32603, data: Any = None,
                 code: Optional[str] = None) -> None:
        super().__init__(message, code=code, data=data)
        self.rpc_code = rpc_code


_BY_CODE: Dict[str, Type[AcpError]] = {
    cls.code: cls
    for cls in (
        AgentExitedError,
        TimeoutError,
        UnsupportedError,
        ProtocolError,
        AgentError,
        AuthRequiredError,
        VersionUnsupportedError,
        InvalidArgumentError,
        ConfigError,
        SpawnError,
        IoError,
        ClosedError,
        CancelledError,
        BusyError,
        NotFoundError,
        AlreadyResolvedError,
        EventsStalledError,
    )
}


def _from_native(kind: str, message: str, data_json: str) -> AcpError:
    """Called by the native module: the exception for a core error kind."""
    try:
        data = json.loads(data_json)
    except (ValueError, RecursionError):
        data = None
    cls = _BY_CODE.get(kind, AcpError)
    if cls is ConfigError and isinstance(data, dict) and str(data.get("path", "")).startswith("policy"):
        cls = PolicyError
    return cls(message, code=kind, data=data)


def _loads(text: str, what: str) -> Any:
    """Decode JSON text the host hands over (the agent's data, within the core's nesting limit).

    Text this interpreter cannot decode (nesting past its recursion limit, an integer with more
    digits than ``sys.get_int_max_str_digits()``) raises ``ProtocolError``: never the
    ``RecursionError`` or ``ValueError`` of ``json``.
    """
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"{what} is JSON this interpreter cannot decode: {exc}") from exc


def _dumps(value: Any, what: str, **kwargs: Any) -> str:
    """Encode the embedder's value as JSON: ``InvalidArgumentError`` when it cannot be (a type
    JSON lacks, NaN, nesting past the recursion limit), never ``TypeError``/``RecursionError``."""
    try:
        return json.dumps(value, **kwargs)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON-serialisable: {exc}") from None

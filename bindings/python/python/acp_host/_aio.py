"""The asyncio API: ``AsyncHost``, ``AsyncAgent``, ``AsyncSession``, ``AsyncPool``, ...

The same core as the sync API; calls return awaitables resolved on the caller's loop. Cancelling
an awaiting task cancels the operation (for a prompt: ``session/cancel`` and the host's cancel
grace; for any other request ``$/cancel_request``). Every call that waits for the agent takes
``timeout=`` (seconds), as in the sync API: when it elapses the call is abandoned the same way and
raises ``acp_host.TimeoutError`` (``asyncio.wait_for(call, timeout)`` still works, and raises
``asyncio.TimeoutError``). Permission and elicitation handlers of an ``AsyncHost`` run on its loop
(coroutine functions as tasks).

This module is the one source of both APIs: ``_host.py`` is generated from it by
``bindings/python/scripts/unasync.py`` (``async def`` -> ``def``, ``await`` dropped,
``aio=True`` -> ``aio=False``, ``Async`` class names -> the sync ones, and the docstring
phrases listed there). A line marked ``# unasync: async-only`` (with its block) is left out of
``_host.py``; a comment ``# unasync: sync-only: <code>`` is ``<code>`` there. After an edit, run
``python3 bindings/python/scripts/unasync.py`` (tests/test_unasync.py fails until then). What does
not wait for the agent is shared in ``_base.py``; the event streams are ``_streams.py``.
"""

from __future__ import annotations

import os

import asyncio  # unasync: async-only
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._base import AgentBase, HostBase, PoolBase, PooledSessionBase, SessionBase
from ._common import ContentLike, PathLike, ReplayLike, RestartLike, answer_json, content_json, params_json, timeout_arg
from ._connect import bridge_async
from ._options import UNSET, NotGiven, agent_document, given, pool_document, session_document
from ._errors import AcpError, UnsupportedError, _dumps, _loads
from ._schema import Receipt, SessionConfigOption
from ._streams import AsyncEventStream
from ._types import (
    AgentExit,
    AgentSpec,
    SessionDefaults,
    SessionStatus,
    ElicitationAnswer,
    PoolMode,
    SteerResult,
    TurnResult,
)

__all__ = ["AsyncHost", "AsyncAgent", "AsyncSession", "AsyncEventStream", "AsyncPool", "AsyncPooledSession"]


class AsyncSession(SessionBase["AsyncAgent"]):
    """An open ACP session. Its calls are awaitables; see the module docs.

    ``async with await agent.new_session(cwd) as session:`` closes it on leaving the block (see ``__aexit__``).
    """

    __slots__ = ()

    async def prompt(self, content: ContentLike, *,
                     # unasync: sync-only: cancel_grace: Optional[float] = None,
                     timeout: Optional[float] = None) -> TurnResult:
        """Send a prompt (text, a content block, or a list of them) and wait for the turn to end.

        When the awaiting task is cancelled, the turn is cancelled (``session/cancel``; pending
        permission requests are answered ``cancelled``) and ``asyncio.CancelledError`` propagates
        at once; the turn ends within the host's ``cancel_grace``. After ``timeout`` seconds the turn is cancelled the same way and, once it settled
        (within the host's ``cancel_grace``), ``acp_host.TimeoutError`` is raised — unless the
        agent's answer in the meantime was not ``cancelled`` (then that result is returned).
        """
        content_text, limit = content_json(content), timeout_arg(timeout)
        turn = await self._n.prompt(content_text, aio=True, timeout=limit)  # unasync: async-only
        # unasync: sync-only: turn = self._n.prompt(content_text, aio=False, cancel_grace=cancel_grace, timeout=limit)
        return TurnResult._from_native(turn)

    async def steer(self, content: ContentLike) -> SteerResult:
        """Steer (unstable: needs ``unstable=["_session/steering"]`` on the host): add text (a
        content block, or a list of them) while a turn runs. An agent that advertises steering
        takes it into the running turn (``injected``); otherwise it waits as the session's next
        prompt (``queued``) and is sent as its own turn when the running turn ends (``prompted``;
        at once when no turn runs). A cancel, a close or the agent ending reject queued steers.
        Every step is a ``steer`` event (docs/STEERING.md). Raises ``UnsupportedError`` (not
        opted in), ``BusyError`` (16 steers wait), ``AgentError``/``ProtocolError`` (the agent
        did not take it)."""
        out = await self._n.steer(content_json(content), aio=True)
        return SteerResult._from_native(out)

    async def cancel(self) -> None:
        """``session/cancel``: the turn should end ``cancelled``; pending permissions are cancelled."""
        await self._n.cancel(aio=True)

    async def set_mode(self, mode_id: str, *, timeout: Optional[float] = None) -> None:
        await self._n.set_mode(mode_id, aio=True, timeout=timeout_arg(timeout))

    async def set_model(self, model_id: str, *, timeout: Optional[float] = None) -> None:
        """Switch the session's model (one of ``models().available``): through the ``model``
        config option, else the legacy ``session/set_model``. An unknown id raises
        ``InvalidArgumentError``, no model choice ``UnsupportedError`` (nothing is sent)."""
        await self._n.set_model(model_id, aio=True, timeout=timeout_arg(timeout))

    async def set_config_option(self, config_id: str, value: Any, *,
                                timeout: Optional[float] = None) -> List[SessionConfigOption]:
        """Set a config option; returns the complete updated option list."""
        out = await self._n.set_config_option(config_id, _dumps(value, "value"), aio=True, timeout=timeout_arg(timeout))
        return _loads(out, "the session/set_config_option result")  # type: ignore[no-any-return]

    async def cancel_tool_call(self, tool_call_id: str, *,
                               timeout: Optional[float] = None) -> Dict[str, Any]:
        """ACP v2 ``tool_call/cancel``: ask the agent to stop one tool call, while its latest
        ``tool_call_update`` advertises ``capabilities.cancel``. Returns when the agent
        *accepted*, with its answer (``{}``, maybe ``_meta``); the completion is a later
        ``session_update`` event (a ``tool_call_update`` with a final ``status``). Raises
        ``UnsupportedError`` (a v1 connection, or cancel not advertised; nothing is sent),
        ``InvalidArgumentError`` (an id no update named), ``AgentError`` (the agent refused)."""
        out = await self._n.cancel_tool_call(tool_call_id, aio=True, timeout=timeout_arg(timeout))
        return _loads(out, "the tool_call/cancel result")  # type: ignore[no-any-return]

    async def cancel_terminal(self, terminal_id: str, *,
                              timeout: Optional[float] = None) -> Dict[str, Any]:
        """ACP v2 ``terminal/cancel``: as ``cancel_tool_call`` for one of the agent's terminals;
        the completion is a later ``terminal_update`` with ``exitStatus``."""
        out = await self._n.cancel_terminal(terminal_id, aio=True, timeout=timeout_arg(timeout))
        return _loads(out, "the terminal/cancel result")  # type: ignore[no-any-return]

    async def close(self, *, timeout: Optional[float] = None) -> None:
        """``session/close`` (needs the agent's ``sessionCapabilities.close``; otherwise
        ``UnsupportedError`` and nothing is sent)."""
        await self._n.close(aio=True, timeout=timeout_arg(timeout))

    def events(self) -> AsyncEventStream:
        """This session's events. Created at any time (before the first prompt, during or between
        turns, after the session closed), the stream begins at the oldest event of the session
        the host's bounded history still holds — its ``session_opened``, the updates the agent sent
        before answering the open call, a ``load_session`` replay (``replay=True``) — then
        continues live, in ``seq`` order, missing nothing; what the history no longer held is
        counted in ``missed``. Ends after the session's last event: its ``session_closed``
        (unless marked ``restart``: a supervised agent's restart reopens it), its
        ``session_lost``, or its agent's ``agent_failed`` or final ``agent_exited``
        (docs/EVENTS.md, "The one session-stream rule")."""
        return AsyncEventStream(self._n.subscribe())

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: object) -> None:
        """Close the session: ``session/close`` when the agent supports it; otherwise it is only
        forgotten here. Never raises for a session that is already closed or an agent that is
        gone, and never replaces the block's own exception."""
        try:
            if self._open_at_agent():
                await self._n.close(aio=True)
        except UnsupportedError:
            pass
        except AcpError:
            if exc_type is None and self._open_at_agent():
                raise


class AsyncAgent(AgentBase["AsyncHost", AsyncSession]):
    """A running, initialized agent process. ``async with await host.spawn(...) as agent:`` shuts it down."""

    __slots__ = ()
    _Session = AsyncSession

    async def authenticate(self, method_id: str, *, timeout: Optional[float] = None) -> None:
        await self._n.authenticate(method_id, aio=True, timeout=timeout_arg(timeout))

    async def terminal_auth(self, method_id: str, *, timeout: Optional[float] = None) -> "AsyncAgent":
        """Terminal login: runs the login of ``method_id`` through the host's
        ``on_terminal_auth``; when it exits 0 this agent is shut down and started again from the
        same command, and the new agent is returned — retry the call that raised
        ``AuthRequiredError`` on it (this agent's sessions are gone). A non-zero exit raises
        ``AuthRequiredError`` and leaves this agent running. ``authenticate`` is never sent."""
        return AsyncAgent(await self._n.terminal_auth(method_id, aio=True, timeout=timeout), self._host)

    async def logout(self, *, timeout: Optional[float] = None) -> None:
        """``logout`` (needs ``agentCapabilities.auth.logout``; otherwise ``UnsupportedError`` and
        nothing is sent): the agent forgets its credentials; calls that need them raise
        ``AuthRequiredError`` until ``authenticate`` again."""
        await self._n.logout(aio=True, timeout=timeout_arg(timeout))

    async def ext_request(self, method: str, params: Any = None, *, timeout: Optional[float] = None) -> Any:
        """Send an extension request (a ``_``-prefixed method, e.g. ``"_vendor/thing"``) and return
        the agent's result. ``params``: any JSON-serialisable value (``None``: ``{}``).

        Any other method raises ``InvalidArgumentError`` (nothing is sent); the agent's JSON-RPC
        error raises ``AgentError`` (``rpc_code``)."""
        return _loads(await self._n.ext_request(method, params_json(params), aio=True, timeout=timeout_arg(timeout)),
                      f"the {method} result")

    async def new_session(self, cwd: Optional[PathLike] = None, *, additional_directories: Iterable[PathLike] = (),
                          mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None,
                          timeout: Optional[float] = None) -> AsyncSession:
        """``session/new`` in ``cwd`` (required: an absolute path of an existing directory), also a
        sandbox root."""
        n = await self._n.new_session(session_document(cwd, additional_directories, mcp_servers), aio=True,
                                      timeout=timeout_arg(timeout))
        return AsyncSession(n, self)

    async def load_session(self, session_id: str, cwd: Optional[PathLike] = None, *,
                           additional_directories: Iterable[PathLike] = (),
                           mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None,
                           timeout: Optional[float] = None) -> AsyncSession:
        """``session/load``: the agent replays the conversation (events with ``replay=True``;
        ``session.events()`` starts with them)."""
        n = await self._n.load_session(session_id, session_document(cwd, additional_directories, mcp_servers), resume=False, aio=True, timeout=timeout_arg(timeout))
        return AsyncSession(n, self)

    async def resume_session(self, session_id: str, cwd: Optional[PathLike] = None, *,
                             additional_directories: Iterable[PathLike] = (),
                             mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None,
                             timeout: Optional[float] = None) -> AsyncSession:
        """``session/resume``: reopen without replay."""
        n = await self._n.load_session(session_id, session_document(cwd, additional_directories, mcp_servers), resume=True, aio=True, timeout=timeout_arg(timeout))
        return AsyncSession(n, self)

    async def fork_session(self, session_id: str, cwd: Optional[PathLike] = None, *,
                           additional_directories: Iterable[PathLike] = (),
                           mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None,
                           timeout: Optional[float] = None) -> AsyncSession:
        """``session/fork`` (unstable in ACP): a new session that starts from ``session_id``'s
        history. Needs ``AsyncHost(unstable=["session/fork"])`` and the agent's
        ``sessionCapabilities.fork``; otherwise ``UnsupportedError`` and nothing is sent."""
        n = await self._n.fork_session(session_id, session_document(cwd, additional_directories, mcp_servers), aio=True, timeout=timeout_arg(timeout))
        return AsyncSession(n, self)

    async def list_sessions(self, cwd: Optional[PathLike] = None, cursor: Optional[str] = None, *,
                            timeout: Optional[float] = None) -> Dict[str, Any]:
        """``session/list``: ``{"sessions": [...], "nextCursor": ...}`` (one page)."""
        c = None if cwd is None else os.fspath(cwd)
        out = await self._n.list_sessions(c, cursor, aio=True, timeout=timeout_arg(timeout))
        return _loads(out, "the session/list result")  # type: ignore[no-any-return]

    async def close_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        await self._n.close_session(session_id, aio=True, timeout=timeout_arg(timeout))

    async def delete_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        await self._n.delete_session(session_id, aio=True, timeout=timeout_arg(timeout))

    # The unstable session methods: each needs its name in the host's ``unstable`` and the
    # agent's ``sessionCapabilities.*`` marker, else ``UnsupportedError`` and nothing is sent.
    # The agent's errors raise ``AgentError`` (its code in ``data``); an answer of the wrong
    # shape raises ``ProtocolError``.

    async def session_status(self, session_id: str, *, timeout: Optional[float] = None) -> SessionStatus:
        """``session/status`` (unstable; ``unstable=["session/status"]``,
        ``sessionCapabilities.status``): whether the agent has the session in memory."""
        out = await self._n.unstable_call("session/status", session_id, aio=True, timeout=timeout_arg(timeout))
        return SessionStatus._from_json(out)

    async def set_session_title(self, session_id: str, title: str, *, timeout: Optional[float] = None) -> str:
        """``session/set_title`` (unstable; ``unstable=["session/set_title"]``,
        ``sessionCapabilities.title``): the title the agent stored (it may normalise it: show
        this one). A session open here gets it as ``state.title``."""
        out = await self._n.unstable_call("session/set_title", session_id, str(title), aio=True, timeout=timeout_arg(timeout))
        return str(_loads(out, "the session/set_title result")["title"])

    async def archive_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        """``session/archive`` (unstable; ``unstable=["session/archive"]``,
        ``sessionCapabilities.archive``): hidden from default ``list_sessions`` results. A
        session open here is closed (``session_closed`` with reason ``archived``)."""
        await self._n.unstable_call("session/archive", session_id, aio=True, timeout=timeout_arg(timeout))

    async def unarchive_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        """``session/unarchive`` (unstable; ``unstable=["session/unarchive"]``): listed again,
        never reopened."""
        await self._n.unstable_call("session/unarchive", session_id, aio=True, timeout=timeout_arg(timeout))

    async def session_options(self, cwd: Optional[PathLike] = None, *,
                              additional_directories: Iterable[PathLike] = (),
                              session_id: Optional[str] = None,
                              timeout: Optional[float] = None) -> SessionDefaults:
        """``session/options`` (unstable; ``unstable=["session/options"]``,
        ``sessionCapabilities.options``): the modes and config options a session would start
        with in ``cwd``, without creating one; with ``session_id``, what a load or resume of it
        would give (needs ``loadSession`` or ``sessionCapabilities.resume``)."""
        doc = session_document(cwd, additional_directories, None)
        out = await self._n.session_options(doc, session_id, aio=True, timeout=timeout_arg(timeout))
        return SessionDefaults._from_json(out)

    async def shutdown(self) -> AgentExit:
        """Stdin EOF → SIGTERM → SIGKILL to the agent's process group; how it ended."""
        info = AgentExit._from_json(await self._n.shutdown(aio=True))
        return info if info is not None else AgentExit(None, None, "")

    close = shutdown

    def events(self) -> AsyncEventStream:
        """This agent's events from now on. Ends after its last event: ``agent_failed``, or an
        ``agent_exited`` not marked ``restart`` (a supervised agent's stream continues across its
        restarts); at once when that already happened."""
        return AsyncEventStream(self._n.subscribe())

    async def __aenter__(self) -> "AsyncAgent":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class AsyncPooledSession(PooledSessionBase["AsyncPool", AsyncAgent, AsyncSession]):
    """A session handed out by an ``AsyncPool``, on one of its processes. Its calls are awaitables.

    ``prompt`` while another prompt of this session runs (from another task) waits its turn,
    first come first served, instead of raising ``BusyError``; ``cancel`` ends the running turn
    and makes every prompt queued behind it raise ``CancelledError`` (they are never sent).
    ``async with await pool.open_session(cwd) as session:`` releases it on leaving the block; so does
    ``release()``, and dropping the object.
    """

    __slots__ = ()
    _Agent = AsyncAgent
    _Session = AsyncSession

    async def prompt(self, content: ContentLike, *, timeout: Optional[float] = None) -> TurnResult:
        """Send a prompt (text, a content block, or a list of them) once the prompts before it
        are done, and wait for its turn to end. ``timeout`` counts the wait in the queue too; when
        it elapses (or when the awaiting task is cancelled) a queued prompt leaves the queue without being sent and a
        running turn is abandoned (``session/cancel``), then ``acp_host.TimeoutError`` (or
        ``asyncio.CancelledError``) is raised. After ``release()``: ``ClosedError``."""
        return TurnResult._from_native(await self._n.prompt(content_json(content), aio=True, timeout=timeout_arg(timeout)))

    async def cancel(self) -> None:
        """Cancel the running turn (``session/cancel``; it ends ``cancelled``): every prompt queued
        behind it then raises ``CancelledError`` without being sent."""
        await self._n.cancel(aio=True)

    async def release(self) -> None:
        """Give the session back: ``session/close`` when the agent supports it; in
        process-per-session mode its process is shut down. Idempotent."""
        await self._n.release(aio=True)

    def events(self) -> AsyncEventStream:
        """This session's events, as ``AsyncSession.events`` (from the oldest its history holds)."""
        return AsyncEventStream(self._n.subscribe())

    async def __aenter__(self) -> "AsyncPooledSession":
        return self

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: object) -> None:
        """Release the session; an error doing so is raised only when the block raised none."""
        try:
            await self.release()
        except AcpError:
            if exc_type is None:
                raise


class AsyncPool(PoolBase["AsyncHost"]):
    """Agents of one command, started ahead and shared out as sessions (``host.pool(...)``).

    ``open_session`` takes a process with room (shared mode), else a warm spare, else starts a new
    process while under ``max_agents``, else raises ``BusyError`` at once. ``async with host.pool(...) as
    pool:`` shuts every process of the pool down on leaving the block; so does ``AsyncHost.close()``.
    """

    __slots__ = ()

    async def open_session(self, cwd: Optional[PathLike] = None, *, additional_directories: Iterable[PathLike] = (),
                           mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None,
                           timeout: Optional[float] = None) -> AsyncPooledSession:
        """A session (``session/new`` in ``cwd``, an absolute path) on a pooled
        process. ``BusyError`` when the pool is at ``max_agents`` and none has room,
        ``ClosedError`` once it is shut down, ``SpawnError`` / ``AgentExitedError`` when a process
        needed for it cannot start. ``timeout`` bounds the whole call (a session opened
        nonetheless, or for a cancelled task, is released)."""
        self._host._bind_loop()  # unasync: async-only
        n = await self._n.open_session(session_document(cwd, additional_directories, mcp_servers), aio=True,
                                       timeout=timeout_arg(timeout))
        return AsyncPooledSession(n, self)

    async def ready(self, timeout: Optional[float] = None) -> None:
        """Wait until the warm spares are started and initialized (or the pool is at its cap).
        Raises the error of a spare that could not start (``SpawnError``, ...), ``ClosedError``
        once shut down, ``acp_host.TimeoutError`` after ``timeout`` seconds."""
        await self._n.ready(aio=True, timeout=timeout_arg(timeout))

    async def shutdown(self) -> None:
        """End every process of the pool (spares, idle and busy ones: their sessions end) and stop
        starting new ones; ``open_session`` then raises ``ClosedError``. Idempotent."""
        await self._n.shutdown(aio=True)

    close = shutdown
    aclose = shutdown  # unasync: async-only

    async def __aenter__(self) -> "AsyncPool":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class AsyncHost(HostBase[AsyncAgent]):
    """Runs ACP agents: spawns them, streams their events, answers their permission requests
    (and their elicitations, with ``on_elicitation``).

    ``on_permission``: a function or coroutine function ``(PermissionRequest) -> option id | None``
    (``None`` denies; exceptions, other answers and ``permission_timeout`` deny), or ``"manual"``
    (answer ``permission_requested`` events with ``respond_permission``). ``policy``: a preset
    (``"deny-all"`` — the default without a handler —, ``"read-only"``, ``"ask"``), a policy
    document (dict or JSON text; docs/PERMISSIONS.md) or a path to one. ``roots``: extra sandbox
    roots for the agents' ``fs/*`` and ``terminal/*`` requests (each session's cwd is one).
    ``fs`` / ``terminal``: ``True`` (the built-in sandboxed services), ``False`` (not served, not
    advertised), or a handler (``FsHandler`` / ``TerminalHandler``) that serves them instead.

    ``on_ext_request``: a function or coroutine function ``(method, params) -> result`` serving
    the agents' extension requests (``_``-prefixed methods); the returned JSON-serialisable value
    is the result. Raise ``acp_host.ServiceError`` to answer with that JSON-RPC error; any other
    exception answers -32603. Without it such requests are answered -32601 (method not found).

    ``on_elicitation``: a function or coroutine function ``(ElicitationRequest) -> answer``
    (``{"action": "accept", "content": {...}}``, ``{"action": "decline"}``,
    ``{"action": "cancel"}``; exceptions, other answers, content that does not match the form's
    schema and ``elicitation_timeout`` answer ``cancel``), or ``"manual"`` (answer
    ``elicitation_requested`` events with ``respond_elicitation``). ``elicitation_modes``: the
    modes it renders, ``"form"`` and/or ``"url"`` (default both); only those are advertised.
    Without ``on_elicitation`` elicitation is not advertised and agents' requests are refused.

    ``unstable``: unstable ACP methods to opt into (``["session/fork"]`` enables
    ``AsyncAgent.fork_session``); any other name raises ``ConfigError``. ``coalesce_tool_call_updates``:
    merge a ``tool_call_update`` into the previous event when that is a not-yet-pulled update of
    the same tool call (docs/EVENTS.md). ``stderr_tail_bytes``: the agent stderr kept for exit
    errors (default 64 KiB). ``events=False``: no events are queued at all, for scripts that only
    use return values (every ``events()`` stream ends at once).

    Every option of docs/OPTIONS.md is a keyword here, in snake_case (``max_line_bytes``,
    ``event_queue_bytes``, ``fs_limits={"max_read_bytes": ...}``, ...); a ``…_ms`` option is also
    taken in seconds without the suffix (``request_timeout=120.0``; not both). The core checks
    them: one it refuses, or an unknown keyword, raises ``ConfigError`` whose ``path`` is the
    canonical field path (``maxLineBytes``, ``roots[1]``; a bad policy is its subclass
    ``PolicyError``). Paths must be absolute (a relative one is refused, not resolved).

    ``log_level`` (``"error"``, ``"warn"``, ``"info"``, ``"debug"``, ``"trace"``; default: none,
    no record is made): the host's log records at that level and above go to the ``logging``
    logger ``acp_host.<part>`` (``acp_host.spawn``, ``acp_host.permission``, ...), in order, on the
    host's ``acp-host-log`` thread (never the caller's, never one of the host's own); see
    ``dropped_log_records``. ``progress_events=True``: ``progress`` events for the slow steps of
    an agent's start (``Progress.from_dict(ev.data)``).

    ``async with AsyncHost(...) as host:`` closes it: every agent is shut down, process groups included.
    Hosts still open at interpreter exit are closed then.
    """

    _Agent = AsyncAgent

    def _bind_loop(self) -> None:  # unasync: async-only
        try:
            self._n.set_loop(asyncio.get_running_loop())
        except RuntimeError:
            pass  # not in a loop yet: bound at the first awaited call

    async def spawn(self, command: Union[str, Sequence[str], AgentSpec, None] = None, *,
                    args: Optional[Sequence[str]] = None, cwd: Optional[PathLike] = None,
                    env: Optional[Mapping[str, Optional[str]]] = None, timeout: Optional[float] = None,
                    restart: RestartLike = None, replay: ReplayLike = None) -> AsyncAgent:
        """Start ``command`` (``[program, *args]``, or an ``AgentSpec`` such as a registry
        resolution's ``spec``; no shell) and perform the ACP handshake.

        ``replay`` instead of ``command``: no process; a recording's agent side is played inside
        the host (a ``Replay``, its JSON form, or the recording's path; README: Replaying a
        recording). With ``command``, ``args``, ``env``, ``cwd`` or ``restart`` it raises
        ``ConfigError`` (``path``: that one), and so does a file that is not a recording
        (``path`` ``replay.file``; the message names the line); nothing is started.

        ``env`` overlays the inherited environment (and an ``AgentSpec``'s env; ``None`` removes a
        variable). ``timeout`` bounds the start and the handshake (an agent given up on is shut
        down). ``restart``: supervise the agent — a ``RestartPolicy`` or its JSON form
        (``{"maxRestarts": 5, "backoffMs": 100}``); it replaces an ``AgentSpec``'s ``restart``. A
        supervised agent whose process dies is started again with its sessions reopened, and this
        ``AsyncAgent`` and its ``AsyncSession`` objects keep working (README: Supervised agents). A policy
        that cannot be used raises ``ConfigError`` and nothing is started.
        """
        self._bind_loop()  # unasync: async-only
        spec = agent_document(command, args, env, cwd, restart, replay)
        n = await self._n.spawn(spec, aio=True, timeout=timeout_arg(timeout))
        return AsyncAgent(n, self)

    async def connect(self, stream: Any, writer: Any = None, *, timeout: Optional[float] = None) -> AsyncAgent:
        """Speak ACP over a stream you already have, instead of starting a process: a connected
        ``socket.socket`` (``host.connect(sock)``; the host uses a duplicate of its descriptor,
        your object stays yours to close), or a pair of binary file objects —
        ``host.connect(reader, writer)``, e.g. an SSH channel's, or a container's stdout and
        stdin (``reader.read1``/``recv``/``read(n)``, ``writer.write(bytes)``; both are closed
        when the connection ends), or a pair of asyncio streams (``asyncio.StreamReader``,
        ``asyncio.StreamWriter``; bridged by tasks on this loop). Then the ACP handshake, as for ``spawn`` (``timeout`` bounds
        it). Every guarantee of a spawned agent holds except process containment (there is no
        process to contain): ordering, backpressure (the stream is read only as fast as the host
        takes the messages), timeouts, and a peer that goes away fails a pending call at once
        with ``AgentExitedError``. ``agent.shutdown()`` closes the connection."""
        self._bind_loop()  # unasync: async-only
        bridge = await bridge_async(stream, writer)
        return AsyncAgent(await self._n.connect_bridge(bridge, aio=True, timeout=timeout_arg(timeout)), self)

    def pool(self, command: Union[str, Sequence[str], AgentSpec], *, mode: Optional[PoolMode] = None,
             max_sessions_per_agent: Optional[int] = None, warm_spares: Optional[int] = None,
             max_agents: Optional[int] = None, idle_timeout: Union[Optional[float], NotGiven] = UNSET,
             idle_timeout_ms: Union[Optional[int], NotGiven] = UNSET, restart: RestartLike = None,
             cwd: Optional[PathLike] = None, env: Optional[Mapping[str, Optional[str]]] = None,
             args: Optional[Sequence[str]] = None, **settings: Any) -> AsyncPool:
        """A pool of agents started from ``command`` (as for ``spawn``; ``env``, ``cwd`` and
        ``restart`` too) that hands out sessions (README: Pools). Returns at once (not awaitable); the warm
        spares start in the background (``await pool.ready()`` waits for them).

        ``mode``: ``"process-per-session"`` (each session its own process, shut down when the
        session is released) or ``"shared"`` (up to ``max_sessions_per_agent`` sessions per
        process, default 8; the least loaded one first). ``warm_spares``: processes kept started
        and initialized. ``max_agents``: live processes at most (spares and starting ones count).
        ``idle_timeout``: seconds a shared process without sessions is kept (``None``: forever).
        Settings that cannot be used raise ``ConfigError`` (``path``: the core's, e.g.
        ``pool.maxAgents``, ``pool.warmSpares``) and nothing is started (docs/OPTIONS.md).
        """
        self._bind_loop()  # unasync: async-only
        named = given({"mode": mode, "max_sessions_per_agent": max_sessions_per_agent, "warm_spares": warm_spares,
                       "max_agents": max_agents, "idle_timeout": idle_timeout, "idle_timeout_ms": idle_timeout_ms})
        n = self._n.pool(agent_document(command, args, env, cwd, restart), pool_document({**named, **settings}))
        return AsyncPool(n, self)

    async def respond_permission(self, request_id: int, option_id: Optional[str]) -> Receipt:
        """Answer a pending request: an offered option id, or ``None`` to deny.

        An id that was not offered denies (and raises); an already resolved request raises
        ``AlreadyResolvedError``; an unknown one ``NotFoundError``. Returns the answer's receipt
        (docs/EVENTS.md, "Delivery receipts"): ``{"status": "delivered"}`` once its line is
        written to the agent's stdin, ``uncertain`` when the pipe failed mid-write or the agent
        did not read it within 5 s, ``rejected`` when the agent's stdin was closed before it. A
        raised error's ``data["receipt"]`` is the ``rejected`` receipt of the unused answer;
        ``permission_resolved`` carries the same receipt.
        """
        text: str = await self._n.respond_permission(request_id, option_id, aio=True)
        receipt: Receipt = _loads(text, "the receipt")
        return receipt

    async def respond_elicitation(self, request_id: int, answer: ElicitationAnswer) -> Receipt:
        """Answer a pending elicitation: ``{"action": "accept", "content": {...}}`` (form values,
        or consent to open the URL), ``{"action": "decline"}`` or ``{"action": "cancel"}``.

        Content that does not match the form's schema, or an answer that is not one of these,
        cancels the request and raises ``InvalidArgumentError``; an already resolved request raises
        ``AlreadyResolvedError``; an unknown one ``NotFoundError``. Returns the answer's receipt,
        as ``respond_permission`` does.
        """
        text, problem = answer_json(answer)
        out: str = await self._n.respond_elicitation(request_id, text, problem, aio=True)
        receipt: Receipt = _loads(out, "the receipt")
        return receipt

    def events(self) -> AsyncEventStream:
        """Every event of the host in ``seq`` order (docs/EVENTS.md): the first stream from the
        host's start (less what was dropped before it was opened, ``dropped``), later ones from
        now on."""
        return AsyncEventStream(self._n.subscribe())

    async def close(self) -> None:
        """Shut every pool and every agent down and end the event streams. Idempotent. With
        ``log_level``, returns once the shutdown's log records were handed to ``logging`` (waiting
        at most 5 s for the handlers)."""
        await self._n.close(aio=True)

    aclose = close  # unasync: async-only

    async def __aenter__(self) -> "AsyncHost":
        self._bind_loop()  # unasync: async-only
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

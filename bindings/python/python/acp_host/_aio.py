"""The asyncio API: ``AsyncHost``, ``AsyncAgent``, ``AsyncSession``, ``AsyncEventStream``.

The same core as the sync twin; calls return awaitables resolved on the caller's loop. Cancelling
an awaiting task cancels the operation (for a prompt: ``session/cancel`` and the host's cancel
grace; for any other request ``$/cancel_request``), so ``asyncio.wait_for(call, timeout)`` is the
per-call timeout the sync API takes as ``timeout=``. Permission and elicitation handlers of an
``AsyncHost`` run on its loop (coroutine functions as tasks).

Only the awaitable calls are written here; the rest is shared with the sync twin in ``_base.py``, the
event streams are ``_streams.py``.
"""

from __future__ import annotations

import os

import asyncio
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._base import AgentBase, HostBase, PoolBase, PooledSessionBase, SessionBase
from ._common import ContentLike, PathLike, RestartLike, answer_json, content_json, params_json, timeout_arg
from ._connect import bridge_async
from ._options import UNSET, NotGiven, agent_document, given, pool_document, session_document
from ._errors import AcpError, UnsupportedError, _dumps, _loads
from ._schema import SessionConfigOption
from ._streams import AsyncEventStream
from ._types import (
    AgentExit,
    AgentSpec,
    ElicitationAnswer,
    PoolMode,
    TurnResult,
)

__all__ = ["AsyncHost", "AsyncAgent", "AsyncSession", "AsyncEventStream", "AsyncPool", "AsyncPooledSession"]


class AsyncSession(SessionBase["AsyncAgent"]):
    """See ``Session``. ``async with await agent.new_session(cwd) as session:`` closes it on
    leaving the block (see ``__aexit__``)."""

    __slots__ = ()

    async def prompt(self, content: ContentLike) -> TurnResult:
        """Send a prompt and wait for the turn; cancelling the task cancels the turn
        (``session/cancel``; the turn ends within the host's ``cancel_grace``). For a time limit,
        ``asyncio.wait_for(session.prompt(...), timeout)``."""
        text = content_json(content)
        try:
            return TurnResult._from_native(await self._n.prompt(text, aio=True))
        finally:
            # Back in this task: a stream opened by a task created before this call has run.
            self._n.prompt_returned()

    async def cancel(self) -> None:
        await self._n.cancel(aio=True)

    async def set_mode(self, mode_id: str) -> None:
        await self._n.set_mode(mode_id, aio=True)

    async def set_model(self, model_id: str) -> None:
        """See ``Session.set_model``."""
        await self._n.set_model(model_id, aio=True)

    async def set_config_option(self, config_id: str, value: Any) -> List[SessionConfigOption]:
        out = await self._n.set_config_option(config_id, _dumps(value, "value"), aio=True)
        return _loads(out, "the session/set_config_option result")  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self._n.close(aio=True)

    def events(self) -> AsyncEventStream:
        """This session's events: from the session's beginning (``session_opened``, early
        updates, a load's replay, ...) when created before its first turn ended, from the start
        of the turn in flight during a later turn, else from now on; ends after its ``session_closed`` (see ``Session.events``)."""
        return AsyncEventStream(self._n.subscribe())

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: object) -> None:
        """See ``Session.__exit__``."""
        try:
            if self._open_at_agent():
                await self._n.close(aio=True)
        except UnsupportedError:
            pass
        except AcpError:
            if exc_type is None and self._open_at_agent():
                raise
        finally:
            self._n.release()


class AsyncAgent(AgentBase["AsyncHost", AsyncSession]):
    __slots__ = ()
    _Session = AsyncSession

    async def authenticate(self, method_id: str) -> None:
        await self._n.authenticate(method_id, aio=True)

    async def terminal_auth(self, method_id: str) -> "AsyncAgent":
        """See ``Agent.terminal_auth``."""
        return AsyncAgent(await self._n.terminal_auth(method_id, aio=True), self._host)

    async def logout(self) -> None:
        """See ``Agent.logout``."""
        await self._n.logout(aio=True)

    async def ext_request(self, method: str, params: Any = None) -> Any:
        """See ``Agent.ext_request``."""
        return _loads(await self._n.ext_request(method, params_json(params), aio=True), f"the {method} result")

    async def new_session(self, cwd: Optional[PathLike] = None, *, additional_directories: Iterable[PathLike] = (),
                          mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None) -> AsyncSession:
        n = await self._n.new_session(session_document(cwd, additional_directories, mcp_servers), aio=True)
        return AsyncSession(n, self)

    async def load_session(self, session_id: str, cwd: Optional[PathLike] = None, *,
                           additional_directories: Iterable[PathLike] = (),
                           mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None) -> AsyncSession:
        n = await self._n.load_session(session_id, session_document(cwd, additional_directories, mcp_servers), resume=False, aio=True)
        return AsyncSession(n, self)

    async def resume_session(self, session_id: str, cwd: Optional[PathLike] = None, *,
                             additional_directories: Iterable[PathLike] = (),
                             mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None) -> AsyncSession:
        n = await self._n.load_session(session_id, session_document(cwd, additional_directories, mcp_servers), resume=True, aio=True)
        return AsyncSession(n, self)

    async def fork_session(self, session_id: str, cwd: Optional[PathLike] = None, *,
                           additional_directories: Iterable[PathLike] = (),
                           mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None) -> AsyncSession:
        """``session/fork`` (unstable): needs ``AsyncHost(unstable=["session/fork"])``."""
        n = await self._n.fork_session(session_id, session_document(cwd, additional_directories, mcp_servers), aio=True)
        return AsyncSession(n, self)

    async def list_sessions(self, cwd: Optional[PathLike] = None, cursor: Optional[str] = None) -> Dict[str, Any]:
        c = None if cwd is None else os.fspath(cwd)
        return _loads(await self._n.list_sessions(c, cursor, aio=True), "the session/list result")  # type: ignore[no-any-return]

    async def close_session(self, session_id: str) -> None:
        await self._n.close_session(session_id, aio=True)

    async def delete_session(self, session_id: str) -> None:
        await self._n.delete_session(session_id, aio=True)

    async def shutdown(self) -> AgentExit:
        info = AgentExit._from_json(await self._n.shutdown(aio=True))
        return info if info is not None else AgentExit(None, None, "")

    close = shutdown

    def events(self) -> AsyncEventStream:
        return AsyncEventStream(self._n.subscribe())

    async def __aenter__(self) -> "AsyncAgent":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class AsyncPooledSession(PooledSessionBase["AsyncPool", AsyncAgent, AsyncSession]):
    """See ``PooledSession``: prompts of several tasks queue (first come first served).
    ``async with await pool.open_session(cwd) as session:`` releases it on leaving the block."""

    __slots__ = ()
    _Agent = AsyncAgent
    _Session = AsyncSession

    async def prompt(self, content: ContentLike) -> TurnResult:
        """Send a prompt once the prompts before it are done and wait for its turn. Cancelling the
        task takes a queued prompt out of the queue (nothing is sent) or abandons the running turn
        (``session/cancel``); ``asyncio.wait_for(session.prompt(...), timeout)`` for a time
        limit."""
        return TurnResult._from_native(await self._n.prompt(content_json(content), aio=True))

    async def cancel(self) -> None:
        """See ``PooledSession.cancel``."""
        await self._n.cancel(aio=True)

    async def release(self) -> None:
        """See ``PooledSession.release``."""
        await self._n.release(aio=True)

    def events(self) -> AsyncEventStream:
        """This session's events from now on; ends after its ``session_closed``."""
        return AsyncEventStream(self._n.subscribe())

    async def __aenter__(self) -> "AsyncPooledSession":
        return self

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: object) -> None:
        """See ``PooledSession.__exit__``."""
        try:
            await self.release()
        except AcpError:
            if exc_type is None:
                raise


class AsyncPool(PoolBase["AsyncHost"]):
    """See ``Pool``. ``async with host.pool(...) as pool:`` shuts it down on leaving the block."""

    __slots__ = ()

    async def open_session(self, cwd: Optional[PathLike] = None, *, additional_directories: Iterable[PathLike] = (),
                           mcp_servers: Optional[Sequence[Mapping[str, Any]]] = None) -> AsyncPooledSession:
        """See ``Pool.open_session`` (a session opened for a cancelled task is released)."""
        self._host._bind_loop()
        n = await self._n.open_session(session_document(cwd, additional_directories, mcp_servers),
                                       aio=True)
        return AsyncPooledSession(n, self)

    async def ready(self, timeout: Optional[float] = None) -> None:
        """See ``Pool.ready``."""
        await self._n.ready(aio=True, timeout=timeout_arg(timeout))

    async def shutdown(self) -> None:
        """See ``Pool.shutdown``."""
        await self._n.shutdown(aio=True)

    close = shutdown
    aclose = shutdown

    async def __aenter__(self) -> "AsyncPool":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class AsyncHost(HostBase[AsyncAgent]):
    """The asyncio twin of ``Host`` (same arguments). ``async with AsyncHost(...) as host:``."""

    _Agent = AsyncAgent

    def _bind_loop(self) -> None:
        try:
            self._n.set_loop(asyncio.get_running_loop())
        except RuntimeError:
            pass  # not in a loop yet: bound at the first awaited call

    async def spawn(self, command: Union[str, Sequence[str], AgentSpec, None] = None, *,
                    args: Optional[Sequence[str]] = None, cwd: Optional[PathLike] = None,
                    env: Optional[Mapping[str, Optional[str]]] = None, restart: RestartLike = None) -> AsyncAgent:
        """See ``Host.spawn`` (``command`` may be an ``AgentSpec``; ``restart`` supervises the agent)."""
        self._bind_loop()
        n = await self._n.spawn(agent_document(command, args, env, cwd, restart), aio=True)
        return AsyncAgent(n, self)

    async def connect(self, stream: Any, writer: Any = None) -> AsyncAgent:
        """See ``Host.connect``: a ``socket.socket``, a pair of asyncio streams
        (``asyncio.StreamReader``, ``asyncio.StreamWriter``; bridged by tasks on this loop), or
        a pair of binary file objects (bridged by threads)."""
        self._bind_loop()
        bridge = await bridge_async(stream, writer)
        return AsyncAgent(await self._n.connect_bridge(bridge, aio=True), self)

    def pool(self, command: Union[str, Sequence[str], AgentSpec], *, mode: Optional[PoolMode] = None,
             max_sessions_per_agent: Optional[int] = None, warm_spares: Optional[int] = None,
             max_agents: Optional[int] = None, idle_timeout: Union[Optional[float], NotGiven] = UNSET,
             idle_timeout_ms: Union[Optional[int], NotGiven] = UNSET, restart: RestartLike = None,
             cwd: Optional[PathLike] = None, env: Optional[Mapping[str, Optional[str]]] = None,
             args: Optional[Sequence[str]] = None, **settings: Any) -> AsyncPool:
        """See ``Host.pool`` (not awaitable: the pool starts its spares in the background;
        ``await pool.ready()`` waits for them)."""
        self._bind_loop()
        named = given({"mode": mode, "max_sessions_per_agent": max_sessions_per_agent, "warm_spares": warm_spares,
                       "max_agents": max_agents, "idle_timeout": idle_timeout, "idle_timeout_ms": idle_timeout_ms})
        n = self._n.pool(agent_document(command, args, env, cwd, restart), pool_document({**named, **settings}))
        return AsyncPool(n, self)

    async def respond_permission(self, request_id: int, option_id: Optional[str]) -> None:
        await self._n.respond_permission(request_id, option_id, aio=True)

    async def respond_elicitation(self, request_id: int, answer: ElicitationAnswer) -> None:
        """See ``Host.respond_elicitation``."""
        text, problem = answer_json(answer)
        await self._n.respond_elicitation(request_id, text, problem, aio=True)

    def events(self) -> AsyncEventStream:
        """Every event of the host from now on: ``async for ev in host.events()``."""
        return AsyncEventStream(self._n.subscribe())

    async def close(self) -> None:
        await self._n.close(aio=True)

    aclose = close

    async def __aenter__(self) -> "AsyncHost":
        self._bind_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

"""ACP v2 ``tool_call/cancel`` and ``terminal/cancel`` (``Session.cancel_tool_call``,
``cancel_terminal``) through the Python face, sync and asyncio: the acceptance is the call's
result, the completion a later ``session_update``; the failures are the core's."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Dict

import pytest

import acp_host
from conftest import mock

V2 = ["protocol/v2"]


def run_cancelling(session: acp_host.Session, cancel: Callable[[str], Dict[str, Any]], cid: str) -> None:
    """Prompt a turn that waits for the cancel of ``cid``; cancel it once the host knows it."""
    box: Dict[str, Any] = {}
    th = threading.Thread(target=lambda: box.setdefault("r", session.prompt("go")))
    th.start()
    for _ in range(2000):
        try:
            assert cancel(cid) == {}
            break
        except acp_host.InvalidArgumentError:
            time.sleep(0.01)
    th.join(30)
    assert box["r"].stop_reason == "end_turn"


def test_cancels_are_accepted_then_confirmed_and_fail_typed(tmp_path: Any) -> None:
    with acp_host.Host(unstable=V2) as host:
        events = host.events()
        agent = host.spawn(mock("v2-cancel"))
        session = agent.new_session(str(tmp_path))
        with pytest.raises(acp_host.InvalidArgumentError):
            session.cancel_tool_call("call_1")
        run_cancelling(session, session.cancel_tool_call, "call_1")
        evs = events.collect_until(lambda e: e.kind == "turn_ended", 20)
        assert any(e.kind == "session_update" and e.data.get("status") == "cancelled" for e in evs)
        with pytest.raises(acp_host.UnsupportedError):
            session.cancel_tool_call("call_1")
        with pytest.raises(acp_host.InvalidArgumentError):
            session.cancel_terminal("call_1")
        run_cancelling(session, session.cancel_terminal, "term_2")
        with pytest.raises(acp_host.UnsupportedError):
            session.cancel_terminal("term_2")
        session.prompt("three")
        with pytest.raises(acp_host.UnsupportedError):
            session.cancel_tool_call("call_3")
        with pytest.raises(acp_host.UnsupportedError):
            session.cancel_terminal("term_3")
        with pytest.raises(acp_host.AgentError):
            session.cancel_tool_call("refused_3")


def test_on_a_v1_connection_the_cancels_are_unsupported(tmp_path: Any) -> None:
    with acp_host.Host() as host:
        session = host.spawn(mock("v2-cancel")).new_session(str(tmp_path))
        with pytest.raises(acp_host.UnsupportedError):
            session.cancel_tool_call("call_1")
        with pytest.raises(acp_host.UnsupportedError):
            session.cancel_terminal("term_1")


def test_asyncio_twin(tmp_path: Any) -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(unstable=V2) as host:
            agent = await host.spawn(mock("v2-cancel"))
            session = await agent.new_session(str(tmp_path))
            turn = asyncio.ensure_future(session.prompt("go"))
            for _ in range(2000):
                try:
                    assert await session.cancel_tool_call("call_1") == {}
                    break
                except acp_host.InvalidArgumentError:
                    await asyncio.sleep(0.01)
            assert (await asyncio.wait_for(turn, 20)).stop_reason == "end_turn"
            with pytest.raises(acp_host.UnsupportedError):
                await session.cancel_tool_call("call_1")
            with pytest.raises(acp_host.InvalidArgumentError):
                await session.cancel_terminal("nope")

    asyncio.run(main())

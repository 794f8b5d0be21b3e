"""Extension requests (``_``-prefixed methods) both ways: the agent's served by ``on_ext_request``
(reported as ``ext_request`` events; -32601 without a handler), and ``Agent.ext_request`` to the
agent."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import acp_host
from conftest import T, mock

BUFFERS = "_acp_host_test/buffers"
PING = "_acp_host_test/ping"


def ext_events(events: List[acp_host.Event]) -> List[acp_host.Event]:
    return [e for e in events if e.kind == "ext_request"]


def run(tmp_path: Path, **host_kw: Any) -> Tuple[str, List[acp_host.Event], str]:
    """One `ext-request` turn on a sync host: (turn text, events, session id)."""
    tmp_path = tmp_path.resolve()
    with acp_host.Host(**host_kw) as host:
        stream = host.events()
        session = host.spawn(mock("ext-request")).new_session(tmp_path)
        result = session.prompt("ext")
        assert result.stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
        return result.text, evs, session.id


def test_without_a_handler_the_agent_gets_method_not_found(tmp_path: Path) -> None:
    text, evs, _ = run(tmp_path)
    assert text == "ext error -32601 ping error -32601"
    assert ext_events(evs) == [], "unserved requests are not reported"


def test_a_handler_serves_results_and_errors(tmp_path: Path) -> None:
    calls: List[Tuple[str, Any]] = []

    def on_ext_request(method: str, params: Any) -> Any:
        calls.append((method, params))
        if method == BUFFERS:
            return {"text": "unsaved"}
        raise acp_host.ServiceError("no pings", rpc_code=-32042, data={"why": "test"})

    text, evs, sid = run(tmp_path, on_ext_request=on_ext_request)
    assert text == "ext ok unsaved ping error -32042"
    assert calls == [
        (BUFFERS, {"sessionId": sid, "uri": f"file://{tmp_path.resolve()}/a.rs"}),
        (PING, {"n": 1}),
    ]
    ext = ext_events(evs)
    assert [e.data["outcome"] for e in ext] == ["ok", "error"]
    assert [e.data["method"] for e in ext] == [BUFFERS, PING]
    assert [e.session for e in ext] == [sid, None]
    assert ext[1].data["error"] == {"code": -32042, "message": "no pings"}
    assert "error" not in ext[0].data


def test_a_plain_exception_answers_internal_error(tmp_path: Path) -> None:
    def on_ext_request(method: str, params: Any) -> Any:
        raise RuntimeError("handler on fire")

    text, evs, _ = run(tmp_path, on_ext_request=on_ext_request)
    assert text == "ext error -32603 ping error -32603"
    ext = ext_events(evs)
    assert [e.data["outcome"] for e in ext] == ["error", "error"]
    assert ext[0].data["error"]["code"] == -32603
    assert "handler on fire" in ext[0].data["error"]["message"]


def test_a_result_that_is_not_json_answers_internal_error(tmp_path: Path) -> None:
    def on_ext_request(method: str, params: Any) -> Any:
        return {"text": object()} if method == BUFFERS else {"n": float("nan")}

    text, _, _ = run(tmp_path, on_ext_request=on_ext_request)
    assert text == "ext error -32603 ping error -32603"


def test_a_coroutine_handler_on_a_sync_host(tmp_path: Path) -> None:
    async def on_ext_request(method: str, params: Any) -> Any:
        await asyncio.sleep(0)
        return {"text": "from a coroutine"} if method == BUFFERS else {"n": params["n"] + 1}

    text, evs, _ = run(tmp_path, on_ext_request=on_ext_request)
    assert text == "ext ok from a coroutine ping ok 2"
    assert [e.data["outcome"] for e in ext_events(evs)] == ["ok", "ok"]


def test_a_coroutine_handler_on_an_async_host_runs_on_its_loop(tmp_path: Path) -> None:
    async def main() -> None:
        loop_thread = threading.get_ident()
        seen: List[Tuple[str, int]] = []

        async def on_ext_request(method: str, params: Any) -> Any:
            seen.append((method, threading.get_ident()))
            await asyncio.sleep(0.01)
            if method == BUFFERS:
                return {"text": "unsaved"}
            raise acp_host.ServiceError("no pings", rpc_code=-32042)

        async with acp_host.AsyncHost(on_ext_request=on_ext_request) as host:
            stream = host.events()
            agent = await host.spawn(mock("ext-request"))
            session = await agent.new_session(tmp_path)
            result = await session.prompt("ext")
            evs = await stream.collect_until(lambda e: e.kind == "turn_ended", T)
        assert result.text == "ext ok unsaved ping error -32042"
        assert seen == [(BUFFERS, loop_thread), (PING, loop_thread)]
        assert [e.data["outcome"] for e in ext_events(evs)] == ["ok", "error"]

    asyncio.run(main())


def test_on_ext_request_must_be_callable() -> None:
    with pytest.raises(acp_host.InvalidArgumentError):
        acp_host.Host(on_ext_request="yes")  # type: ignore[arg-type]

    async def main() -> None:
        with pytest.raises(acp_host.InvalidArgumentError):
            acp_host.AsyncHost(on_ext_request=42)  # type: ignore[arg-type]

    asyncio.run(main())


def test_ext_request_to_the_agent() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock("ext-request"))
        with pytest.raises(acp_host.InvalidArgumentError):
            agent.ext_request("session/new")
        with pytest.raises(acp_host.InvalidArgumentError):
            agent.ext_request("_acp_host_test/thing", {"not json": object()})
        with pytest.raises(acp_host.AgentError) as ei:
            agent.ext_request("_acp_host_test/unknown", {"x": 1})
        assert ei.value.code == "agent_error" and ei.value.rpc_code == -32601
        with pytest.raises(acp_host.AgentError) as ei:
            agent.ext_request("_acp_host_test/unknown")
        assert ei.value.rpc_code == -32601
        # The connection is still usable afterwards.
        assert agent.new_session(os.getcwd()).id


def test_ext_request_to_the_agent_async() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock("ext-request"))
            with pytest.raises(acp_host.InvalidArgumentError):
                await agent.ext_request("session/new")
            with pytest.raises(acp_host.AgentError) as ei:
                await agent.ext_request("_acp_host_test/unknown", [1, 2])
            assert ei.value.rpc_code == -32601
            assert (await agent.new_session(os.getcwd())).id

    asyncio.run(main())


def test_the_handler_type_is_exported() -> None:
    assert "ExtRequestHandler" in acp_host.__all__ and hasattr(acp_host, "ExtRequestHandler")

"""Turns against agents nobody here wrote: the official Python SDK's echo agent and the official
TypeScript SDK's example agent (fixtures/interop, installed by scripts/setup)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List, Optional

import pytest

import acp_host
from conftest import T, interop_peer


def test_py_echo_agent_sync() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn([interop_peer("py-echo-agent")])
        assert agent.capabilities == {} and agent.info["protocolVersion"] == 1
        session = agent.new_session("/tmp")
        assert len(session.id) == 32
        result = session.prompt(["hello", "world"])
        assert result.stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
        chunks = [e.data for e in evs if e.update_kind == "agent_message_chunk"]
        assert [c["content"]["text"] for c in chunks] == ["hello", "world"]
        assert chunks[0]["_meta"] == {"echo": True}, "the ACP JSON exactly as the agent sent it"
        with pytest.raises(acp_host.UnsupportedError):
            agent.list_sessions()  # not advertised: refused locally, nothing sent


def test_py_echo_agent_async_many_sessions() -> None:
    async def main() -> List[str]:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn([interop_peer("py-echo-agent")])
            sessions = await asyncio.gather(*(agent.new_session("/tmp") for _ in range(5)))
            streams = [s.events() for s in sessions]
            results = await asyncio.gather(*(s.prompt(f"echo {i}") for i, s in enumerate(sessions)))
            assert {r.stop_reason for r in results} == {"end_turn"}
            texts = []
            for st in streams:
                evs = await st.collect_until(lambda e: e.kind == "turn_ended", T)
                texts += [e.data["content"]["text"] for e in evs if e.update_kind == "agent_message_chunk"]
            return sorted(texts)

    assert asyncio.run(main()) == [f"echo {i}" for i in range(5)]


def test_ts_agent_sync_turn_with_a_permission_handler() -> None:
    seen: List[acp_host.PermissionRequest] = []

    def allow(req: acp_host.PermissionRequest) -> Optional[str]:
        seen.append(req)
        return req.option_id("allow_once")

    with acp_host.Host(on_permission=allow) as host:
        stream = host.events()
        agent = host.spawn([interop_peer("ts-agent")])
        session = agent.new_session("/tmp")
        result = session.prompt("please edit")
        assert result.stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    (req,) = seen
    assert [(o.option_id, o.kind) for o in req.options] == [("allow", "allow_once"), ("reject", "reject_once")]
    assert req.tool_call["toolCallId"] == "call_2" and req.tool_call["kind"] == "edit"
    resolved = [e.data for e in evs if e.kind == "permission_resolved"]
    assert resolved[0]["decidedBy"] == "host" and resolved[0]["outcome"] == {"outcome": "selected", "optionId": "allow"}
    updates = [e.data for e in evs if e.update_kind == "tool_call_update"]
    assert {"toolCallId": "call_2", "status": "completed"}.items() <= updates[-1].items()
    state_calls = {c["toolCallId"]: c["status"] for c in session.state.tool_calls}
    assert state_calls == {"call_1": "completed", "call_2": "completed"}


def test_ts_agent_async_read_only_policy_denies_the_edit() -> None:
    async def main() -> Dict[str, Any]:
        async with acp_host.AsyncHost(policy="read-only") as host:
            agent = await host.spawn([interop_peer("ts-agent")])
            session = await agent.new_session("/tmp")
            async with session.events() as events:
                task = asyncio.ensure_future(session.prompt("please edit"))
                resolved = None
                async for ev in events:
                    if ev.kind == "permission_resolved":
                        resolved = ev.data
                    if ev.kind == "turn_ended":
                        break
                result = await task
            assert result.stop_reason == "end_turn"
            assert resolved is not None
            return resolved

    resolved = asyncio.run(main())
    assert resolved["decidedBy"] == "rule" and resolved["rule"] == "preset read-only"
    assert resolved["outcome"] == {"outcome": "selected", "optionId": "reject"}


def test_ts_agent_cancel_mid_turn() -> None:
    with acp_host.Host() as host:
        agent = host.spawn([interop_peer("ts-agent")])
        session = agent.new_session("/tmp")
        stream = session.events()
        box: Dict[str, Any] = {}
        th = threading.Thread(target=lambda: box.setdefault("r", session.prompt("go")))
        th.start()
        stream.collect_until(lambda e: e.update_kind == "agent_message_chunk", T)
        session.cancel()
        th.join(T)
        assert box["r"].stop_reason == "cancelled"

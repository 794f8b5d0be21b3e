"""``session/fork`` behind ``unstable=["session/fork"]`` (sync and asyncio), and opt-in
coalescing of ``tool_call_update`` bursts (``coalesce_tool_call_updates``)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import acp_host
from conftest import T, mock

CWD = "/tmp"


def test_fork_without_the_opt_in_is_unsupported_and_nothing_is_sent() -> None:
    with acp_host.Host(wire_events=True) as host:
        stream = host.events()
        agent = host.spawn(mock())
        session = agent.new_session(CWD)
        try:
            agent.fork_session(session.id, CWD)
            raise AssertionError("fork without the opt-in must fail")
        except acp_host.UnsupportedError as e:
            assert "unstable" in str(e)
        session.prompt("hello")
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", timeout=T)
        sent = [e.data["message"].get("method") for e in evs if e.kind == "wire" and e.data["direction"] == "out"]
        assert "session/fork" not in sent, sent


def test_fork_with_the_opt_in_opens_a_session_that_takes_prompts() -> None:
    with acp_host.Host(unstable=["session/fork"]) as host:
        stream = host.events()
        agent = host.spawn(mock())
        original = agent.new_session(CWD)
        fork = agent.fork_session(original.id, CWD)
        assert fork.id != original.id
        assert fork.prompt("hello").stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", timeout=T)
        opened = [e for e in evs if e.kind == "session_opened"]
        assert [e.data.get("origin") for e in opened] == ["new", "fork"]
        assert opened[1].session == fork.id


def test_fork_async() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(unstable=["session/fork"]) as host:
            agent = await host.spawn(mock())
            original = await agent.new_session(CWD)
            fork = await agent.fork_session(original.id, CWD)
            assert fork.id != original.id
            assert (await fork.prompt("hi")).stop_reason == "end_turn"

    asyncio.run(asyncio.wait_for(main(), T))


def _tool_updates(coalesce: bool) -> List[Dict[str, Any]]:
    with acp_host.Host(coalesce_tool_call_updates=coalesce) as host:
        agent = host.spawn(mock(None, "--cumulative", "100"))
        session = agent.new_session(CWD)
        stream = host.events()
        session.prompt("build")
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", timeout=T)
        return [
            dict(e.data) for e in evs
            if e.kind == "session_update" and e.data["sessionUpdate"] == "tool_call_update"
        ]


def test_coalescing_accounts_for_every_update_and_keeps_the_newest_output() -> None:
    off = _tool_updates(False)
    on = _tool_updates(True)
    assert len(off) == 101
    represented = sum(u.get("_meta", {}).get("acpHost", {}).get("coalesced", 1) for u in on)
    assert represented == 101
    assert on[-1]["status"] == "completed"
    last_content = next(u["content"] for u in reversed(on) if "content" in u)
    assert last_content == off[-2]["content"]

"""The unstable session methods besides fork (``Agent.session_status``, ``set_session_title``,
``archive_session``, ``unarchive_session``, ``session_options``) through the Python face: opt-in,
gated on the agent's capabilities, typed results, the agent's errors and malformed answers as
the exception tree, in the sync API and its asyncio twin."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, List

import pytest

import acp_host
from conftest import mock

ALL = ["session/status", "session/set_title", "session/archive", "session/unarchive", "session/options"]


def all_five(agent: acp_host.Agent, sid: str, cwd: Path) -> List[Any]:
    """Each call once on ``sid``: ``"ok"`` or the exception's class."""
    out: List[Any] = []
    for call in (
        lambda: agent.session_status(sid),
        lambda: agent.set_session_title(sid, "t"),
        lambda: agent.archive_session(sid),
        lambda: agent.unarchive_session(sid),
        lambda: agent.session_options(cwd, session_id=sid),
    ):
        try:
            call()
            out.append("ok")
        except acp_host.AcpError as exc:
            out.append(type(exc))
    return out


def sent_methods(events: List[acp_host.Event]) -> List[str]:
    return [e.data["message"].get("method") for e in events
            if e.kind == "wire" and e.data["direction"] == "out"]


def test_without_the_opt_in_or_the_capability_nothing_is_sent(tmp_path: Path) -> None:
    with acp_host.Host(wire_events=True) as host:
        stream = host.events()
        agent = host.spawn(mock("unstable-sessions"))
        assert all_five(agent, "sess_stored", tmp_path) == [acp_host.UnsupportedError] * 5
        with pytest.raises(acp_host.UnsupportedError, match=r'unstable: \["session/status"\]'):
            agent.session_status("sess_stored")
        agent.shutdown()
        events = list(stream.collect_until(lambda e: e.kind == "agent_exited"))
    with acp_host.Host(wire_events=True, unstable=ALL) as host:
        stream = host.events()
        plain = host.spawn(mock())
        assert all_five(plain, "sess_1", tmp_path) == [acp_host.UnsupportedError] * 5
        with pytest.raises(acp_host.UnsupportedError, match=r"sessionCapabilities\.title"):
            plain.set_session_title("sess_1", "x")
        plain.shutdown()
        events += list(stream.collect_until(lambda e: e.kind == "agent_exited"))
    assert not set(ALL) & set(sent_methods(events))
    with pytest.raises(acp_host.ConfigError):
        acp_host.Host(unstable=["session/titles"])


def test_status_title_archive_and_options(tmp_path: Path) -> None:
    with acp_host.Host(unstable=ALL) as host:
        stream = host.events()
        agent = host.spawn(mock("unstable-sessions"))
        session = agent.new_session(tmp_path)
        st = agent.session_status(session.id)
        assert (st.status, st.reported, st.is_open) == ("open", "open", True)
        assert agent.session_status("sess_stored").to_dict() == {"status": "saved", "reported": "saved"}
        custom = agent.session_status("_mock_custom_status")
        assert (custom.status, custom.reported, custom.is_open) == ("saved", "_hibernating", False)

        assert agent.set_session_title(session.id, "  Release notes  ") == "Release notes"
        assert session.state.title == "Release notes"

        defaults = agent.session_options(tmp_path)
        assert isinstance(defaults, acp_host.SessionDefaults)
        assert defaults.modes is not None and defaults.modes["currentModeId"] == "ask"
        assert defaults.config_options
        assert agent.session_options(tmp_path, session_id=session.id).modes == session.state.modes

        agent.archive_session(session.id)
        closed = stream.collect_until(lambda e: e.kind == "session_closed")[-1]
        assert closed.data["reason"] == "archived" and closed.session == session.id
        assert not session.state.open
        assert all(s["sessionId"] != session.id for s in agent.list_sessions()["sessions"])
        agent.unarchive_session(session.id)
        listed = [s for s in agent.list_sessions()["sessions"] if s["sessionId"] == session.id]
        assert listed and listed[0]["archived"] is False


def test_the_agents_errors_and_malformed_answers(tmp_path: Path) -> None:
    with acp_host.Host(unstable=ALL) as host:
        agent = host.spawn(mock("unstable-sessions"))
        assert all_five(agent, "sess_nope", tmp_path) == [acp_host.AgentError] * 5
        with pytest.raises(acp_host.AgentError) as info:
            agent.set_session_title("sess_stored", "  ")
        assert info.value.data["code"] == -32602
        with pytest.raises(acp_host.ProtocolError):
            agent.session_status("_mock_malformed")
        with pytest.raises(acp_host.ProtocolError):
            agent.set_session_title("_mock_malformed", "x")
        with pytest.raises(acp_host.ProtocolError):
            agent.session_options(tmp_path, session_id="_mock_malformed")
        with pytest.raises(acp_host.InvalidArgumentError):
            agent.session_options("relative")


def test_the_async_twin(tmp_path: Path) -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(unstable=ALL) as host:
            agent = await host.spawn(mock("unstable-sessions"))
            session = await agent.new_session(tmp_path)
            assert (await agent.session_status(session.id)).is_open
            assert await agent.set_session_title(session.id, " x ") == "x"
            assert (await agent.session_options(tmp_path)).modes is not None
            await agent.archive_session(session.id)
            await agent.unarchive_session(session.id)
            assert (await agent.session_status(session.id)).status == "saved"
            with pytest.raises(acp_host.AgentError):
                await agent.session_status("sess_nope")

    asyncio.run(main())


def test_the_types_are_exported() -> None:
    for name in ("SessionStatus", "SessionDefaults"):
        assert name in acp_host.__all__ and hasattr(acp_host, name), name

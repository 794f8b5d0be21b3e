"""The turn's assembled text on ``TurnResult`` (``text``, ``thought``, ``text_truncated``), model
selection (``session.models()`` / ``set_model``) and ``agent.logout()`` (gated on
``agentCapabilities.auth.logout``), sync and asyncio, against the mock agent."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import acp_host
from conftest import T, mock

CWD = "/tmp"
ALL_UPDATES_TEXT = "Here comes every update kind. Done."
ALL_UPDATES_THOUGHT = "Let me think about every update kind."
MODELS = [
    acp_host.ModelInfo("mock-small", "Mock Small", "Fast and cheap"),
    acp_host.ModelInfo("mock-large", "Mock Large", "Slow and thorough"),
]
LOGOUT_CAP: Dict[str, Any] = {"initialize": {"agentCapabilities": {"auth": {"logout": {}}}}}


def scenario(tmp_path: Path, body: Dict[str, Any]) -> str:
    """A scenario file (``mock(path)`` takes it)."""
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"description": "written by test_models.py", **body}))
    return str(path)


def is_marker(ev: acp_host.Event) -> bool:
    """The outgoing ``session/new`` that ends a ``sent`` window (any agent serves it, whatever
    capabilities its scenario advertises)."""
    return ev.kind == "wire" and ev.data["direction"] == "out" and ev.data["message"].get("method") == "session/new"


def methods_out(evs: List[acp_host.Event]) -> List[str]:
    """The methods the host sent in ``evs`` (requests and notifications), the marker excluded."""
    return [e.data["message"]["method"] for e in evs
            if e.kind == "wire" and e.data["direction"] == "out" and "method" in e.data["message"]
            and not is_marker(e)]


def sent(agent: acp_host.Agent, action: Callable[[], Any]) -> List[str]:
    """Run ``action`` and return the methods the host sent meanwhile: a ``session/new`` sent
    after it marks the end (so a call that fails locally is seen to send nothing)."""
    with agent.events() as stream:
        action()
        agent.new_session(CWD)
        return methods_out(stream.collect_until(is_marker, T))


async def sent_async(agent: acp_host.AsyncAgent, action: Callable[[], Any]) -> List[str]:
    async with agent.events() as stream:
        await action()
        await agent.new_session(CWD)
        return methods_out(await stream.collect_until(is_marker, T))


# --- TurnResult text / thought -------------------------------------------------------------------


def test_prompt_returns_the_turns_assembled_text_and_thought() -> None:
    with acp_host.Host() as host:
        session = host.spawn(mock("all-updates")).new_session(CWD)
        r = session.prompt("go")
    assert r.stop_reason == "end_turn"
    assert r.text == ALL_UPDATES_TEXT
    assert r.thought == ALL_UPDATES_THOUGHT
    assert r.text_truncated is False
    assert isinstance(r.turn, int) and isinstance(r.raw, dict)
    d = r.to_dict()
    assert d["text"] == ALL_UPDATES_TEXT and d["thought"] == ALL_UPDATES_THOUGHT and d["text_truncated"] is False
    assert [f.name for f in dataclasses.fields(r)] == [
        "turn", "stop_reason", "usage", "raw", "text", "thought", "text_truncated"]


def test_prompt_returns_the_turns_assembled_text_and_thought_async() -> None:
    async def main() -> acp_host.TurnResult:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock("all-updates"))
            session = await agent.new_session(CWD)
            return await session.prompt("go")

    r = asyncio.run(main())
    assert r.stop_reason == "end_turn"
    assert r.text == ALL_UPDATES_TEXT
    assert r.thought == ALL_UPDATES_THOUGHT
    assert r.text_truncated is False


def test_a_turn_without_message_chunks_has_empty_text(tmp_path: Path) -> None:
    with acp_host.Host() as host:
        r = host.spawn(mock(scenario(tmp_path, {"prompts": [[]]}))).new_session(CWD).prompt("go")
    assert (r.text, r.thought, r.text_truncated) == ("", "", False)


def test_turn_result_keeps_its_positional_fields_first() -> None:
    r = acp_host.TurnResult(3, "end_turn", None, {"stopReason": "end_turn"})
    assert (r.turn, r.stop_reason, r.usage, r.raw) == (3, "end_turn", None, {"stopReason": "end_turn"})
    assert (r.text, r.thought, r.text_truncated) == ("", "", False)


# --- models / set_model --------------------------------------------------------------------------


def test_models_reads_the_model_config_option_and_set_model_switches_it() -> None:
    with acp_host.Host(wire_events=True) as host:
        agent = host.spawn(mock())
        session = agent.new_session(CWD)
        m = session.models()
        assert m is not None
        assert m.via == acp_host.ModelSwitch("config_option", "model")
        assert m.via.kind == "config_option" and m.via.config_id == "model"
        assert m.current == "mock-small"
        assert m.available == MODELS
        assert m.to_dict() == {
            "current": "mock-small",
            "available": [
                {"id": "mock-small", "name": "Mock Small", "description": "Fast and cheap"},
                {"id": "mock-large", "name": "Mock Large", "description": "Slow and thorough"},
            ],
            "via": {"kind": "config_option", "configId": "model"},
        }
        assert sent(agent, lambda: session.set_model("mock-large")) == ["session/set_config_option"]
        after = session.models()
        assert after is not None and after.current == "mock-large"
        model = next(o for o in session.state.config_options or [] if o["id"] == "model")
        assert model["currentValue"] == "mock-large"


def test_set_model_with_an_unknown_id_raises_invalid_argument_and_sends_nothing() -> None:
    with acp_host.Host(wire_events=True) as host:
        agent = host.spawn(mock())
        session = agent.new_session(CWD)

        def unknown() -> None:
            with pytest.raises(acp_host.InvalidArgumentError) as err:
                session.set_model("mock-huge")
            assert err.value.code == "invalid_argument" and "mock-huge" in str(err.value)

        assert sent(agent, unknown) == []
        m = session.models()
        assert m is not None and m.current == "mock-small"


def test_models_and_set_model_async() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(wire_events=True) as host:
            agent = await host.spawn(mock())
            session = await agent.new_session(CWD)
            m = session.models()  # not awaitable: it reads the session's state
            assert m is not None
            assert m.via.kind == "config_option" and m.via.config_id == "model"
            assert m.current == "mock-small" and m.available == MODELS
            assert await sent_async(agent, lambda: session.set_model("mock-large")) == ["session/set_config_option"]
            after = session.models()
            assert after is not None and after.current == "mock-large"

            async def unknown() -> None:
                with pytest.raises(acp_host.InvalidArgumentError):
                    await session.set_model("mock-huge")

            assert await sent_async(agent, unknown) == []
            last = session.models()
            assert last is not None and last.current == "mock-large"

    asyncio.run(main())


def test_no_model_choice_models_is_none_and_set_model_is_unsupported(tmp_path: Path) -> None:
    path = scenario(tmp_path, {"newSession": {"configOptions": None}})
    with acp_host.Host() as host:
        session = host.spawn(mock(path)).new_session(CWD)
        assert session.models() is None
        with pytest.raises(acp_host.UnsupportedError):
            session.set_model("mock-small")

    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock(path))
            session = await agent.new_session(CWD)
            assert session.models() is None
            with pytest.raises(acp_host.UnsupportedError):
                await session.set_model("mock-small")

    asyncio.run(main())


# --- logout --------------------------------------------------------------------------------------


def test_logout_without_the_capability_raises_unsupported_and_sends_nothing() -> None:
    with acp_host.Host(wire_events=True) as host:
        agent = host.spawn(mock())
        assert "logout" not in (agent.capabilities.get("auth") or {})

        def logout() -> None:
            with pytest.raises(acp_host.UnsupportedError) as err:
                agent.logout()
            assert err.value.code == "unsupported"

        assert sent(agent, logout) == []


def test_logout_when_the_agent_advertises_auth_logout(tmp_path: Path) -> None:
    with acp_host.Host(wire_events=True) as host:
        agent = host.spawn(mock(scenario(tmp_path, LOGOUT_CAP)))
        assert agent.capabilities["auth"] == {"logout": {}}
        assert sent(agent, agent.logout) == ["logout"]
        agent.logout()  # again: still fine


def test_logout_async(tmp_path: Path) -> None:
    path = scenario(tmp_path, LOGOUT_CAP)

    async def main() -> None:
        async with acp_host.AsyncHost(wire_events=True) as host:
            plain = await host.spawn(mock())

            async def refused() -> None:
                with pytest.raises(acp_host.UnsupportedError):
                    await plain.logout()

            assert await sent_async(plain, refused) == []
            agent = await host.spawn(mock(path))
            assert await sent_async(agent, agent.logout) == ["logout"]

    asyncio.run(main())

"""Faults: the agent crashes, hangs, lies, floods or pollutes stdout. No hang, a typed exception,
and no process left behind (checked after every test by conftest)."""

from __future__ import annotations

import asyncio
import builtins
import threading
import time
from typing import Any, Dict, List, Tuple

import pytest

import acp_host
from conftest import T, agent_pid, alive, mock, wait_gone


def run_turn(scenario: str, **host_kw: Any) -> Tuple[List[acp_host.Event], Any]:
    with acp_host.Host(**host_kw) as host:
        stream = host.events()
        agent = host.spawn(mock(scenario))
        session = agent.new_session("/tmp")
        try:
            result: Any = session.prompt("go")
        except acp_host.AcpError as exc:
            result = exc
        events = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    return events, result


def of_kind(events: List[acp_host.Event], kind: str) -> List[acp_host.Event]:
    return [e for e in events if e.kind == kind]


def test_crash_mid_turn_raises_agent_exited_with_status_and_stderr() -> None:
    events, err = run_turn("crash-mid-turn")
    assert isinstance(err, acp_host.AgentExitedError), err
    assert err.code == "agent_exited"
    assert err.exit_code == 3 and err.signal is None
    assert "fatal: mock crash" in err.stderr_tail
    assert "exit code 3" in str(err)
    ended = of_kind(events, "turn_ended")[-1].data
    assert ended["stopReason"] is None and ended["error"]["kind"] == "agent_exited"


def test_crash_mid_turn_async() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock("crash-mid-turn"))
            session = await agent.new_session("/tmp")
            with pytest.raises(acp_host.AgentExitedError) as ei:
                await asyncio.wait_for(session.prompt("go"), T)
            assert ei.value.exit_code == 3
            assert agent.exit_info is not None and agent.exit_info.exit_code == 3

    asyncio.run(main())


def test_hanging_agent_prompt_timeout_is_a_builtin_timeout_error() -> None:
    events, err = run_turn("hang", prompt_timeout=0.3)
    assert isinstance(err, acp_host.TimeoutError) and isinstance(err, builtins.TimeoutError)
    assert err.code == "timeout" and err.data["afterMs"] == 300
    assert of_kind(events, "turn_ended")[-1].data["error"]["kind"] == "timeout"


def test_hanging_agent_is_shut_down_and_the_pending_prompt_fails() -> None:
    with acp_host.Host(shutdown_grace=0.3) as host:
        stream = host.events()
        agent = host.spawn(mock("hang"))
        session = agent.new_session("/tmp")
        box: Dict[str, Any] = {}

        def turn() -> None:
            try:
                session.prompt("go")
            except acp_host.AcpError as exc:
                box["err"] = exc

        th = threading.Thread(target=turn)
        th.start()
        evs = stream.collect_until(lambda e: e.kind == "turn_started", T)
        pid = agent_pid(evs)
        time.sleep(0.2)
        agent.shutdown()
        th.join(T)
        assert isinstance(box.get("err"), acp_host.ClosedError)
        assert wait_gone(pid)


def test_agent_ignoring_stdin_eof_is_terminated_by_the_ladder() -> None:
    with acp_host.Host(shutdown_grace=0.3) as host:
        stream = host.events()
        agent = host.spawn(mock("ignore-stdin-eof"))
        pid = agent_pid(stream.collect_until(lambda e: e.kind == "agent_ready", T))
        started = time.monotonic()
        exit_info = agent.shutdown()
        assert time.monotonic() - started < 5
        assert exit_info.signal is not None or exit_info.exit_code is not None
        assert wait_gone(pid), "agent survived the ladder"


def test_closing_the_host_kills_agents_that_ignore_eof() -> None:
    host = acp_host.Host(shutdown_grace=0.2)
    stream = host.events()
    host.spawn(mock("ignore-stdin-eof"))
    host.spawn(mock("ignore-stdin-eof"))
    evs = stream.collect_until(lambda e: e.kind == "agent_ready" and e.agent == 2, T)
    pids = [e.data["pid"] for e in evs if e.kind == "agent_ready"]
    assert len(pids) == 2 and all(alive(p) for p in pids)
    host.close()
    assert all(wait_gone(p) for p in pids)
    assert host.closed
    with pytest.raises(acp_host.ClosedError):
        host.spawn(mock())
    rest = list(stream)  # the stream ends after the host closed
    assert [e.kind for e in rest].count("agent_exited") == 2


def test_garbage_on_stdout_is_noise_and_the_turn_completes() -> None:
    events, result = run_turn("garbage-stdout")
    assert result.stop_reason == "end_turn"
    counts = [e.data["count"] for e in of_kind(events, "protocol_noise")]
    assert counts and counts == list(range(1, len(counts) + 1))


def test_over_long_line_is_skipped_and_the_connection_survives() -> None:
    events, result = run_turn("huge-line", max_line_bytes=1024 * 1024)
    assert result.stop_reason == "end_turn"
    (err,) = of_kind(events, "protocol_error")
    assert err.data["reason"] == "line_too_long" and err.data["bytes"] > 2_000_000
    events, result = run_turn("huge-line")
    assert result.stop_reason == "end_turn"
    assert not of_kind(events, "protocol_error")
    assert any(len(e.data_json) > 2_000_000 for e in events)


def test_invalid_utf8_is_decoded_lossily_and_reported() -> None:
    events, result = run_turn("invalid-utf8")
    assert result.stop_reason == "end_turn"
    (err,) = of_kind(events, "protocol_error")
    assert err.data["reason"] == "invalid_utf8"
    assert any("\ufffd" in e.data_json for e in of_kind(events, "session_update"))


def test_unknown_and_duplicate_responses_are_reported_and_ignored() -> None:
    events, result = run_turn("unknown-response-id")
    assert result.stop_reason == "end_turn"
    reasons = {e.data["reason"] for e in of_kind(events, "protocol_error")}
    assert reasons == {"unknown_response_id"}
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(mock("duplicate-response"))
        session = agent.new_session("/tmp")
        assert session.prompt("1").stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "protocol_error", T)
        assert evs[-1].data["reason"] == "duplicate_response"
        assert session.prompt("2").stop_reason == "end_turn", "still usable"


def test_agent_ignoring_cancel_keeps_streaming_and_ends_its_way() -> None:
    # A grace longer than the agent's second of ignoring: its own answer ends the turn.
    with acp_host.Host(cancel_grace=30) as host:
        stream = host.events()
        agent = host.spawn(mock("ignore-cancel"))
        session = agent.new_session("/tmp")
        box: Dict[str, Any] = {}
        th = threading.Thread(target=lambda: box.setdefault("r", session.prompt("go")))
        th.start()
        stream.collect_until(lambda e: e.kind == "session_update", T)
        session.cancel()
        th.join(T)
        assert box["r"].stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
        assert of_kind(evs, "session_update"), "updates after cancel still delivered"


def test_stderr_flood_is_drained() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(mock("stderr-flood"))
        session = agent.new_session("/tmp")
        th = threading.Thread(target=session.prompt, args=("go",))
        th.start()
        lines = 0
        for batch in stream.batches():
            lines += sum(1 for e in batch if e.kind == "agent_stderr")
            if batch[-1].kind == "turn_ended" or any(e.kind == "turn_ended" for e in batch):
                break
        th.join(T)
        info = agent.shutdown()
        lines += sum(1 for e in stream.collect_until(lambda e: e.kind == "agent_exited", T) if e.kind == "agent_stderr")
        assert lines >= 20_000, lines
        assert len(info.stderr_tail) <= 64 * 1024


def test_version_mismatch_is_typed_and_the_agent_is_shut_down() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        with pytest.raises(acp_host.VersionUnsupportedError) as ei:
            host.spawn(mock("version-mismatch"))
        assert ei.value.code == "version_unsupported" and ei.value.data["agentVersion"] == 2
        evs = stream.collect_until(lambda e: e.kind == "agent_exited", T)
        assert not of_kind(evs, "agent_ready")
        assert evs[-1].data["reason"] == "shutdown"


def test_missing_agent_command_is_a_spawn_error() -> None:
    with acp_host.Host() as host:
        with pytest.raises(acp_host.SpawnError) as ei:
            host.spawn(["/nonexistent/agent-binary", "--x"])
        assert isinstance(ei.value, OSError) and ei.value.code == "spawn_failed"
        assert "/nonexistent/agent-binary" in str(ei.value)
        with pytest.raises(acp_host.InvalidArgumentError):
            host.spawn([])
        with pytest.raises(acp_host.InvalidArgumentError):
            host.spawn("")


def test_slow_reading_agent_still_completes() -> None:
    _, result = run_turn("slow-read")
    assert result.stop_reason == "end_turn"


def test_auth_required_then_authenticate() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock("auth-required"))
        assert [m["id"] for m in agent.auth_methods] == ["mock-login", "mock-terminal"]
        with pytest.raises(acp_host.AuthRequiredError) as ei:
            agent.new_session("/tmp")
        assert ei.value.data["code"] == -32000
        with pytest.raises(acp_host.UnsupportedError):
            agent.authenticate("mock-terminal")
        with pytest.raises(acp_host.InvalidArgumentError):
            agent.authenticate("nope")
        agent.authenticate("mock-login")
        assert agent.new_session("/tmp").prompt("hi").stop_reason == "end_turn"


def test_stalled_consumer_applies_backpressure_and_loses_nothing() -> None:
    with acp_host.Host(event_capacity=64) as host:
        agent = host.spawn(mock(None, "--flood", "50000"))
        session = agent.new_session("/tmp")
        stream = session.events()
        box: Dict[str, Any] = {}
        th = threading.Thread(target=lambda: box.setdefault("r", session.prompt("flood")))
        th.start()
        time.sleep(0.7)
        assert th.is_alive(), "the turn finished although nobody pulled 50k events"
        updates, last = 0, 0
        for ev in stream:
            assert ev.seq > last
            last = ev.seq
            if ev.kind == "session_update":
                updates += 1
            elif ev.kind == "turn_ended":
                break
        th.join(T)
        assert updates == 50_000 and box["r"].stop_reason == "end_turn"


def test_nobody_subscribed_never_stalls_the_agent() -> None:
    with acp_host.Host(event_capacity=16) as host:
        agent = host.spawn(mock(None, "--flood", "20000"))
        session = agent.new_session("/tmp")
        assert session.prompt("flood").stop_reason == "end_turn"


def test_closed_or_dropped_stream_releases_backpressure() -> None:
    with acp_host.Host(event_capacity=16) as host:
        agent = host.spawn(mock(None, "--flood", "20000"))
        session = agent.new_session("/tmp")
        stream = host.events()  # never pulled...
        stream.close()  # ...and closed
        host.events()  # never pulled, dropped at once
        assert session.prompt("flood").stop_reason == "end_turn"


def test_the_host_keeps_agents_whose_handles_were_dropped() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        host.spawn(mock())
        evs = stream.collect_until(lambda e: e.kind == "agent_ready", T)
        time.sleep(0.2)
        pid = agent_pid(evs)
        assert alive(pid)
        agent = host.agent(1)
        assert agent is not None and agent.new_session("/tmp").prompt("hi").stop_reason == "end_turn"
    assert wait_gone(pid)


def test_control_request_timeout_is_typed(tmp_path: Any) -> None:
    scenario = tmp_path / "new-session-hangs.json"
    scenario.write_text('{"description": "session/new is never answered", "newSession": {"before": [{"hang": true}]}}')
    with acp_host.Host(request_timeout=0.3) as host:
        agent = host.spawn(mock(str(scenario)))
        started = time.monotonic()
        with pytest.raises(acp_host.TimeoutError) as ei:
            agent.new_session("/tmp")
        assert time.monotonic() - started < 5
        assert ei.value.data["what"] and ei.value.data["afterMs"] == 300


def test_async_control_request_timeout_and_no_timeout_option(tmp_path: Any) -> None:
    scenario = tmp_path / "new-session-hangs.json"
    scenario.write_text('{"description": "session/new is never answered", "newSession": {"before": [{"hang": true}]}}')

    async def main() -> None:
        async with acp_host.AsyncHost(request_timeout=None) as host:
            agent = await host.spawn(mock(str(scenario)))
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(agent.new_session("/tmp"), 0.5)  # no host timeout: ours
        async with acp_host.AsyncHost(request_timeout=0.2) as host:
            agent = await host.spawn(mock(str(scenario)))
            with pytest.raises(acp_host.TimeoutError):
                await agent.new_session("/tmp")

    asyncio.run(main())


def test_async_flood_every_update_arrives_in_order() -> None:
    async def main() -> int:
        async with acp_host.AsyncHost(event_capacity=64) as host:
            agent = await host.spawn(mock(None, "--flood", "30000"))
            session = await agent.new_session("/tmp")
            stream = session.events()
            task = asyncio.ensure_future(session.prompt("flood"))
            updates, last = 0, 0
            async for batch in stream.batches():
                for ev in batch:
                    assert ev.seq > last
                    last = ev.seq
                    updates += ev.kind == "session_update"
                if batch[-1].kind == "turn_ended":
                    break
            assert (await task).stop_reason == "end_turn"
            updates2 = 0
            task = asyncio.ensure_future(session.prompt("again"))
            async for ev in stream:
                updates2 += ev.kind == "session_update"
                if ev.kind == "turn_ended":
                    break
            await task
            return updates + updates2

    assert asyncio.run(main()) == 60_000


def test_cancel_settles_a_prompt_the_agent_never_answers() -> None:
    """Stop from another thread: cancel() brings the blocked prompt back within cancel_grace."""
    with acp_host.Host(cancel_grace=0.3) as host:
        stream = host.events()
        agent = host.spawn(mock("hang"))
        session = agent.new_session("/tmp")
        box: Dict[str, Any] = {}

        def turn() -> None:
            try:
                session.prompt("go")
            except acp_host.AcpError as exc:
                box["e"] = exc

        th = threading.Thread(target=turn)
        th.start()
        pid = agent_pid(stream.collect_until(lambda e: e.kind == "session_update", T))
        started = time.monotonic()
        session.cancel()
        th.join(T)
        assert not th.is_alive(), "the prompt must settle"
        assert isinstance(box.get("e"), acp_host.CancelledError), box
        assert 0.25 <= time.monotonic() - started < 3
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
        assert evs[-1].data["error"]["kind"] == "cancelled"
        started = time.monotonic()
    # close() after an ignored cancel: the shutdown ladder, nothing left behind.
    assert time.monotonic() - started < 10
    assert wait_gone(pid)


def test_cancelling_an_async_prompt_settles_at_once_and_the_turn_ends() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(cancel_grace=2.0) as host:
            stream = host.events()
            agent = await host.spawn(mock("hang"))
            session = await agent.new_session("/tmp")
            task = asyncio.ensure_future(session.prompt("go"))
            await stream.collect_until(lambda e: e.kind == "session_update", T)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - started < 1.0, "CancelledError at once, not after the grace"
            evs = await stream.collect_until(lambda e: e.kind == "turn_ended", T)
            assert evs[-1].data["error"]["kind"] == "cancelled"
            # A new turn is possible: the session is not left busy by the ignoring agent.
            task = asyncio.ensure_future(session.prompt("again"))
            await stream.collect_until(lambda e: e.kind == "turn_started", T)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(asyncio.wait_for(main(), T))

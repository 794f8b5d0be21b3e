"""Supervised agents (``spawn(..., restart=...)``): a process that dies is started again under the
same agent id, its sessions reopened, and the same ``Agent``/``Session`` objects keep working; a
crash loop gives up (``agent_failed``); ``close()`` stops a restart; a bad policy is a typed
error. The agent is the mock behind a small shell wrapper that counts its starts in the test's
directory and runs ``start.N`` (else ``start.rest``) before the mock: a start can crash
(``--scenario crash-mid-turn``), fail (``exit 7``) or hang. ``ACP_MOCK_STATE_DIR`` keeps the mock's
sessions across processes, as real agents keep theirs on disk."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping

import pytest

import acp_host
from conftest import MOCK, T, alive, wait_gone

WRAPPER = r"""d=$0; m=$1; n=$(( $(cat "$d/starts" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/starts"; ARGS=""
if [ -f "$d/start.$n" ]; then . "$d/start.$n"; elif [ -f "$d/start.rest" ]; then . "$d/start.rest"; fi
exec "$m" $ARGS"""

#: 20 ms first delay: restarts are quick, and a test that waits for one waits for its event.
FAST = acp_host.RestartPolicy(max_restarts=3, backoff=0.02, max_backoff=0.2)


def command(d: Path, **starts: str) -> List[str]:
    """The supervised wrapper around the mock; ``starts`` maps ``s1``, ``s2``, ... or ``rest`` to
    the shell lines run before the mock starts that time."""
    for name, body in starts.items():
        (d / f"start.{name.lstrip('s')}").write_text(body)
    return ["/bin/sh", "-c", WRAPPER, str(d), MOCK]


def env(d: Path) -> Dict[str, Any]:
    return {"ACP_MOCK_STATE_DIR": str(d), "ACP_MOCK_EXIT_ON": None, "ACP_MOCK_CREDENTIALS": None}


def starts(d: Path) -> int:
    p = d / "starts"
    return int(p.read_text()) if p.exists() else 0


def scenario_with_caps(d: Path, caps: Mapping[str, Any]) -> str:
    """A start line whose mock advertises ``caps`` in ``initialize``."""
    path = d / "caps.json"
    path.write_text(json.dumps({"description": "test_supervisor.py", "initialize": {"agentCapabilities": caps}}))
    return f'ARGS="--scenario {path}"'


def kinds(events: List[Any]) -> List[str]:
    """Kinds without the agents' stderr lines (their timing is the OS's)."""
    return [e.kind for e in events if e.kind != "agent_stderr"]


def of_kind(events: List[Any], kind: str) -> List[Any]:
    return [e for e in events if e.kind == kind]


def is_(kind: str) -> Any:
    return lambda e: e.kind == kind


def test_a_crash_mid_turn_fails_the_prompt_then_the_same_session_works_on_the_restarted_agent(tmp_path: Path) -> None:
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(command(tmp_path, s1='ARGS="--scenario crash-mid-turn"'), env=env(tmp_path), restart=FAST)
        agent_events = agent.events()
        first_pid = agent.pid
        assert first_pid is not None and alive(first_pid)
        session = agent.new_session(str(tmp_path))
        session_events = session.events()

        with pytest.raises(acp_host.AgentExitedError) as ei:
            session.prompt("go", timeout=T)
        assert ei.value.exit_code == 3
        assert "fatal: mock crash" in ei.value.stderr_tail

        got = stream.collect_until(is_("agent_restarted"), T)
        trace = kinds(got)
        tail = trace[trace.index("turn_ended"):]
        assert tail == ["turn_ended", "session_closed", "agent_exited", "agent_restarting", "agent_ready",
                        "session_opened", "agent_restarted"], trace
        assert {e.agent for e in got} == {agent.id}
        assert [e.seq for e in got] == sorted(e.seq for e in got)
        restarting = of_kind(got, "agent_restarting")[0].data
        assert (restarting["attempt"], restarting["maxRestarts"], restarting["delayMs"]) == (1, 3, 20)
        assert restarting["error"]["kind"] == "agent_exited" and restarting["error"]["data"]["exitCode"] == 3
        reopened = of_kind(got, "session_opened")[-1]
        assert reopened.session == session.id and reopened.data["origin"] == "resume"
        restarted = of_kind(got, "agent_restarted")[0].data
        assert restarted["recovered"] == [{"sessionId": session.id, "via": "resume"}]
        assert restarted["lost"] == []

        # The same objects reach the new process.
        assert agent.pid is not None and agent.pid != first_pid
        assert restarted["pid"] == agent.pid
        assert agent.exit_info is None and not agent.restarts_exhausted
        assert wait_gone(first_pid)
        result = session.prompt("again", timeout=T)
        assert result.stop_reason == "end_turn" and result.text
        assert session.state.open
        assert starts(tmp_path) == 2

        # The agent's and the session's streams go on across the restart.
        seen = agent_events.collect_until(is_("agent_restarted"), T)
        assert kinds(seen)[-4:] == ["agent_restarting", "agent_ready", "session_opened", "agent_restarted"]
        before = kinds(session_events.collect_until(
            lambda e: e.kind == "session_opened" and e.data["origin"] == "resume", T))
        assert before[0] == "session_opened" and "session_closed" in before
        after = session_events.collect_until(is_("turn_ended"), T)
        assert after[-1].data["stopReason"] == "end_turn"
        new_pid = agent.pid
    assert new_pid is not None and not alive(new_pid)
    # Closing is a shutdown, not a crash: the agent's stream ends without another restart.
    last = kinds(list(agent_events))
    assert last[-1] == "agent_exited" and "agent_restarting" not in last


def test_an_agent_that_cannot_restart_gives_up_and_stays_down(tmp_path: Path) -> None:
    policy = dataclasses.replace(FAST, max_restarts=2)
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(command(tmp_path, s1="", rest="echo 'cannot start' >&2; exit 7"), env=env(tmp_path),
                           restart=policy)
        agent_events = agent.events()
        session = agent.new_session(str(tmp_path))
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)

        got = stream.collect_until(is_("agent_failed"), T)
        assert [e.data["attempt"] for e in of_kind(got, "agent_restarting")] == [1, 2]
        failed = of_kind(got, "agent_failed")[0]
        assert failed.agent == agent.id
        assert failed.data["attempts"] == 2 == policy.max_restarts
        assert failed.data["error"]["kind"]
        assert agent.restarts_exhausted
        assert agent.exit_info is not None
        assert starts(tmp_path) == 3
        # Terminal: the agent's stream ends with agent_failed, and its calls raise the exit error.
        rest = list(agent_events)
        assert rest and rest[-1].kind == "agent_failed", kinds(rest)
        with pytest.raises(acp_host.AgentExitedError):
            session.prompt("hi", timeout=T)
        with pytest.raises(acp_host.AgentExitedError):
            agent.new_session(str(tmp_path))
        # A stream made now ends at once.
        assert agent.events().next(T) is None
    assert starts(tmp_path) == 3


def test_a_crash_mid_turn_async(tmp_path: Path) -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            stream = host.events()
            agent = await host.spawn(command(tmp_path, s1='ARGS="--scenario crash-mid-turn"'), env=env(tmp_path),
                                     restart={"maxRestarts": 3, "backoffMs": 20})
            first_pid = agent.pid
            session = await agent.new_session(str(tmp_path))
            with pytest.raises(acp_host.AgentExitedError) as ei:
                await asyncio.wait_for(session.prompt("go"), T)
            assert ei.value.exit_code == 3

            got = await stream.collect_until(is_("agent_restarted"), T)
            trace = kinds(got)
            assert trace.index("agent_exited") < trace.index("agent_restarting") < trace.index("agent_restarted")
            assert {e.agent for e in got} == {agent.id}
            restarted = of_kind(got, "agent_restarted")[0].data
            assert restarted["recovered"] == [{"sessionId": session.id, "via": "resume"}]
            assert agent.pid is not None and agent.pid != first_pid
            assert not agent.restarts_exhausted
            result = await asyncio.wait_for(session.prompt("again"), T)
            assert result.stop_reason == "end_turn"

    asyncio.run(main())


def test_close_during_the_backoff_returns_at_once_and_leaves_no_process(tmp_path: Path) -> None:
    host = acp_host.Host()
    try:
        stream = host.events()
        agent = host.spawn(command(tmp_path), env=env(tmp_path),
                           restart=acp_host.RestartPolicy(backoff=30, max_backoff=30))
        agent_events = agent.events()
        pid = agent.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        restarting = stream.collect_until(is_("agent_restarting"), T)[-1]
        assert restarting.data["delayMs"] == 30_000
        # Dead, but a restart is coming.
        assert agent.exit_info is not None and not agent.restarts_exhausted
    finally:
        t = time.monotonic()
        host.close()
    assert time.monotonic() - t < 5
    assert not alive(pid)
    assert starts(tmp_path) == 1
    # The streams end: the close delivered what was queued, and no restart followed.
    assert "agent_restarted" not in kinds(list(stream))
    assert "agent_restarting" in kinds(list(agent_events))


def test_no_restart_after_close(tmp_path: Path) -> None:
    # A backoff short enough that a supervisor still running after close() would start the agent
    # again within the window looked at below.
    host = acp_host.Host()
    try:
        stream = host.events()
        agent = host.spawn(command(tmp_path), env=env(tmp_path),
                           restart=acp_host.RestartPolicy(backoff=0.3, max_backoff=0.3))
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)
        stream.collect_until(is_("agent_restarting"), T)
    finally:
        host.close()
    time.sleep(1.0)  # not a synchronization: nothing may happen in this window
    assert starts(tmp_path) == 1
    assert agent.exit_info is not None


def test_close_while_the_new_process_starts_leaves_no_process(tmp_path: Path) -> None:
    # The second process never answers `initialize` (it records its pid first).
    cmd = command(tmp_path, s2='echo $$ > "$d/pid.2"; exec sleep 600')
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(cmd, env=env(tmp_path), restart=FAST)
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)
        stream.collect_until(is_("agent_restarting"), T)
        pid_file = tmp_path / "pid.2"
        deadline = time.monotonic() + T
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the second start never happened"
            time.sleep(0.02)
        second = int(pid_file.read_text())
        assert alive(second)
    assert wait_gone(second, 10), f"pid {second} outlived close()"


def test_shutdown_of_a_restarting_agent_ends_its_streams(tmp_path: Path) -> None:
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(command(tmp_path), env=env(tmp_path),
                           restart=acp_host.RestartPolicy(backoff=30, max_backoff=30))
        agent_events = agent.events()
        session = agent.new_session(str(tmp_path))
        session_events = session.events()
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)
        stream.collect_until(is_("agent_restarting"), T)
        agent.shutdown()
        # Not restarted, and the streams that waited for the restart end after the agent's final
        # `agent_exited` (the core marks the last event).
        assert kinds(agent_events.collect_until(lambda e: False, T))[-2:] == ["agent_restarting", "agent_exited"]
        assert kinds(session_events.collect_until(lambda e: False, T))[-1] == "session_closed"
        assert agent.events().next(T) is None
        assert starts(tmp_path) == 1


@pytest.mark.parametrize("restart, path, words", [
    ({"maxRestart": 1}, "restart.maxRestart", "unknown option"),
    ({"maxRestarts": -1}, "restart.maxRestarts", "whole number"),
    ({"backoffMs": 1.5}, "restart.backoffMs", "whole number"),
    ({"backoffMs": float("nan")}, "restart.backoffMs", "whole number"),
    ({"backoff": 0.0001}, "restart.backoffMs", "whole number"),
    ({"max_restarts": 1, "maxRestarts": 2}, "restart.maxRestarts", "given twice"),
    ([1], "restart", "expected an object"),
    (3, "restart", "expected an object"),
])
def test_an_unusable_restart_policy_is_a_config_error_and_nothing_starts(
        tmp_path: Path, restart: Any, path: str, words: str) -> None:
    cmd = command(tmp_path)
    with acp_host.Host() as host:
        stream = host.events()
        with pytest.raises(acp_host.ConfigError) as ei:
            host.spawn(cmd, env=env(tmp_path), restart=restart)
        assert ei.value.code == "invalid_config" and ei.value.data["path"] == path
        assert words in str(ei.value)

        async def spawn_async() -> None:
            async with acp_host.AsyncHost() as ahost:
                await ahost.spawn(cmd, env=env(tmp_path), restart=restart)

        with pytest.raises(acp_host.ConfigError):
            asyncio.run(spawn_async())
        assert starts(tmp_path) == 0
        with pytest.raises(acp_host.TimeoutError):
            stream.next(0.2)  # no agent_exited either: nothing was started


@pytest.mark.parametrize("field, value", [
    ("max_restarts", -1), ("max_restarts", 1.5), ("max_restarts", True), ("max_restarts", 2**32),
    ("backoff", -0.1), ("backoff", float("nan")), ("max_backoff", float("inf")), ("reset_after", "60"),
])
def test_restart_policy_checks_its_values(field: str, value: Any) -> None:
    with pytest.raises(acp_host.ConfigError) as ei:
        acp_host.RestartPolicy(**{field: value})
    assert isinstance(ei.value, acp_host.InvalidArgumentError)
    assert ei.value.data == {"path": f"restart.{field}"}


def test_restart_policy_json_form_and_agent_spec() -> None:
    p = acp_host.RestartPolicy(max_restarts=5, backoff=0.1, max_backoff=2.5, reset_after=0)
    assert p.to_json() == {"maxRestarts": 5, "backoffMs": 100, "maxBackoffMs": 2500, "resetAfterMs": 0}
    assert acp_host.RestartPolicy().to_json() == {
        "maxRestarts": 3, "backoffMs": 250, "maxBackoffMs": 10_000, "resetAfterMs": 60_000}
    spec = acp_host.AgentSpec("agent", ("--acp",), restart=p)
    assert spec.to_dict()["restart"] == {"max_restarts": 5, "backoff": 0.1, "max_backoff": 2.5, "reset_after": 0}
    assert "restart" not in acp_host.AgentSpec("agent").to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.max_restarts = 1  # type: ignore[misc]


def test_a_session_that_cannot_be_reopened_is_reported_lost(tmp_path: Path) -> None:
    neither = scenario_with_caps(tmp_path, {"loadSession": False, "sessionCapabilities": {}})
    # Supervision from the AgentSpec (as a registry resolution would carry it).
    spec = acp_host.AgentSpec(*_split(command(tmp_path, rest=neither)), env=env(tmp_path), restart=FAST)
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(spec)
        session = agent.new_session(str(tmp_path))
        session_events = session.events()
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)

        got = stream.collect_until(is_("agent_restarted"), T)
        lost = of_kind(got, "session_lost")
        assert len(lost) == 1 and lost[0].session == session.id
        assert lost[0].data["sessionId"] == session.id and lost[0].data["error"]["kind"] == "unsupported"
        restarted = of_kind(got, "agent_restarted")[0].data
        assert restarted["recovered"] == [] and restarted["lost"] == [session.id]
        # The session's stream ends with its session_lost.
        assert kinds(list(session_events))[-1] == "session_lost"
        # The agent itself works again; the lost session does not.
        fresh = agent.new_session(str(tmp_path))
        assert fresh.prompt("hi", timeout=T).stop_reason == "end_turn"
        assert not session.state.open
        with pytest.raises(acp_host.NotFoundError):
            session.prompt("hi", timeout=T)


def test_the_spawn_argument_replaces_the_spec_policy(tmp_path: Path) -> None:
    spec = acp_host.AgentSpec(*_split(command(tmp_path)), env=env(tmp_path), restart=FAST)
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(spec, restart={"maxRestarts": 0})
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)
        got = stream.collect_until(is_("agent_failed"), T)
        assert of_kind(got, "agent_restarting") == []
        assert of_kind(got, "agent_failed")[0].data["attempts"] == 0
        assert agent.restarts_exhausted
        assert starts(tmp_path) == 1


def test_an_agent_without_a_policy_is_not_restarted(tmp_path: Path) -> None:
    with acp_host.Host() as host:
        agent = host.spawn(command(tmp_path), env=env(tmp_path))
        events = agent.events()
        assert agent.pid is not None
        os.kill(agent.pid, signal.SIGKILL)
        assert kinds(list(events))[-1] == "agent_exited"
        assert not agent.restarts_exhausted
        assert starts(tmp_path) == 1


def _split(cmd: List[str]) -> "tuple[str, tuple[str, ...]]":
    return cmd[0], tuple(cmd[1:])

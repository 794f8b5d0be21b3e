"""Replaying a recording through the Python face (``spawn(replay=...)``, docs/RECORDING.md
"Replaying"): a session recorded here plays back with no divergence; a host that prompts with other
words is reported with the field that differs, in the report and as the agent's stderr; bad input
is the core's ``ConfigError`` at the core's path, and nothing is started."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

import acp_host
from conftest import T, mock


def record(tmp_path: Path, text: str) -> Path:
    """A session of the mock agent's default scenario, recorded through this face."""
    file = tmp_path / "session.acprec.jsonl"
    with acp_host.Host(record={"file": str(file)}) as host:
        agent = host.spawn(mock("default"))
        assert agent.new_session(str(tmp_path)).prompt(text).stop_reason == "end_turn"
        agent.shutdown()
    return file


def report(path: Path) -> Dict[str, Any]:
    assert path.is_file(), f"no report at {path}"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def replay_sync(replay: Any, cwd: Path, text: str) -> List[acp_host.AnyEvent]:
    """Spawn ``replay``, prompt ``text`` once, shut down; the host's events up to the exit."""
    with acp_host.Host() as host:
        events = host.events()
        agent = host.spawn(replay=replay)
        agent.new_session(str(cwd)).prompt(text)
        agent.shutdown()
        return events.collect_until(lambda e: e.kind == "agent_exited", T)


def test_a_recording_replays_with_no_divergence_and_the_recorded_turn(tmp_path: Path) -> None:
    file = record(tmp_path, "hello")
    out = tmp_path / "report.json"
    evs = replay_sync(acp_host.Replay(file, pace="fast", report=out), tmp_path, "hello")
    r = report(out)
    assert r["divergenceCount"] == 0 and r["complete"] is True, r
    assert r["recording"] == str(file) and r["pace"] == "fast"
    kinds = [e.kind for e in evs]
    assert kinds[0] == "agent_ready" and kinds[-1] == "agent_exited"
    # The recorded agent's words reach this host as its updates.
    assert any(e.kind == "session_update" and e.update_kind == "agent_message_chunk" for e in evs)
    assert evs[-1].data.get("exitCode") is None  # a replay has no process


def test_a_prompt_with_other_words_is_a_params_differ_divergence_in_the_report_and_on_stderr(
        tmp_path: Path) -> None:
    file = record(tmp_path, "hello")
    out = tmp_path / "report.json"
    # The JSON form, snake_case and seconds accepted, played by the asyncio twin.
    spec = {"file": str(file), "pace": "fast", "wait": 5, "report": str(out)}

    async def run() -> List[acp_host.AnyEvent]:
        async with acp_host.AsyncHost() as host:
            events = host.events()
            agent = await host.spawn(replay=spec)
            session = await agent.new_session(str(tmp_path))
            result = await session.prompt("goodbye")
            assert result.stop_reason == "end_turn"  # the recorded answer, sent anyway
            await agent.shutdown()
            return await events.collect_until(lambda e: e.kind == "agent_exited", T)

    evs = asyncio.run(run())
    r = report(out)
    assert r["complete"] is False and r["divergenceCount"] == 1, r
    d = r["divergences"][0]
    assert d["kind"] == "params_differ" and d["method"] == "session/prompt", d
    assert d["differences"][0] == {"path": "params.prompt[0].text", "recorded": "hello", "live": "goodbye"}
    stderr = [e.data["line"] for e in evs if e.kind == "agent_stderr"]
    assert any(line.startswith("replay: divergence 1 (params_differ)") for line in stderr), stderr
    assert any('recorded "hello", host sent "goodbye"' in line for line in stderr), stderr


def test_the_recordings_path_alone_plays_it(tmp_path: Path) -> None:
    file = record(tmp_path, "hello")
    # At the recorded pace, with no report: the turn still ends as recorded.
    evs = replay_sync(file, tmp_path, "hello")
    ended = [e for e in evs if e.kind == "turn_ended"]
    assert ended and ended[0].data["stopReason"] == "end_turn", ended
    stderr = [e.data["line"] for e in evs if e.kind == "agent_stderr"]
    assert any(line.startswith("replay: ended: 0 divergences") for line in stderr), stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "empty"), ("hello\n", "line 1: not JSON"), ('{"acpRecording": 99}\n', "line 1: format version 99")],
)
def test_a_file_that_is_not_a_recording_is_a_config_error_at_replay_file(
        content: str, message: str, tmp_path: Path) -> None:
    file = tmp_path / "not-a-recording.jsonl"
    file.write_text(content)
    with acp_host.Host() as host:
        events = host.events()
        with pytest.raises(acp_host.ConfigError) as e:
            host.spawn(replay=acp_host.Replay(file))
        assert e.value.path == "replay.file" and e.value.code == "invalid_config"
        assert message in str(e.value), str(e.value)
        with pytest.raises(acp_host.TimeoutError):
            events.next(timeout=0.2)  # nothing was started: no event at all


def test_a_missing_file_and_no_file_are_config_errors_at_replay_file(tmp_path: Path) -> None:
    with acp_host.Host() as host:
        with pytest.raises(acp_host.ConfigError) as e:
            host.spawn(replay=tmp_path / "nope.acprec.jsonl")
        assert e.value.path == "replay.file"
        with pytest.raises(acp_host.ConfigError) as e:
            host.spawn(replay={"pace": "fast"})
        assert e.value.path == "replay.file" and "missing" in str(e.value)


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"command": "FILE"}, "command"),
        ({"command": ["my-agent", "--flag"]}, "command"),
        ({"env": {"A": "1"}}, "env"),
        ({"replay": {"file": "FILE", "pace": "slow"}}, "replay.pace"),
        ({"replay": {"file": "FILE", "wait": -1}}, "replay.waitMs"),
        ({"replay": {"file": "relative.acprec.jsonl"}}, "replay.file"),
        ({"replay": {"file": "FILE", "bogus": 1}}, "replay.bogus"),
        ({"replay": 7}, "replay"),
    ],
)
def test_replay_with_a_command_or_a_bad_value_is_a_config_error_at_the_cores_path(
        kwargs: Dict[str, Any], path: str, tmp_path: Path) -> None:
    file = record(tmp_path, "hello")

    def fill(v: Any) -> Any:
        if v == "FILE":
            return str(file)
        if isinstance(v, dict):
            return {k: fill(x) for k, x in v.items()}
        return v

    kwargs = {"replay": acp_host.Replay(file), **fill(kwargs)}
    with acp_host.Host() as host:
        with pytest.raises(acp_host.ConfigError) as e:
            host.spawn(**kwargs)
        assert e.value.path == path, str(e.value)


@pytest.mark.parametrize(
    ("replay", "path"),
    [
        (acp_host.Replay(123), "replay.file"),  # type: ignore[arg-type]
        (acp_host.Replay("FILE", pace="slow"), "replay.pace"),  # type: ignore[arg-type]
        (acp_host.Replay("FILE", wait=float("nan")), "replay.waitMs"),
        (acp_host.Replay("FILE", wait=0), "replay.waitMs"),
        (acp_host.Replay("FILE", ignore="params.prompt"), "replay.ignore"),  # type: ignore[arg-type]
        (acp_host.Replay("FILE", report="relative.json"), "replay.report"),
        ({1: "x"}, "replay.1"),
    ],
)
def test_a_replay_the_core_cannot_use_is_a_config_error_at_its_path(replay: Any, path: str, tmp_path: Path) -> None:
    file = tmp_path / "session.acprec.jsonl"
    file.write_text("")  # never read: the document is refused first
    if isinstance(replay, acp_host.Replay) and replay.file == "FILE":
        replay = dataclasses.replace(replay, file=file)
    with acp_host.Host() as host:
        with pytest.raises(acp_host.ConfigError) as e:
            host.spawn(replay=replay)
        assert e.value.path == path, str(e.value)


def test_replay_to_json_is_the_cores_form() -> None:
    r = acp_host.Replay("/rec.acprec.jsonl", pace="fast", wait=1.5, report=Path("/r.json"), ignore=("params.prompt",))
    assert r.to_json() == {"file": "/rec.acprec.jsonl", "pace": "fast", "waitMs": 1500, "report": "/r.json",
                           "ignore": ["params.prompt"]}
    assert acp_host.Replay("/f", wait=None).to_json()["waitMs"] is None

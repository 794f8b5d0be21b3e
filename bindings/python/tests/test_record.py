"""Recording a connection through the Python face (``Host(record=...)``, docs/RECORDING.md): the
file holds the header, the wire both ways and the events, and ends whole when shutdown returns;
a bad ``record`` document is the core's ``ConfigError``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import acp_host
from conftest import mock


def test_a_recorded_connection_is_in_its_file_when_shutdown_returns(tmp_path: Path) -> None:
    file = tmp_path / "py.acprec.jsonl"
    with acp_host.Host(record={"file": str(file)}) as host:
        agent = host.spawn(mock("default"))
        session = agent.new_session(cwd=str(tmp_path))
        assert session.prompt("hello").stop_reason == "end_turn"
        agent.shutdown()
        lines = [json.loads(line) for line in file.read_text().splitlines()]
    header = lines[0]
    assert header["acpRecording"] == 3 and header["protocolVersion"] == 1
    assert header["redacted"] is True
    methods = {line["msg"].get("method") for line in lines if "msg" in line}
    assert {"initialize", "session/new", "session/prompt", "session/update"} <= methods
    # An update's event is folded into the agent's line it was made from (format 3).
    kinds = ["session_update" if "msg" in line else line["event"]["kind"] for line in lines if "event" in line]
    assert "session_update" in kinds and kinds[-1] == "agent_exited"
    assert "end" in lines[-1] and lines[-1]["end"]["droppedLines"] == 0


@pytest.mark.parametrize(
    ("record", "path"),
    [({}, "record"), ({"dir": "relative"}, "record.dir"), ({"file": "FILE", "max_bytes": 1}, "record.maxBytes")],
)
def test_a_bad_record_document_is_a_config_error_at_its_path(record: dict, path: str, tmp_path: Path) -> None:
    # An absolute path as the OS spells one (`/x` is relative on Windows).
    record = {k: str(tmp_path / "x.jsonl") if v == "FILE" else v for k, v in record.items()}
    with pytest.raises(acp_host.ConfigError) as e:
        acp_host.Host(record=record)
    assert e.value.path == path

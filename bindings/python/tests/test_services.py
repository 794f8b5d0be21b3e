"""fs/* and terminal/* served by Python handlers (an editor's unsaved buffers, its own terminal),
behind the same roots and hard-deny rules as the built-in services."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import acp_host
from conftest import T, mock


class Buffers:
    def __init__(self, cwd: Path) -> None:
        self.files: Dict[str, str] = {f"{cwd}/input.txt": "line 1\nline 2\nline 3\n"}
        self.calls: List[Any] = []

    def read_text_file(self, session_id: str, path: str, line: Optional[int], limit: Optional[int]) -> str:
        self.calls.append(("read", session_id, path, line, limit))
        if path not in self.files:
            raise acp_host.ServiceError(f"no buffer for {path}", rpc_code=-32002, data={"path": path})
        lines = self.files[path].splitlines(keepends=True)
        start = (line or 1) - 1
        return "".join(lines[start:start + limit] if limit else lines[start:])

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await asyncio.sleep(0)
        self.calls.append(("write", session_id, path))
        self.files[path] = content


def chunks(events: List[acp_host.Event]) -> List[str]:
    return [e.data["content"]["text"] for e in events if e.update_kind == "agent_message_chunk"]


def test_fs_handler_serves_reads_and_writes(tmp_path: Path) -> None:
    cwd = tmp_path.resolve()
    buffers = Buffers(cwd)
    with acp_host.Host(policy="ask", fs=buffers) as host:
        stream = host.events()
        session = host.spawn(mock("fs-read-write")).new_session(cwd)
        assert session.prompt("go").stop_reason == "end_turn"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    text = chunks(evs)
    assert text[0] == "input.txt: line 1\nline 2\nline 3\n" and text[1] == "line 2: line 2\n"
    assert buffers.files[f"{cwd}/output.txt"] == "written by acp-mock-agent, turn 1\n"
    assert not (cwd / "output.txt").exists(), "the handler, not the disk, was written"
    assert [e.data["outcome"] for e in evs if e.kind in ("fs_read", "fs_write")] == ["ok", "ok", "ok"]
    assert buffers.calls[1] == ("read", session.id, f"{cwd}/input.txt", 2, 1)


def test_fs_handler_errors_reach_the_agent(tmp_path: Path) -> None:
    cwd = tmp_path.resolve()
    buffers = Buffers(cwd)
    buffers.files.clear()

    def broken_write(session_id: str, path: str, content: str) -> None:
        raise RuntimeError("disk on fire")

    buffers.write_text_file = broken_write  # type: ignore[method-assign,assignment]
    with acp_host.Host(policy="ask", fs=buffers) as host:
        stream = host.events()
        session = host.spawn(mock("fs-read-write")).new_session(cwd)
        session.prompt("go")
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    text = chunks(evs)
    assert text[0].startswith("cannot read input.txt: -32002 no buffer for"), text
    assert "disk on fire" in text[-1]
    reads = [e.data for e in evs if e.kind == "fs_read"]
    assert reads[0]["outcome"] == "not_found"


def test_fs_handler_is_not_asked_outside_the_roots_or_against_the_policy(tmp_path: Path) -> None:
    cwd = tmp_path.resolve()
    buffers = Buffers(cwd)
    with acp_host.Host(policy="read-only", fs=buffers) as host:  # read-only: fs writes are denied
        stream = host.events()
        session = host.spawn(mock("fs-read-write")).new_session(cwd)
        session.prompt("go")
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    writes = [e.data for e in evs if e.kind == "fs_write"]
    assert writes[0]["outcome"] == "denied"
    assert all(c[0] == "read" for c in buffers.calls), "the handler never saw the denied write"


def test_terminal_handler_async_host(tmp_path: Path) -> None:
    calls: List[Any] = []

    async def terminal(method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        calls.append((method, params.get("command")))
        if method == "terminal/create":
            return {"terminalId": f"ide-{len(calls)}"}
        if method == "terminal/output":
            return {"output": "hello from the IDE\n", "truncated": False, "exitStatus": {"exitCode": 0}}
        if method == "terminal/wait_for_exit":
            return {"exitCode": 0}
        return {}

    async def main() -> List[acp_host.Event]:
        async with acp_host.AsyncHost(policy="ask", terminal=terminal) as host:
            stream = host.events()
            agent = await host.spawn(mock("terminal"))
            session = await agent.new_session(tmp_path.resolve())
            assert (await session.prompt("go")).stop_reason == "end_turn"
            return await stream.collect_until(lambda e: e.kind == "turn_ended", T)

    evs = asyncio.run(main())
    methods = [m for m, _ in calls]
    assert methods[0] == "terminal/create" and "terminal/release" in methods and "terminal/kill" in methods
    created = [e.data for e in evs if e.kind == "terminal_created"]
    assert created[0]["outcome"] == "ok" and created[0]["terminalId"] == "ide-1"


def test_disabled_services_are_not_advertised() -> None:
    with acp_host.Host(policy="ask", fs=False, terminal=False) as host:
        stream = host.events()
        session = host.spawn(mock("fs-read-write")).new_session("/tmp")
        session.prompt("go")
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    assert not [e for e in evs if e.kind in ("fs_read", "fs_write")]
    with pytest.raises(acp_host.InvalidArgumentError):
        acp_host.Host(fs=object())  # type: ignore[arg-type]

"""Progress through the Python face: ``progress_events=True`` gives ``progress`` events for an
agent's spawn and handshake (an agent that never answers ``initialize`` is visible at once, a
program that cannot start fails visibly), typed as ``acp_host.Progress``; ``Registry.install(...,
progress=)`` reports the download and the extraction, in order, and goes on when the callback
raises."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import acp_host
from acp_host.registry import Registry
from conftest import MOCK, T, mock
from test_registry import current_platform, one_binary, tar_gz


def steps(events: List[Any]) -> List[Tuple[str, str]]:
    return [(e.data["phase"], e.data["stage"]) for e in events if e.kind == "progress"]


def handshake_done(e: Any) -> bool:
    return e.kind == "progress" and e.data["phase"] == "handshake" and e.data["stage"] == "done"


def test_spawn_and_handshake_report_progress_events() -> None:
    with acp_host.Host(progress_events=True) as host:
        stream = host.events()
        agent = host.spawn(mock())
        events = stream.collect_until(handshake_done, T)
    assert steps(events) == [("spawn", "started"), ("spawn", "done"), ("handshake", "started"),
                             ("handshake", "done")], steps(events)
    progress = [e for e in events if e.kind == "progress"]
    assert all(e.agent == agent.id and e.session is None for e in progress)
    typed = [acp_host.Progress.from_dict(e.data) for e in progress]
    assert typed[0].phase == "spawn" and typed[0].stage == "started"
    assert all(isinstance(p.elapsed_ms, int) and p.elapsed_ms >= 0 for p in typed)
    assert typed[-1].to_dict() == dict(progress[-1].data, bytes=progress[-1].data.get("bytes"),
                                       message=progress[-1].data.get("message"))


def test_without_the_option_there_are_no_progress_events() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        host.spawn(mock())
        host.close()
        events = stream.collect_until(lambda e: False, T)
    assert [e.kind for e in events if e.kind == "agent_ready"] and steps(events) == []


def test_an_agent_that_never_answers_initialize_is_visible_at_once() -> None:
    with acp_host.Host(progress_events=True) as host:
        stream = host.events()
        box: List[BaseException] = []

        def start() -> None:
            try:
                host.spawn(["sleep", "60"], timeout=T)
            except acp_host.AcpError as e:
                box.append(e)

        th = threading.Thread(target=start)
        th.start()
        events = stream.collect_until(lambda e: e.kind == "progress" and e.data["phase"] == "handshake", 5.0)
        assert steps(events)[-1] == ("handshake", "started"), "seen long before the spawn timeout"
    th.join(T)
    assert box, "closing the host ended the spawn"


def test_a_program_that_cannot_start_reports_a_failed_spawn(tmp_path: Path) -> None:
    with acp_host.Host(progress_events=True) as host:
        stream = host.events()
        with pytest.raises(acp_host.SpawnError):
            host.spawn([str(tmp_path / "no-such-agent")])
        events = stream.collect_until(lambda e: e.kind == "progress" and e.data["stage"] == "failed", T)
    failed = acp_host.Progress.from_dict(events[-1].data)
    assert (failed.phase, failed.stage) == ("spawn", "failed")
    assert failed.message and "no-such-agent" in failed.message


def test_the_asyncio_host_reports_progress_events() -> None:
    async def main() -> List[Tuple[str, str]]:
        async with acp_host.AsyncHost(progress_events=True) as host:
            stream = host.events()
            await host.spawn(mock())
            return steps(await stream.collect_until(handshake_done, T))

    assert asyncio.run(main())[-1] == ("handshake", "done")


def local_tool(tmp_path: Path, good: bool = True) -> Tuple[Registry, bytes, Path]:
    data = tar_gz({"agent/run.sh": b"#!/bin/sh\nexec " + MOCK.encode() + b' "$@"\n'}, mode=0o755)
    archive = tmp_path / "tool.tar.gz"
    archive.write_bytes(data)
    digest = hashlib.sha256(data if good else b"other").hexdigest()
    reg = one_binary(archive.as_uri(), digest, "./agent/run.sh", [], {}, current_platform())
    return reg, data, archive


def test_install_reports_download_and_extraction_in_order(tmp_path: Path) -> None:
    reg, data, archive = local_tool(tmp_path)
    seen: List[acp_host.Progress] = []
    threads: List[int] = []

    def progress(p: acp_host.Progress) -> None:
        seen.append(p)
        threads.append(threading.get_ident())

    installed = reg.install("tool", tmp_path / "cache", progress=progress)
    assert not installed.already_installed
    assert [(p.phase, p.stage) for p in seen] == [("download", "started"), ("download", "done"),
                                                  ("extract", "started"), ("extract", "done")]
    assert seen[0].message == archive.as_uri()
    assert seen[1].bytes == len(data)
    assert all(isinstance(p, acp_host.Progress) and p.elapsed_ms >= 0 for p in seen)
    assert threading.get_ident() not in threads, "called on the install thread"
    # Installed already: nothing is fetched, nothing reported.
    seen.clear()
    assert reg.install("tool", tmp_path / "cache", progress=progress).already_installed
    assert seen == []


def test_a_failed_download_is_reported_before_the_error(tmp_path: Path) -> None:
    reg, _, _ = local_tool(tmp_path, good=False)
    seen: List[acp_host.Progress] = []
    with pytest.raises(acp_host.ConfigError) as e:
        reg.install("tool", tmp_path / "cache", progress=seen.append)
    assert [(p.phase, p.stage) for p in seen] == [("download", "started"), ("download", "failed")]
    assert seen[-1].message and "sha256" in seen[-1].message and "sha256" in str(e.value)


def test_a_raising_progress_callback_does_not_stop_the_install(tmp_path: Path) -> None:
    reg, _, _ = local_tool(tmp_path)
    calls: List[str] = []

    def progress(p: acp_host.Progress) -> None:
        calls.append(p.stage)
        raise RuntimeError("ui bug")

    installed = reg.install("tool", tmp_path / "cache", progress=progress)
    assert Path(installed.cmd).exists() and len(calls) == 4


def test_a_progress_that_is_not_callable_is_refused(tmp_path: Path) -> None:
    reg, _, _ = local_tool(tmp_path)
    with pytest.raises(acp_host.InvalidArgumentError, match="progress must be a callable"):
        reg.install("tool", tmp_path / "cache", progress="loud")  # type: ignore[arg-type]
    assert not (tmp_path / "cache").exists()

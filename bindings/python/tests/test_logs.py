"""The log hook through the Python face: with ``log_level`` the core's records reach the standard
``logging`` loggers ``acp_host.<target>`` on the host's ``acp-host-log`` thread, in order, with
their fields; without it nothing is made. A handler that falls 1024 records behind loses records
(the host never waits for it) and is told how many; a handler that raises loses that record only
and nothing is printed. A permission or elicitation handler that raises gives a ``reason`` with
the exception's type, message and traceback (events and log)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

import acp_host
from conftest import MOCK, T, mock

LOGGER = logging.getLogger("acp_host")


class Capture(logging.Handler):
    """Keeps every record and the thread it came on."""

    def __init__(self) -> None:
        super().__init__(level=1)
        self.records: List[logging.LogRecord] = []
        self.threads: List[str] = []
        self.idents: List[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.threads.append(threading.current_thread().name)
        self.idents.append(threading.get_ident())

    def named(self, name: str) -> List[logging.LogRecord]:
        return [r for r in self.records if r.name == name]

    def messages(self) -> List[str]:
        return [f"{r.name}: {r.getMessage()}" for r in self.records]


@pytest.fixture
def captured() -> Iterator[Capture]:
    handler = Capture()
    level = LOGGER.level
    LOGGER.setLevel(1)
    LOGGER.addHandler(handler)
    try:
        yield handler
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)


def log_threads() -> int:
    """Threads of this process named ``acp-host-log`` (the OS name)."""
    n = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                n += f.read().strip() == "acp-host-log"
        except OSError:
            pass
    return n


def test_the_package_installs_a_null_handler_and_the_trace_level() -> None:
    assert any(isinstance(h, logging.NullHandler) for h in LOGGER.handlers)
    assert acp_host.TRACE == 5 and logging.getLevelName(5) == "TRACE"


def test_without_log_level_nothing_is_logged_and_no_thread_started(captured: Capture, tmp_path: Path) -> None:
    before = log_threads()
    with acp_host.Host() as host:
        assert log_threads() == before, "no log thread without log_level"
        agent = host.spawn(mock())
        agent.new_session(tmp_path).prompt("hi")
        assert host.dropped_log_records == 0
    assert captured.records == []


def test_a_bad_log_level_is_a_config_error() -> None:
    with pytest.raises(acp_host.ConfigError) as e:
        acp_host.Host(log_level="loud")  # type: ignore[arg-type]
    assert e.value.data["path"] == "logLevel"


def test_records_reach_logging_in_order_with_their_fields(captured: Capture, tmp_path: Path) -> None:
    t0 = time.time()
    with acp_host.Host(log_level="info") as host:
        agent = host.spawn(mock())
        session = agent.new_session(tmp_path)
        session.prompt("hi")
        agent_id = agent.id
    # Closing delivered the shutdown's records: no waiting here.
    names = [r.name for r in captured.records]
    assert "acp_host.spawn" in names and "acp_host.handshake" in names, captured.messages()
    exits = captured.named("acp_host.transport")
    assert exits and "exit" in exits[-1].getMessage(), captured.messages()
    spawn = captured.named("acp_host.spawn")
    assert [r.getMessage().split(" after ")[0] for r in spawn[:2]] == ["spawn started", "spawn done"]
    assert names.index("acp_host.spawn") < names.index("acp_host.handshake") < names.index("acp_host.transport")
    for r in captured.records:
        assert r.levelno >= logging.INFO and r.levelname in ("INFO", "WARNING", "ERROR")
        assert r.acp_agent == agent_id  # type: ignore[attr-defined]
        assert r.acp_target == r.name.split(".", 1)[1]  # type: ignore[attr-defined]
        assert hasattr(r, "acp_session")
        assert t0 - 1 <= r.created <= time.time() + 1
    # Never the caller's thread, never a host thread: the host's own log thread.
    assert set(captured.threads) == {"acp-host-log"}
    assert threading.get_ident() not in captured.idents


def test_the_level_filters_in_the_core(captured: Capture, tmp_path: Path) -> None:
    with acp_host.Host(log_level="warn", on_permission=lambda req: "Allow once") as host:
        agent = host.spawn(mock("permission-write"))
        agent.new_session(tmp_path.resolve()).prompt("write")
    assert captured.records, "the denied permission is a warn record"
    assert all(r.levelno >= logging.WARNING for r in captured.records), captured.messages()
    assert not captured.named("acp_host.spawn")


def test_trace_and_debug_records_use_logging_levels(captured: Capture, tmp_path: Path) -> None:
    scenario = tmp_path / "noise.json"
    scenario.write_text(json.dumps({"prompts": [[{"raw": "not json"}]]}))
    with acp_host.Host(log_level="trace") as host:
        agent = host.spawn([MOCK, "--scenario", str(scenario)])
        agent.new_session(tmp_path).prompt("hi")
    noise = captured.named("acp_host.protocol")
    assert noise and noise[0].levelno == logging.DEBUG and noise[0].levelname == "DEBUG", captured.messages()


def test_the_application_logger_level_still_applies(captured: Capture, tmp_path: Path) -> None:
    logging.getLogger("acp_host.spawn").setLevel(logging.WARNING)
    try:
        with acp_host.Host(log_level="info") as host:
            host.spawn(mock())
    finally:
        logging.getLogger("acp_host.spawn").setLevel(logging.NOTSET)
    assert not captured.named("acp_host.spawn") and captured.named("acp_host.handshake")


def test_the_asyncio_host_logs_off_the_loop(captured: Capture, tmp_path: Path) -> None:
    async def main() -> int:
        async with acp_host.AsyncHost(log_level="debug") as host:
            agent = await host.spawn(mock())
            session = await agent.new_session(tmp_path)
            await session.prompt("hi")
            return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert captured.named("acp_host.spawn") and captured.named("acp_host.transport"), captured.messages()
    assert loop_thread not in captured.idents and set(captured.threads) == {"acp-host-log"}


def noise_scenario(tmp_path: Path, n: int) -> Path:
    """A turn that writes ``n`` non-JSON lines of 1..n bytes (one debug record each, numbered by
    its size), then ends."""
    path = tmp_path / "noise.json"
    path.write_text(json.dumps({"prompts": [[{"raw": "x" * (i + 1)} for i in range(n)]]}))
    return path


def line_size(record: logging.LogRecord) -> Optional[int]:
    msg = record.getMessage()
    if record.name == "acp_host.protocol" and msg.startswith("a non-JSON line of "):
        return int(msg.split()[4])
    return None


def test_a_slow_handler_loses_records_never_blocks_the_host_and_is_told(captured: Capture, tmp_path: Path) -> None:
    n = 3000
    release = threading.Event()
    held: List[int] = []

    class Stuck(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if line_size(record) is not None and not held:
                held.append(1)
                release.wait(T)  # stuck until the turn is over

    stuck = Stuck()
    LOGGER.addHandler(stuck)
    try:
        with acp_host.Host(log_level="debug") as host:
            agent = host.spawn([MOCK, "--scenario", str(noise_scenario(tmp_path, n))])
            session = agent.new_session(tmp_path)
            t0 = time.monotonic()
            assert session.prompt("noise").stop_reason == "end_turn"
            took = time.monotonic() - t0
            release.set()
            lost_at_turn_end = host.dropped_log_records
            # Let the handler drain what was queued before the host's shutdown logs more: on a
            # loaded machine the drain takes a while, and records logged into the full queue
            # meanwhile would be dropped (and told) too.
            deadline = time.monotonic() + T
            while (sum(1 for r in captured.records if line_size(r) is not None) + lost_at_turn_end < n
                   and time.monotonic() < deadline):
                time.sleep(0.01)
        lost = host.dropped_log_records
    finally:
        release.set()
        LOGGER.removeHandler(stuck)
    assert took < T / 2, f"the turn waited for the log handler ({took:.1f} s)"
    assert lost == lost_at_turn_end and lost >= n - 1024, lost
    sizes = [s for s in map(line_size, captured.records) if s is not None]
    assert sizes == sorted(sizes) and sizes[0] == 1, "in order"
    assert len(sizes) + lost >= n and len(sizes) <= 1024
    # Told once, right after the record the handler was stuck on, with the count.
    notices = captured.named("acp_host.log")
    assert len(notices) == 1, captured.messages()[-5:]
    assert notices[0].levelno == logging.WARNING
    assert notices[0].getMessage().startswith(f"{lost} log records dropped"), notices[0].getMessage()
    first = next(i for i, r in enumerate(captured.records) if line_size(r) == 1)
    assert captured.records[first + 1] is notices[0]


def test_a_raising_handler_loses_that_record_only_and_nothing_is_printed(
        captured: Capture, tmp_path: Path, capfd: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[str] = []

    class Raising(logging.Handler):
        def handle(self, record: logging.LogRecord) -> bool:  # bypasses handleError
            calls.append(record.getMessage())
            if len(calls) == 1:
                raise RuntimeError("handler bug")
            return True

    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("disk gone")


    class FilterRaising(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if record.name == "acp_host.handshake":
                raise KeyError("filter bug")
            return True

    monkeypatch.setattr(logging, "raiseExceptions", False)
    # A stdlib handler whose emit fails calls its handleError: silent without raiseExceptions.
    raising, emit_raising, flt = Raising(), logging.StreamHandler(Broken()), FilterRaising()
    # The capture comes after the raising handler: it loses the record that raised.
    LOGGER.removeHandler(captured)
    for h in (raising, emit_raising, captured):
        LOGGER.addHandler(h)
    logging.getLogger("acp_host.handshake").addFilter(flt)
    try:
        with acp_host.Host(log_level="info") as host:
            host.spawn(mock())
    finally:
        for h in (raising, emit_raising):
            LOGGER.removeHandler(h)
        logging.getLogger("acp_host.handshake").removeFilter(flt)
    assert len(calls) >= 3, calls
    # The first record (spawn started) is lost to every handler after the raising one; the next
    # ones arrive; the handshake's records are lost to the raising filter; the shutdown's arrive.
    assert [r.getMessage() for r in captured.records][0] == calls[1]
    assert not captured.named("acp_host.handshake")
    assert captured.named("acp_host.transport")
    out, err = capfd.readouterr()
    assert (out, err) == ("", ""), (out, err)


def test_closing_from_a_handler_does_not_hang(captured: Capture) -> None:
    host = acp_host.Host(log_level="info")
    asked: List[str] = []
    done = threading.Event()

    class Closer(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.name == "acp_host.handshake" and not asked:
                asked.append(record.getMessage())
                host.close()  # on the log thread: close must not wait for it
                done.set()

    closer = Closer()
    LOGGER.addHandler(closer)
    try:
        try:
            host.spawn(mock())
        except acp_host.AcpError:
            pass  # closed during the spawn
        assert done.wait(T), "close() called from a logging handler returned"
        assert host.closed
    finally:
        LOGGER.removeHandler(closer)
        host.close()


def test_records_of_a_host_closed_at_interpreter_exit_are_delivered(tmp_path: Path) -> None:
    code = (
        "import logging, sys, acp_host\n"
        "logging.basicConfig(stream=sys.stdout, level=logging.INFO, format='%(name)s %(threadName)s %(message)s')\n"
        f"host = acp_host.Host(log_level='info')\n"
        f"host.spawn([{MOCK!r}])\n"
        # One write: print() writes the text and the newline apart, and the log thread's records
        # (the same stream) can come between them.
        "sys.stdout.write('spawned\\n'); sys.stdout.flush()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=T)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert "spawned" in lines
    after = lines[lines.index("spawned") + 1:]
    assert any(line.startswith("acp_host.transport acp-host-log ") for line in after), out.stdout


# ------------------------------------------------------------------ handler failure reasons

def _deep_failure(req: acp_host.PermissionRequest) -> None:
    raise ValueError(f"no answer for {req.title}")


def raising_handler(req: acp_host.PermissionRequest) -> Optional[str]:
    _deep_failure(req)
    return None


async def raising_coroutine(req: acp_host.PermissionRequest) -> Optional[str]:
    await asyncio.sleep(0)
    _deep_failure(req)
    return None


def permission_run(tmp_path: Path, captured: Capture, handler: Any) -> Dict[str, Any]:
    with acp_host.Host(on_permission=handler, log_level="warn") as host:
        stream = host.events()
        agent = host.spawn(mock("permission-write"))
        session = agent.new_session(tmp_path.resolve())
        assert session.prompt("write").stop_reason == "end_turn"
        events = stream.collect_until(lambda e: e.kind == "permission_resolved", T)
        session_id = session.id
    resolved = events[-1].data
    assert resolved["decidedBy"] == "invalid_answer", resolved
    assert not (tmp_path / "hello.txt").exists(), "denied"
    logged = captured.named("acp_host.permission")
    assert logged and logged[0].levelno == logging.WARNING
    assert logged[0].acp_session == session_id  # type: ignore[attr-defined]
    assert resolved["reason"] in logged[0].getMessage(), "the log says why, as the event does"
    return resolved  # type: ignore[no-any-return]


@pytest.mark.parametrize("handler", [raising_handler, raising_coroutine], ids=["function", "coroutine"])
def test_a_raising_permission_handler_gives_its_exception_and_traceback(
        captured: Capture, tmp_path: Path, handler: Any) -> None:
    reason = permission_run(tmp_path, captured, handler)["reason"]
    assert "ValueError: no answer for Edit hello.txt" in reason, reason
    assert "Traceback (most recent call last)" in reason, reason
    assert f"in {handler.__name__}" in reason and "in _deep_failure" in reason, reason
    assert "test_logs.py" in reason


def test_an_option_name_instead_of_its_id_gives_a_reason(captured: Capture, tmp_path: Path) -> None:
    reason = permission_run(tmp_path, captured, lambda req: "Allow once")["reason"]
    assert "`Allow once` is not one of the offered option ids" in reason, reason
    assert "allow-once" in reason


def test_a_raising_permission_handler_on_the_asyncio_host(tmp_path: Path) -> None:
    async def main() -> Dict[str, Any]:
        async with acp_host.AsyncHost(on_permission=raising_coroutine) as host:
            stream = host.events()
            agent = await host.spawn(mock("permission-write"))
            session = await agent.new_session(tmp_path.resolve())
            await asyncio.wait_for(session.prompt("write"), T)
            events = await stream.collect_until(lambda e: e.kind == "permission_resolved", T)
            return events[-1].data  # type: ignore[no-any-return]

    resolved = asyncio.run(main())
    assert resolved["decidedBy"] == "invalid_answer"
    assert "ValueError: no answer for Edit hello.txt" in resolved["reason"]
    assert "Traceback (most recent call last)" in resolved["reason"] and "in _deep_failure" in resolved["reason"]


def test_a_raising_elicitation_handler_gives_its_exception_and_traceback(captured: Capture, tmp_path: Path) -> None:
    def on_elicitation(req: acp_host.ElicitationRequest) -> acp_host.ElicitationAnswer:
        raise LookupError(f"no form for {req.mode}")

    with acp_host.Host(on_elicitation=on_elicitation, log_level="warn") as host:
        stream = host.events()
        agent = host.spawn(mock("elicitation"))
        session = agent.new_session(tmp_path)
        session.prompt("deploy")
        events = stream.collect_until(lambda e: e.kind == "turn_ended", T)
    resolved = [e.data for e in events if e.kind == "elicitation_resolved"]
    assert len(resolved) == 2 and all(r["decidedBy"] == "invalid_answer" for r in resolved), resolved
    reason = resolved[0]["reason"]
    assert reason.startswith("elicitation handler raised LookupError: no form for form\nTraceback (most recent call last):\n")
    assert "LookupError: no form for form" in reason and "Traceback (most recent call last)" in reason, reason
    assert "in on_elicitation" in reason and "_bridge.py" not in reason, "the handler's frames only"
    assert captured.named("acp_host.elicitation"), captured.messages()

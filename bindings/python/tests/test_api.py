"""The Python API as a script author uses it: sync and asyncio twins, events, sessions, threads,
Ctrl-C and interpreter exit."""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import acp_host
from conftest import MOCK, ROOT, T, agent_pid, mock, python_child, wait_gone

ENVELOPE = {"seq", "at", "agent", "session", "turn", "kind", "replay", "data"}
AT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def test_events_carry_exactly_the_documented_envelope() -> None:
    with acp_host.Host(on_permission=lambda r: r.option_id("allow_once")) as host:
        stream = host.events()
        agent = host.spawn(mock())
        agent.new_session("/tmp").prompt("hello")
        agent.shutdown()
        evs = stream.collect_until(lambda e: e.kind == "agent_exited", T)
    assert [e.seq for e in evs] == list(range(1, len(evs) + 1)), "from 1, without gaps"
    kinds = {e.kind for e in evs}
    assert {"agent_ready", "session_opened", "turn_started", "session_update", "permission_requested",
            "permission_resolved", "fs_write", "terminal_created", "turn_ended", "session_closed",
            "agent_exited"} <= kinds
    for ev in evs:
        d = ev.to_dict()
        assert set(d) <= ENVELOPE and {"seq", "at", "agent", "kind", "replay", "data"} <= set(d)
        assert json.loads(ev.to_json()) == d
        assert AT.match(ev.at), ev.at
        assert d["at"] == ev.at and d["seq"] == ev.seq and d["agent"] == ev.agent == 1
        assert d.get("session") == ev.session and d.get("turn") == ev.turn
        assert d["kind"] == ev.kind and d["replay"] is ev.replay is False
        assert d["data"] == ev.data == json.loads(ev.data_json)
        assert ev == ev and hash(ev) == hash(ev)
        assert ev.kind in repr(ev)
    update = next(e for e in evs if e.kind == "session_update")
    assert update.update_kind == update.data["sessionUpdate"] and update.turn == 1
    assert next(e for e in evs if e.kind == "turn_started").data == {"prompt": [{"type": "text", "text": "hello"}]}
    assert isinstance(next(e for e in evs if e.kind == "agent_ready").data["pid"], int)


def test_session_and_agent_streams_filter_and_end() -> None:
    with acp_host.Host() as host:
        a1 = host.spawn(mock())
        a2 = host.spawn(mock())
        s1 = a1.new_session("/tmp")
        s2 = a2.new_session("/tmp")
        all_events = host.events()
        e1 = s1.events()
        agent2 = a2.events()
        s1.prompt("one")
        s2.prompt("two")
        s1.close()
        a2.shutdown()
        got1 = list(e1)  # ends after session_closed
        assert got1[-1].kind == "session_closed" and {e.session for e in got1} == {s1.id}
        assert all(e.agent == a1.id for e in got1)
        got2 = list(agent2)  # ends after agent_exited
        assert got2[-1].kind == "agent_exited" and {e.agent for e in got2} == {a2.id}
        everything = all_events.collect_until(lambda e: e.kind == "agent_exited", T)
        want = [e.seq for e in everything if e.agent == a1.id and e.session == s1.id]
        # The session's stream began at its session_opened (before `all_events` existed).
        assert got1[0].kind == "session_opened"
        assert [e.seq for e in got1][-len(want):] == want


def test_sessions_state_modes_config_and_content() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock())
        assert agent.name == "acp-mock-agent" and agent.capabilities["loadSession"] is True
        session = agent.new_session(Path("/tmp"))
        st = session.state
        assert st.session_id == session.id and st.open and st.cwd == "/tmp" and st.current_mode_id == "ask"
        session.set_mode("code")
        assert session.state.current_mode_id == "code"
        opts = session.set_config_option("model", "mock-large")
        assert next(o for o in opts if o["id"] == "model")["currentValue"] == "mock-large"
        with pytest.raises(acp_host.InvalidArgumentError):
            session.set_mode("nope")
        r = session.prompt(["Look at this", {"type": "resource_link", "uri": "file:///tmp/x", "name": "x"}])
        assert r.stop_reason == "end_turn" and r.turn == 1 and r.raw["stopReason"] == "end_turn"
        st = session.state
        assert st.tool_calls and st.tool_calls[0]["status"] == "failed"  # deny-all: the edit was refused
        assert st.usage == {"used": 1234, "size": 200000, "cost": {"amount": 0.01, "currency": "USD"}}
        assert st.to_dict()["session_id"] == session.id
        with pytest.raises(acp_host.UnsupportedError):
            session.prompt({"type": "audio", "data": "", "mimeType": "audio/wav"})
        with pytest.raises(acp_host.InvalidArgumentError):
            session.prompt([{"type": "hologram"}])
        assert agent.session(session.id) is not None and agent.session("nope") is None
        session.close()
        assert not session.state.open


def test_load_resume_list_close_delete() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(mock("load-replay"))
        session = agent.load_session("sess_old", "/tmp")
        evs = stream.collect_until(lambda e: e.kind == "session_opened", T)
        assert evs[-1].data["origin"] == "load"
        assert session.id == "sess_old"
        with pytest.raises(acp_host.AgentError) as ei:
            agent.load_session("sess_missing", "/tmp")
        assert ei.value.rpc_code == -32002
    with acp_host.Host() as host:
        agent = host.spawn(mock("list-resume-close-delete"))
        page = agent.list_sessions()
        assert len(page["sessions"]) == 2 and page["nextCursor"]
        page2 = agent.list_sessions(cursor=page["nextCursor"])
        assert page2["sessions"][0]["sessionId"] != page["sessions"][0]["sessionId"]
        s = agent.resume_session("sess_a", "/tmp")
        assert s.state.open
        agent.close_session("sess_a")
        agent.delete_session("sess_b")
    with acp_host.Host() as host:
        agent = host.spawn(mock("minimal"))
        with pytest.raises(acp_host.UnsupportedError):
            agent.list_sessions()
        with pytest.raises(acp_host.UnsupportedError):
            agent.load_session("x", "/tmp")


def test_replayed_updates_are_flagged() -> None:
    async def main() -> List[acp_host.Event]:
        async with acp_host.AsyncHost() as host:
            stream = host.events()
            agent = await host.spawn(mock("load-replay"))
            await agent.load_session("sess_old", "/tmp")
            await agent.shutdown()
            return await stream.collect_until(lambda e: e.kind == "agent_exited", T)

    evs = asyncio.run(main())
    replayed = [e for e in evs if e.kind == "session_update"]
    assert len(replayed) == 8 and all(e.replay for e in replayed)


def test_threads_share_one_host() -> None:
    """Several threads spawn, prompt and read state on one host at the same time."""
    errors: List[BaseException] = []
    results: Dict[int, List[str]] = {}
    with acp_host.Host() as host:
        shared = host.spawn(mock())
        sessions = [shared.new_session("/tmp") for _ in range(8)]  # one turn per session at a time

        def worker(i: int) -> None:
            try:
                own = host.spawn(mock())
                s = own.new_session("/tmp")
                stops = [s.prompt(f"hi {i}").stop_reason, sessions[i].prompt(f"shared {i}").stop_reason]
                stops.append(s.prompt("again").stop_reason)
                _ = s.state, sessions[i].state
                own.shutdown()
                results[i] = stops
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(T)
        assert not errors, errors
        assert all(v == ["end_turn"] * 3 for v in results.values()) and len(results) == 8


def test_a_second_turn_on_a_busy_session_is_refused() -> None:
    with acp_host.Host() as host:
        session = host.spawn(mock("wait-for-cancel")).new_session("/tmp")
        stream = session.events()
        th = threading.Thread(target=session.prompt, args=("wait",))
        th.start()
        stream.collect_until(lambda e: e.kind == "turn_started", T)
        with pytest.raises(acp_host.BusyError):
            session.prompt("again")
        session.cancel()
        th.join(T)
        assert not th.is_alive()


def test_the_gil_is_released_while_rust_waits() -> None:
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    with acp_host.Host(prompt_timeout=0.5) as host:
        session = host.spawn(mock("hang")).new_session("/tmp")
        t = threading.Thread(target=spin)
        t.start()
        with pytest.raises(acp_host.TimeoutError):
            session.prompt("go")
        stop.set()
        t.join()
    assert ticks > 100, f"another thread ran only {ticks} times during a 0.5 s blocking call"


def test_async_concurrent_sessions_and_agents() -> None:
    async def main() -> List[str]:
        async with acp_host.AsyncHost(policy="read-only") as host:
            agents = await asyncio.gather(*(host.spawn(mock()) for _ in range(3)))
            sessions = await asyncio.gather(*(a.new_session("/tmp") for a in agents for _ in range(2)))
            results = await asyncio.gather(*(s.prompt(f"hello {i}") for i, s in enumerate(sessions)))
            assert len({s.id for s in sessions}) == 2 and len({(s.agent.id, s.id) for s in sessions}) == 6
            return [r.stop_reason for r in results]

    assert asyncio.run(main()) == ["end_turn"] * 6


def test_async_task_cancellation_cancels_the_turn() -> None:
    async def main() -> List[acp_host.Event]:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock("wait-for-cancel"))
            session = await agent.new_session("/tmp")
            stream = session.events()
            task = asyncio.ensure_future(session.prompt("wait"))
            await stream.collect_until(lambda e: e.update_kind == "tool_call", T)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await stream.collect_until(lambda e: e.kind == "turn_ended", T)

    evs = asyncio.run(main())
    assert evs[-1].data["stopReason"] == "cancelled"


def test_async_streams_end_and_support_async_with() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock())
            async with agent.events() as evs:
                session = await agent.new_session("/tmp")
                await session.prompt("hi")
                await agent.shutdown()
                kinds = [e.kind async for e in evs]
            # A stream gets everything reported after it was created; agent_ready may still have
            # been on its way through the host when it was (spawn returned just before).
            assert kinds[0] in ("agent_ready", "session_opened") and kinds[-1] == "agent_exited"
            assert kinds.index("session_opened") <= 1
            # The first host stream has the host's events from its start; later ones from now on.
            first = await host.events().next(timeout=T)
            assert first is not None and first.kind == "agent_ready"
            with pytest.raises(acp_host.TimeoutError):
                await host.events().next(timeout=0.05)
        assert host.closed

    asyncio.run(main())


def test_agent_context_manager_and_exit_info() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        with host.spawn(mock(), env={"ACP_MOCK_VERBOSE": None}, cwd="/tmp") as agent:
            pid = agent_pid(stream.collect_until(lambda e: e.kind == "agent_ready", T))
            assert agent.exit_info is None
        assert agent.exit_info is not None and agent.exit_info.exit_code == 0
        assert wait_gone(pid)


def test_error_tree() -> None:
    assert issubclass(acp_host.TimeoutError, builtins.TimeoutError)
    assert issubclass(acp_host.InvalidArgumentError, ValueError)
    assert issubclass(acp_host.NotFoundError, LookupError)
    assert issubclass(acp_host.SpawnError, OSError)
    for name in acp_host.__all__:
        obj = getattr(acp_host, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, acp_host.AcpError)
            e = obj("boom", data={"x": 1})
            assert str(e) == "boom" and e.data == {"x": 1} and isinstance(e.code, str)
    codes = {getattr(acp_host, n).code for n in acp_host.__all__
             if isinstance(getattr(acp_host, n), type) and issubclass(getattr(acp_host, n), acp_host.AcpError)}
    assert {"agent_exited", "timeout", "unsupported", "protocol", "agent_error", "auth_required",
            "version_unsupported", "invalid_argument", "spawn_failed", "io", "closed", "cancelled", "busy",
            "not_found", "already_resolved", "events_stalled"} <= codes


CTRL_C_CHILD = textwrap.dedent("""
    import sys, threading, json
    import acp_host
    with acp_host.Host() as host:
        session = host.spawn([sys.argv[1], "--scenario", "wait-for-cancel"]).new_session("/tmp")
        stream = session.events()
        def ready():
            stream.collect_until(lambda e: e.update_kind == "tool_call", 20)
            print("READY", flush=True)
        threading.Thread(target=ready, daemon=True).start()
        try:
            session.prompt("wait")
            print("NOT INTERRUPTED", flush=True)
        except KeyboardInterrupt:
            ended = stream.collect_until(lambda e: e.kind == "turn_ended", 20)[-1]
            print("INTERRUPTED", json.dumps(ended.data), flush=True)
""")


def test_ctrl_c_during_a_prompt_cancels_the_turn_cleanly() -> None:
    child = subprocess.Popen(python_child(CTRL_C_CHILD, MOCK), stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        started = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=T)
        assert time.monotonic() - started < 5
    finally:
        if child.poll() is None:
            child.kill()
    assert out.startswith("INTERRUPTED"), out
    assert json.loads(out.split(" ", 1)[1]) == {"stopReason": "cancelled"}
    assert child.returncode == 0


SIGINT_PROBE = ("import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
                "signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))")
# Starts its arguments with SIGINT ignored and blocked, as a script's background job, nohup or
# some CI runners do.
SIGINT_IGNORED = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                  "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}); os.execv(sys.executable, sys.argv[1:])")


def test_ctrl_c_children_get_pythons_ctrl_c_whatever_this_process_inherited() -> None:
    def probe(argv: List[str]) -> List[str]:
        proc = subprocess.run([sys.executable, "-c", SIGINT_IGNORED, *argv], capture_output=True, text=True,
                              timeout=T)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert probe([sys.executable, "-c", SIGINT_PROBE]) == ["False", "True"], "the launcher simulates it"
    assert probe(python_child(SIGINT_PROBE)) == ["True", "False"]


IGNORED_CTRL_C_CHILD = textwrap.dedent("""
    import signal, sys
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import acp_host
    with acp_host.Host(prompt_timeout=1.0) as host:
        session = host.spawn([sys.argv[1], "--scenario", "hang"]).new_session("/tmp")
        print("READY", flush=True)
        try:
            session.prompt("wait")
        except acp_host.TimeoutError:
            print("TIMEOUT", signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True)
""")


def test_an_embedder_that_ignores_sigint_is_not_interrupted() -> None:
    """SIGINT ignored by the script: a prompt runs on (to its timeout here), nothing re-enables it."""
    child = subprocess.Popen([sys.executable, "-c", IGNORED_CTRL_C_CHILD, MOCK], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        time.sleep(0.2)
        child.send_signal(signal.SIGINT)
        time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=T)
    finally:
        if child.poll() is None:
            child.kill()
    assert out.split() == ["TIMEOUT", "True"] and child.returncode == 0, (out, err)


EXIT_CHILD = textwrap.dedent("""
    import sys, acp_host
    host = acp_host.Host(shutdown_grace=0.2)
    stream = host.events()
    agent = host.spawn([sys.argv[1], "--scenario", "ignore-stdin-eof"])
    pid = stream.collect_until(lambda e: e.kind == "agent_ready", 20)[-1].data["pid"]
    print(pid, flush=True)
    if sys.argv[2] == "raise":
        raise SystemExit("leaving without closing")
""")


@pytest.mark.parametrize("how", ["return", "raise"])
def test_interpreter_exit_kills_the_agents(how: str) -> None:
    out = subprocess.run([sys.executable, "-c", EXIT_CHILD, MOCK, how], capture_output=True, text=True, timeout=T)
    pid = int(out.stdout.strip())
    assert wait_gone(pid, 5), f"agent {pid} outlived the interpreter"


def test_pip_metadata_and_typing_files_ship() -> None:
    pkg = Path(acp_host.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_native.pyi").exists()
    assert acp_host.__version__ and acp_host.PROTOCOL_VERSION == 1


def test_example_script_runs(tmp_path: Path) -> None:
    out = tmp_path / "summaries"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "orchestrate.py"), "--out", str(out),
         "--sessions", "3", "--", MOCK],
        capture_output=True, text=True, timeout=60,
    )
    files = sorted(out.glob("*.json"))
    assert proc.returncode == 0, proc.stderr + "".join(f.read_text() for f in files)
    assert len(files) == 3
    for f in files:
        summary: Dict[str, Any] = json.loads(f.read_text())
        assert summary["stop_reason"] == "end_turn"
        assert summary["text"] and summary["permissions"], summary
        assert all(p["decidedBy"] == "rule" for p in summary["permissions"])
        assert summary["events"] > 0 and summary["error"] is None


def test_closing_a_stream_ends_a_reader_blocked_in_it() -> None:
    with acp_host.Host() as host:
        stream = host.events()
        got: List[Any] = []
        th = threading.Thread(target=lambda: got.extend(stream))
        th.start()
        time.sleep(0.1)
        stream.close()
        th.join(T)
        assert not th.is_alive() and got == []

    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            stream = host.events()

            async def read() -> List[Any]:
                return [ev async for ev in stream]

            task = asyncio.ensure_future(read())
            await asyncio.sleep(0.1)
            stream.close()
            assert await asyncio.wait_for(task, T) == []

    asyncio.run(main())


ASYNC_CTRL_C_CHILD = textwrap.dedent("""
    import asyncio, sys, json
    import acp_host

    async def main():
        async with acp_host.AsyncHost() as host:
            stream = host.events()
            agent = await host.spawn([sys.argv[1], "--scenario", "wait-for-cancel"])
            session = await agent.new_session("/tmp")
            task = asyncio.ensure_future(session.prompt("wait"))
            evs = await stream.collect_until(lambda e: e.update_kind == "tool_call", 20)
            print(json.dumps({"pid": evs[0].data["pid"]}), flush=True)
            try:
                await task
            finally:
                # Cancelled by Ctrl-C: the turn ends as cancelled before the host closes.
                ended = await stream.collect_until(lambda e: e.kind == "turn_ended", 20)
                print(json.dumps(ended[-1].data), flush=True)

    asyncio.run(main())
""")


def test_ctrl_c_in_asyncio_cancels_the_turn_and_closes_the_host() -> None:
    child = subprocess.Popen(python_child(ASYNC_CTRL_C_CHILD, MOCK), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        pid = json.loads(child.stdout.readline())["pid"]
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=T)
    finally:
        if child.poll() is None:
            child.kill()
    assert json.loads(out.strip().splitlines()[-1]) == {"stopReason": "cancelled"}, (out, err)
    assert "KeyboardInterrupt" in err and child.returncode != 0
    assert wait_gone(pid)


def test_sync_example_streams_and_asks() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "ask.py"), "--cwd", "/tmp", "--yes",
                           "Take some notes", "--", MOCK], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "I am the ACP mock agent." in proc.stdout and "All done." in proc.stdout
    assert "[permission] Write notes.txt" in proc.stderr and "[end_turn]" in proc.stderr


def test_closing_ends_every_stream_even_one_nobody_pulls() -> None:
    """A full stream nobody reads must not keep the other streams of a closed host open."""
    host = acp_host.Host(event_capacity=1024)
    unread = host.events()
    read = host.events()
    got: List[Any] = []
    reader = threading.Thread(target=lambda: got.extend(read))
    reader.start()
    session = host.spawn(mock("flood")).new_session("/tmp")
    turn = threading.Thread(target=lambda: pytest.raises(acp_host.AcpError, session.prompt, "go"))
    turn.start()
    deadline = time.monotonic() + T
    while not got and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # the unread stream is full by now: the flood is held up
    started = time.monotonic()
    host.close()
    reader.join(T)
    turn.join(T)
    assert not reader.is_alive(), "a stream of the closed host never ended"
    assert time.monotonic() - started < 5
    assert [e.seq for e in got] == list(range(got[0].seq, got[0].seq + len(got)))
    unread.close()


def test_methods_is_the_protocol_table_with_this_faces_calls() -> None:
    rows = acp_host.methods()
    by_name = {m["name"]: m for m in rows}
    assert by_name["session/prompt"]["direction"] == "client_to_agent"
    assert by_name["session/load"]["gate"] == "agentCapabilities.loadSession"
    assert by_name["session/prompt"]["faces"]["python"] == "session.prompt"
    # Every call this face claims exists on both the sync and the asyncio classes.
    owners = {
        "host": (acp_host.Host, acp_host.AsyncHost),
        "agent": (acp_host.Agent, acp_host.AsyncAgent),
        "session": (acp_host.Session, acp_host.AsyncSession),
    }
    for m in rows:
        face = m["faces"]["python"]
        if " " in face or "." not in face:
            continue
        owner, call = face.split(".", 1)
        for cls in owners.get(owner, ()):
            assert callable(getattr(cls, call, None)), f"{m['name']}: {cls.__name__}.{call}"
    doc = (ROOT / "docs" / "PROTOCOL.md").read_text()
    assert all(f"| `{m['name']}` |" in doc for m in rows)


def test_turn_result_is_the_cores_one_shape(tmp_path: Path) -> None:
    """``TurnResult`` has the core's fields, and ``to_json()`` is ``TurnResult::to_json()``
    exactly (the shape every face returns)."""
    with acp_host.Host() as host:
        session = host.spawn([MOCK]).new_session(str(tmp_path))
        result = session.prompt("hello")
        assert list(result.to_json()) == ["turn", "stopReason", "usage", "raw", "text", "thought", "textTruncated"]
        assert [f.name for f in __import__("dataclasses").fields(result)] == [
            "turn", "stop_reason", "usage", "raw", "text", "thought", "text_truncated"]
        # The core's JSON, as the native module hands it over, against what the package returns.
        core = session._n.prompt(json.dumps([{"type": "text", "text": "again"}]))
        assert acp_host.TurnResult._from_native(core).to_json() == json.loads(core)
        assert json.loads(core)["stopReason"] == "end_turn" and json.loads(core)["text"]

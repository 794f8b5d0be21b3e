"""``connect``: the mock agent on a loopback TCP socket (it connects out with ``--connect`` to a
listener this test opens on 127.0.0.1:0; the library never listens) runs a turn through
``Host.connect(sock)``, through a pair of binary file objects, and through ``AsyncHost.connect``
with a socket and with asyncio streams; a peer that goes away mid-turn fails the turn at once."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
import time
from typing import Any, Iterator, List, Tuple

import pytest

import acp_host
from acp_host import AsyncHost, Host

from conftest import mock


def _peer(*extra: str) -> Tuple[subprocess.Popen, socket.socket]:  # type: ignore[type-arg]
    """The mock agent connected to a listener of ours: (its process, our end)."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        srv.settimeout(20)
        port = srv.getsockname()[1]
        proc = subprocess.Popen([*mock(*extra), "--connect", f"127.0.0.1:{port}"])
        conn, _ = srv.accept()
    return proc, conn


@pytest.fixture
def peer() -> Iterator[Tuple[subprocess.Popen, socket.socket]]:  # type: ignore[type-arg]
    proc, conn = _peer()
    yield proc, conn
    conn.close()
    try:
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _turn(agent: Any, cwd: str) -> None:
    session = agent.new_session(cwd)
    stream = session.events()
    result = session.prompt("hello over a socket", timeout=30)
    assert result.stop_reason == "end_turn"
    assert result.text
    kinds: List[str] = []
    while not kinds or kinds[-1] != "turn_ended":
        ev = stream.next(timeout=0)
        assert ev is not None
        kinds.append(ev.kind)
    assert kinds[0] == "session_opened" and "turn_started" in kinds


def test_connect_socket_runs_a_turn(peer: Any, tmp_path: Any) -> None:
    proc, conn = peer
    with Host() as host:
        agent = host.connect(conn, timeout=20)
        assert agent.pid is None  # no process of ours
        assert agent.name
        _turn(agent, str(tmp_path))
        agent.shutdown()
    # Our socket object is still ours (the host used a duplicate); the agent saw EOF and left.
    assert conn.fileno() >= 0
    assert proc.wait(10) == 0


def test_connect_file_objects_runs_a_turn(peer: Any, tmp_path: Any) -> None:
    proc, conn = peer
    with Host() as host:
        agent = host.connect(conn.makefile("rb"), conn.makefile("wb"), timeout=20)
        _turn(agent, str(tmp_path))
        agent.shutdown()
        conn.shutdown(socket.SHUT_RDWR)
    assert proc.wait(10) == 0


def test_connect_socket_asyncio(peer: Any, tmp_path: Any) -> None:
    proc, conn = peer

    async def main() -> None:
        async with AsyncHost() as host:
            agent = await host.connect(conn)
            session = await agent.new_session(str(tmp_path))
            result = await session.prompt("hello")
            assert result.stop_reason == "end_turn" and result.text
            await agent.shutdown()

    asyncio.run(main())
    assert proc.wait(10) == 0


def test_connect_asyncio_streams(peer: Any, tmp_path: Any) -> None:
    proc, conn = peer

    async def main() -> None:
        reader, writer = await asyncio.open_connection(sock=conn.dup())
        async with AsyncHost() as host:
            agent = await host.connect(reader, writer)
            session = await agent.new_session(str(tmp_path))
            stream = session.events()
            result = await session.prompt("hello")
            assert result.stop_reason == "end_turn" and result.text
            got = await stream.collect_until(lambda e: e.kind == "turn_ended", timeout=5)
            assert got[0].kind == "session_opened"
            await agent.shutdown()

    asyncio.run(main())
    assert proc.wait(10) == 0


def test_a_peer_gone_mid_turn_fails_the_turn_at_once(tmp_path: Any) -> None:
    proc, conn = _peer("hang")
    try:
        with Host() as host:
            agent = host.connect(conn, timeout=20)
            session = agent.new_session(str(tmp_path))
            stream = session.events()
            outcome: List[BaseException] = []
            ended_at: List[float] = []

            def turn() -> None:
                try:
                    session.prompt("wait for ever", timeout=60)
                except BaseException as e:  # noqa: BLE001 - recorded for the assertion
                    outcome.append(e)
                ended_at.append(time.monotonic())

            runner = threading.Thread(target=turn)
            runner.start()
            # The agent sends one chunk, then never answers: the turn is running. Kill it.
            stream.collect_until(lambda e: e.kind == "session_update", timeout=10)
            killed_at = time.monotonic()
            proc.kill()
            runner.join(10)
            assert not runner.is_alive(), "the turn did not end when its peer went away"
            assert outcome and isinstance(outcome[0], acp_host.AgentExitedError), outcome
            assert ended_at[0] - killed_at < 5.0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        conn.close()


def test_connect_refuses_what_is_not_a_stream() -> None:
    with Host() as host:
        with pytest.raises(acp_host.InvalidArgumentError):
            host.connect("127.0.0.1:9")


def test_a_peer_gone_mid_turn_fails_the_turn_at_once_asyncio(tmp_path: Any) -> None:
    proc, conn = _peer("hang")

    async def main() -> float:
        async with AsyncHost() as host:
            agent = await host.connect(conn)
            session = await agent.new_session(str(tmp_path))
            stream = session.events()
            turn = asyncio.ensure_future(session.prompt("wait for ever"))
            await stream.collect_until(lambda e: e.kind == "session_update", timeout=10)
            killed_at = time.monotonic()
            proc.kill()
            with pytest.raises(acp_host.AgentExitedError):
                await asyncio.wait_for(turn, 10)
            return time.monotonic() - killed_at

    try:
        assert asyncio.run(main()) < 5.0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        conn.close()

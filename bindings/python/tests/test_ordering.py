"""The ordering contract, sync and asyncio (issue 26):

1. every event of a turn is in the session's stream before ``prompt()`` returns — checked with
   a slow consumer (it sleeps per event) over a long turn, so the host's delivery lags the
   agent: once ``prompt()`` returned, the rest of the turn must be readable without waiting;
2. a ``session.events()`` stream opened at any time after ``session_opened`` misses nothing of
   the session, or says exactly how much it missed (``stream.missed``) — including a stream
   opened in an asyncio task created just before ``await session.prompt()``.

Each case runs 20 times: the races it guards against are a matter of scheduling.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, List, Optional

import pytest

import acp_host
from acp_host import AsyncHost, Host

from conftest import MOCK

RUNS = 20
CHUNKS = 6000


def _turn_complete(events: List[Any], turn: int) -> None:
    """``events``: exactly the turn's, in order: ``turn_started``, every chunk, ``turn_ended``."""
    mine = [e for e in events if e.turn == turn]
    assert mine and mine[0].kind == "turn_started", [e.kind for e in mine[:3]]
    assert mine[-1].kind == "turn_ended"
    chunks = [e for e in mine if e.kind == "session_update"]
    assert len(chunks) == CHUNKS, f"{len(chunks)} of {CHUNKS} chunks"
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)), "in seq order, no duplicate"


def _ready(stream: Any) -> List[Any]:
    """What is in the stream right now, without waiting at all."""
    buffered = list(getattr(stream, "_buf", ()))
    if buffered:
        stream._buf.clear()
    out = buffered
    while True:
        batch = stream._sub.try_next_batch(1 << 20)
        if not batch:
            return out
        out.extend(batch)


# The slow consumer: a host stream subscribed first, so the host hands each batch to it first and
# waits for its room (event_capacity=1024: the core queues a batch, a stream holds one) before the session stream gets that batch.
# The agent's answer comes long before the last chunks got through: old code returned from
# prompt() with thousands of the turn's events not yet in the session stream.
def test_turn_is_in_the_stream_before_prompt_returns_sync(tmp_path: Any) -> None:
    with Host(event_capacity=1024, event_stall_timeout=None) as host:
        agent = host.spawn([MOCK, "--flood", str(CHUNKS)])
        session = agent.new_session(str(tmp_path))
        for run in range(RUNS):
            slow = host.events()
            checked = session.events()
            returned = threading.Event()
            got: List[Any] = []

            def slow_reader() -> None:
                for n, ev in enumerate(slow):
                    if n % 10 == 0:
                        time.sleep(0.001)
                    if ev.kind == "turn_ended":
                        return

            def reader() -> None:
                while not returned.is_set():
                    try:
                        ev = checked.next(timeout=0.01)
                    except acp_host.TimeoutError:
                        continue
                    assert ev is not None
                    got.append(ev)

            threads = [threading.Thread(target=slow_reader), threading.Thread(target=reader)]
            for t in threads:
                t.start()
            result = session.prompt("go", timeout=60)
            returned.set()
            threads[1].join(30)
            got.extend(_ready(checked))
            threads[0].join(30)
            slow.close()
            checked.close()
            assert got and got[-1].kind == "turn_ended", (
                f"run {run}: prompt() returned with {len(got)} events of the turn in the stream")
            _turn_complete(got, result.turn)


def test_turn_is_in_the_stream_before_prompt_returns_asyncio(tmp_path: Any) -> None:
    async def main() -> None:
        async with AsyncHost(event_capacity=1024, event_stall_timeout=None) as host:
            agent = await host.spawn([MOCK, "--flood", str(CHUNKS)])
            session = await agent.new_session(str(tmp_path))
            for run in range(RUNS):
                slow = host.events()
                checked = session.events()
                returned = asyncio.Event()
                got: List[Any] = []

                async def slow_reader() -> None:
                    n = 0
                    async for ev in slow:
                        n += 1
                        if n % 10 == 0:
                            await asyncio.sleep(0.001)
                        if ev.kind == "turn_ended":
                            return

                async def reader() -> None:
                    # Polls without a pull in flight, so that what is in the stream when
                    # prompt() returns is exactly what `_ready` finds.
                    while not returned.is_set():
                        got.extend(_ready(checked))
                        await asyncio.sleep(0.001)

                tasks = [asyncio.create_task(slow_reader()), asyncio.create_task(reader())]
                result = await session.prompt("go")
                returned.set()
                await asyncio.wait_for(tasks[1], 30)
                got.extend(_ready(checked))
                await asyncio.wait_for(tasks[0], 30)
                slow.close()
                checked.close()
                assert got and got[-1].kind == "turn_ended", (
                    f"run {run}: prompt() returned with {len(got)} events of the turn in the stream")
                _turn_complete(got, result.turn)

    asyncio.run(main())


def _missed(stream: Any) -> int:
    return int(getattr(stream, "missed", 0))


def test_stream_opened_in_a_task_before_prompt_misses_nothing(tmp_path: Any) -> None:
    """The asyncio task race: the task opens ``session.events()`` only once it first runs, after
    ``prompt()`` was sent. The first turn's stream must still begin at ``session_opened``; a later
    turn's stream must begin at that turn's ``turn_started`` (or report what it missed)."""

    async def main() -> None:
        async with AsyncHost() as host:
            agent = await host.spawn([MOCK, "--flood", "50"])
            for run in range(RUNS):
                session = await agent.new_session(str(tmp_path))
                for n in range(2):
                    seen: List[Any] = []
                    missed: List[int] = []

                    async def consume(turns: int) -> None:
                        stream = session.events()
                        missed.append(_missed(stream))
                        ends: List[Any] = []

                        def last_end(e: Any) -> bool:  # from the beginning: every turn so far
                            ends.extend([e] if e.kind == "turn_ended" else [])
                            return len(ends) == turns

                        seen.extend(await stream.collect_until(last_end, timeout=30))
                        stream.close()

                    task = asyncio.create_task(consume(n + 1))
                    result = await session.prompt("go")
                    await asyncio.wait_for(task, 30)
                    mine = [e for e in seen if e.turn == result.turn]
                    chunks = [e for e in mine if e.kind == "session_update"]
                    assert mine and mine[0].kind == "turn_started" and len(chunks) == 50, (
                        f"run {run}, turn {n + 1}: the stream lacks part of its turn "
                        f"({len(chunks)} of 50 chunks, first {mine[0].kind if mine else None}), missed={missed}"
                    )
                    # Opened at any time: from the session's beginning (the one rule).
                    assert seen[0].kind == "session_opened", f"run {run}: began with {seen[0].kind}"
                    assert missed == [0]
                await session.close()

    asyncio.run(main())


def test_next_with_timeout_zero_takes_what_is_ready(tmp_path: Any) -> None:
    with Host() as host:
        agent = host.spawn([MOCK, "--flood", "5"])
        session = agent.new_session(str(tmp_path))
        stream = session.events()
        session.prompt("go")
        kinds = []
        while not kinds or kinds[-1] != "turn_ended":
            ev = stream.next(timeout=0)
            assert ev is not None
            kinds.append(ev.kind)
        assert kinds[0] == "session_opened"


def test_stream_opened_between_turns_starts_at_the_beginning(tmp_path: Any) -> None:
    with Host() as host:
        agent = host.spawn([MOCK, "--flood", "5"])
        session = agent.new_session(str(tmp_path))
        first = session.events()
        session.prompt("one")
        before = first.collect_until(lambda e: e.kind == "turn_ended", timeout=10)
        later = session.events()
        assert _missed(later) == 0, "the history still holds the session's beginning"
        result = session.prompt("two")
        got = later.collect_until(lambda e: e.kind == "turn_ended" and e.turn == result.turn, timeout=10)
        assert got[:len(before)] == before, "opened between turns: from the session's beginning"
        assert first.collect_until(lambda e: e.kind == "turn_ended", timeout=10) == got[len(before):]

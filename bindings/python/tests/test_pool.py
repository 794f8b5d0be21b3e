"""Pools (``host.pool(...)``): process per session (distinct processes, a released session's
process ends) or shared (sessions packed onto a process), the cap (``BusyError``), warm spares
(a session without a cold start), the per-session prompt queue (prompts from several threads or
tasks run one after the other; ``cancel`` fails the queued ones without sending them), shutdown
and ``Host.close()`` leaving no process, and settings that cannot be used (``ConfigError``,
nothing started).

The agent is the mock behind a small shell wrapper that counts its starts and records its pids in
the test's directory (the wrapper ``exec``s the mock: the recorded pid is the agent's), so "no cold
start happened" and "every process is gone" are checked, not timed. A turn that must stay running
until the test lets it go asks the host an extension request (``_test/hold``) that the test's
handler answers once its gate opens."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import acp_host
from conftest import MOCK, T, alive, wait_gone

#: Appends its pid (the agent's: it ``exec``s the mock) to ``d/pids``, one line per start (an
#: append, so that starts at the same time are all counted).
COUNTING = r'd=$0; m=$1; shift; echo $$ >> "$d/pids"; exec "$m" "$@"'


def command(d: Path, *mock_args: str) -> List[str]:
    """The mock (with ``mock_args``), recording each start's pid in ``d/pids``."""
    return ["/bin/sh", "-c", COUNTING, str(d), MOCK, *mock_args]


def pids(d: Path) -> List[int]:
    p = d / "pids"
    return [int(x) for x in p.read_text().split()] if p.exists() else []


def starts(d: Path) -> int:
    return len(pids(d))


def hold_scenario(d: Path) -> str:
    """Every turn streams a chunk, then waits for the host's answer to ``_test/hold``."""
    path = d / "hold.json"
    path.write_text(json.dumps({
        "description": "test_pool.py: a turn that runs until the test lets it go",
        "prompts": [[
            {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "working"}}},
            {"request": {"method": "_test/hold"}},
        ]],
    }))
    return str(path)


def until(what: str, cond: Callable[[], bool]) -> None:
    """Wait for a condition of the pool's state (there is no event for it)."""
    deadline = time.monotonic() + T
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


async def until_async(what: str, cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + T
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def turn_events(events: List[Any], turns: List[int]) -> List[Any]:
    return [(e.kind, e.turn) for e in events if e.kind in ("turn_started", "turn_ended") and e.turn in turns]


# ------------------------------------------------------------------ modes, cap, spares


def test_process_per_session_gives_each_session_its_own_process_and_release_ends_it(tmp_path: Path) -> None:
    with acp_host.Host() as host:
        pool = host.pool(command(tmp_path), warm_spares=0, max_agents=4)
        a = pool.open_session(tmp_path)
        b = pool.open_session(tmp_path)
        c = pool.open_session(tmp_path)
        procs = [s.agent.pid for s in (a, b, c)]
        assert None not in procs and len(set(procs)) == 3, procs
        assert sorted(procs) == sorted(pids(tmp_path))
        assert len({s.agent.id for s in (a, b, c)}) == 3
        for s in (a, b, c):
            result = s.prompt("hi", timeout=T)
            assert isinstance(result, acp_host.TurnResult) and result.stop_reason == "end_turn"
            assert s.state.open
        assert pool.stats == acp_host.PoolStats(agents=3, spares=0, starting=0, sessions=3)

        a.release()
        assert a.released
        assert wait_gone(procs[0])
        assert alive(procs[1]) and alive(procs[2])
        with pytest.raises(acp_host.ClosedError):
            a.prompt("late", timeout=T)
        a.release()  # idempotent

        # Leaving the block releases; so does dropping the object.
        with b:
            pass
        assert wait_gone(procs[1])
        del c, s  # (the loop variable held it too)
        gc.collect()
        assert wait_gone(procs[2])
        until("no sessions", lambda: pool.stats.sessions == 0)
        assert starts(tmp_path) == 3

        pool.shutdown()
        assert pool.closed
        with pytest.raises(acp_host.ClosedError):
            pool.open_session(tmp_path)
        with pytest.raises(acp_host.ClosedError):
            pool.ready(timeout=T)
        assert starts(tmp_path) == 3


def test_shared_mode_packs_sessions_onto_a_process_until_it_is_full(tmp_path: Path) -> None:
    with acp_host.Host() as host, host.pool(command(tmp_path), mode="shared", max_sessions_per_agent=2,
                                            warm_spares=0) as pool:
        s1 = pool.open_session(tmp_path)
        s2 = pool.open_session(tmp_path)
        s3 = pool.open_session(tmp_path)
        assert s1.agent.id == s2.agent.id and s1.agent.pid == s2.agent.pid
        assert s3.agent.id != s1.agent.id and s3.agent.pid != s1.agent.pid
        assert s1.id != s2.id
        assert starts(tmp_path) == 2
        assert pool.stats == acp_host.PoolStats(agents=2, spares=0, starting=0, sessions=3)
        # Sessions of one process run side by side.
        results: Dict[str, acp_host.TurnResult] = {}
        threads = [threading.Thread(target=lambda s=s, k=k: results.__setitem__(k, s.prompt(k, timeout=T)))
                   for k, s in (("one", s1), ("two", s2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(T)
        assert {k: r.stop_reason for k, r in results.items()} == {"one": "end_turn", "two": "end_turn"}
        # A released session frees its place on the shared process, which stays up.
        shared = s1.agent.pid
        assert shared is not None
        s1.release()
        assert s2.prompt("still", timeout=T).stop_reason == "end_turn"
        s4 = pool.open_session(tmp_path)
        assert s4.agent.pid == shared and alive(shared)
        assert starts(tmp_path) == 2
    assert all(wait_gone(p) for p in pids(tmp_path))


def test_the_cap_refuses_a_session_with_busy_until_one_is_released(tmp_path: Path) -> None:
    with acp_host.Host() as host, host.pool(command(tmp_path), warm_spares=0, max_agents=2) as pool:
        a = pool.open_session(tmp_path)
        b = pool.open_session(tmp_path)
        assert b.prompt("hi", timeout=T).stop_reason == "end_turn"
        with pytest.raises(acp_host.BusyError) as ei:
            pool.open_session(tmp_path)
        assert ei.value.code == "busy"
        assert starts(tmp_path) == 2
        pid = a.agent.pid
        assert pid is not None
        a.release()
        assert wait_gone(pid)
        c = pool.open_session(tmp_path)
        assert c.prompt("hi", timeout=T).stop_reason == "end_turn"
        assert starts(tmp_path) == 3


def test_a_warm_spare_serves_the_first_session_without_a_cold_start(tmp_path: Path) -> None:
    with acp_host.Host() as host, host.pool(command(tmp_path), warm_spares=1) as pool:
        pool.ready(timeout=T)
        assert starts(tmp_path) == 1
        assert pool.stats == acp_host.PoolStats(agents=0, spares=1, starting=0, sessions=0)
        [spare] = pids(tmp_path)
        s = pool.open_session(tmp_path)
        assert s.agent.pid == spare
        assert s.prompt("hi", timeout=T).stop_reason == "end_turn"
        # The pool starts a new spare in the background.
        until("a refilled spare", lambda: pool.stats.spares == 1)
        assert starts(tmp_path) == 2
        assert pool.stats.agents == 1 and pool.stats.sessions == 1
    assert all(wait_gone(p) for p in pids(tmp_path))


def test_an_idle_shared_process_is_shut_down_after_idle_timeout(tmp_path: Path) -> None:
    with acp_host.Host() as host, host.pool(command(tmp_path), mode="shared", warm_spares=0,
                                            idle_timeout=0.2) as pool:
        s = pool.open_session(tmp_path)
        pid = s.agent.pid
        assert pid is not None
        s.release()
        assert wait_gone(pid)
        until("no agents", lambda: pool.stats.agents == 0)


def test_a_command_that_cannot_start_raises_spawn_error(tmp_path: Path) -> None:
    with acp_host.Host() as host, host.pool([str(tmp_path / "missing")], warm_spares=1) as pool:
        with pytest.raises(acp_host.SpawnError):
            pool.open_session(tmp_path)
        with pytest.raises(acp_host.SpawnError):
            pool.ready(timeout=T)
        assert pool.stats == acp_host.PoolStats(agents=0, spares=0, starting=0, sessions=0)


# ------------------------------------------------------------------ the prompt queue


def test_prompts_from_two_threads_queue_and_run_one_after_the_other(tmp_path: Path) -> None:
    gate = threading.Event()

    def hold(method: str, params: Any) -> Any:
        assert method == "_test/hold"
        gate.wait(T)
        return {}

    with acp_host.Host(on_ext_request=hold) as host, \
            host.pool(command(tmp_path, "--scenario", hold_scenario(tmp_path)), warm_spares=0) as pool:
        ps = pool.open_session(tmp_path)
        events = ps.events()
        results: Dict[str, acp_host.TurnResult] = {}

        def run(text: str) -> None:
            results[text] = ps.prompt(text, timeout=T)

        first = threading.Thread(target=run, args=("first",))
        first.start()
        seen = events.collect_until(lambda e: e.kind == "turn_started", T)
        second = threading.Thread(target=run, args=("second",))
        second.start()
        # The second prompt waits behind the running one (a plain session would raise busy).
        until("two prompts out", lambda: ps.pending_prompts == 2)
        with pytest.raises(acp_host.BusyError):
            ps.session.prompt("overlap", timeout=T)
        assert not results
        gate.set()
        first.join(T)
        second.join(T)
        r1, r2 = results["first"], results["second"]
        assert (r1.stop_reason, r2.stop_reason) == ("end_turn", "end_turn")
        assert r1.text == r2.text == "working"
        assert r1.turn < r2.turn
        assert ps.pending_prompts == 0
        seen += events.collect_until(lambda e: e.kind == "turn_ended" and e.turn == r2.turn, T)
        assert turn_events(seen, [r1.turn, r2.turn]) == [
            ("turn_started", r1.turn), ("turn_ended", r1.turn), ("turn_started", r2.turn), ("turn_ended", r2.turn),
        ]


def test_a_queued_prompt_that_times_out_leaves_the_queue_unsent(tmp_path: Path) -> None:
    gate = threading.Event()

    def hold(method: str, params: Any) -> Any:
        gate.wait(T)
        return {}

    with acp_host.Host(on_ext_request=hold) as host, \
            host.pool(command(tmp_path, "--scenario", hold_scenario(tmp_path)), warm_spares=0) as pool:
        ps = pool.open_session(tmp_path)
        events = ps.events()
        out: List[acp_host.TurnResult] = []
        running = threading.Thread(target=lambda: out.append(ps.prompt("first", timeout=T)))
        running.start()
        events.collect_until(lambda e: e.kind == "turn_started", T)
        with pytest.raises(acp_host.TimeoutError):
            ps.prompt("queued", timeout=0.2)
        assert ps.pending_prompts == 1
        gate.set()
        running.join(T)
        assert out[0].stop_reason == "end_turn"
        # The timed-out prompt never got a turn: the next one is the host's very next turn.
        assert ps.prompt("next", timeout=T).turn == out[0].turn + 1


def test_cancel_ends_the_running_turn_and_fails_the_queued_prompts(tmp_path: Path) -> None:
    with acp_host.Host() as host, \
            host.pool(command(tmp_path, "--scenario", "wait-for-cancel"), warm_spares=0) as pool:
        ps = pool.open_session(tmp_path)
        events = ps.events()
        outcome: Dict[str, Any] = {}

        def run(text: str) -> None:
            try:
                outcome[text] = ps.prompt(text, timeout=T)
            except acp_host.AcpError as e:
                outcome[text] = e

        running = threading.Thread(target=run, args=("running",))
        running.start()
        events.collect_until(lambda e: e.kind == "turn_started", T)
        queued = [threading.Thread(target=run, args=(f"queued {i}",)) for i in range(2)]
        for t in queued:
            t.start()
        until("three prompts out", lambda: ps.pending_prompts == 3)
        ps.cancel()
        for t in [running, *queued]:
            t.join(T)
        result = outcome["running"]
        assert isinstance(result, acp_host.TurnResult) and result.stop_reason == "cancelled"
        for i in range(2):
            assert isinstance(outcome[f"queued {i}"], acp_host.CancelledError), outcome
        assert ps.pending_prompts == 0
        # The session goes on; the cancelled prompts were never sent (no turn of theirs).
        after = threading.Thread(target=run, args=("after",))
        after.start()
        started = events.collect_until(lambda e: e.kind == "turn_started", T)[-1]
        assert started.turn == result.turn + 1
        ps.cancel()
        after.join(T)
        assert outcome["after"].stop_reason == "cancelled"


# ------------------------------------------------------------------ shutdown, close, config


def test_host_close_shuts_every_pool_down_and_leaves_no_process(tmp_path: Path) -> None:
    host = acp_host.Host()
    pool = host.pool(command(tmp_path), warm_spares=2, max_agents=4)
    shared = host.pool(command(tmp_path), mode="shared", warm_spares=0)
    pool.ready(timeout=T)
    busy = pool.open_session(tmp_path)
    other = shared.open_session(tmp_path)
    until("two spares again", lambda: pool.stats.spares == 2)
    assert starts(tmp_path) == 4 and all(alive(p) for p in pids(tmp_path))
    host.close()
    assert all(wait_gone(p) for p in pids(tmp_path)), pids(tmp_path)
    assert pool.closed and shared.closed
    assert pool.stats == acp_host.PoolStats(agents=0, spares=0, starting=0, sessions=0)
    with pytest.raises(acp_host.ClosedError):
        pool.open_session(tmp_path)
    with pytest.raises((acp_host.AgentExitedError, acp_host.ClosedError)):
        busy.prompt("x", timeout=T)
    other.release()
    with pytest.raises(acp_host.ClosedError):
        host.pool(command(tmp_path))
    assert starts(tmp_path) == 4


# The core's paths (docs/OPTIONS.md), whichever spelling the keyword used.
@pytest.mark.parametrize("kwargs, path", [
    ({"mode": "per-session"}, "pool.mode"),
    ({"warm_spares": -1}, "pool.warmSpares"),
    ({"max_agents": True}, "pool.maxAgents"),
    ({"max_agents": 2.5}, "pool.maxAgents"),
    ({"idle_timeout": float("nan")}, "pool.idleTimeoutMs"),
    ({"idle_timeout": -1}, "pool.idleTimeoutMs"),
    ({"idle_timeout": 1.0, "idle_timeout_ms": 1000}, "pool.idleTimeoutMs"),
    ({"mode": "shared", "max_sessions_per_agent": "2"}, "pool.maxSessionsPerAgent"),
    ({"max_agents": 0}, "pool.maxAgents"),
    ({"warm_spares": 3, "max_agents": 2}, "pool.warmSpares"),
    ({"max_sessions_per_agent": 2}, "pool.maxSessionsPerAgent"),
    ({"mode": "shared", "max_sessions_per_agent": 0}, "pool.maxSessionsPerAgent"),
    ({"restart": {"maxRestarts": -1}}, "restart.maxRestarts"),
])
def test_settings_that_cannot_be_used_raise_config_error_and_start_nothing(
        tmp_path: Path, kwargs: Dict[str, Any], path: str) -> None:
    with acp_host.Host() as host:
        with pytest.raises(acp_host.ConfigError) as ei:
            host.pool(command(tmp_path), **kwargs)
        assert ei.value.code == "invalid_config"
        assert ei.value.data["path"] == path, ei.value
    assert starts(tmp_path) == 0


# ------------------------------------------------------------------ asyncio


def test_async_pool_queues_prompts_of_two_tasks_and_cancel_fails_the_queued_one(tmp_path: Path) -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def hold(method: str, params: Any) -> Any:
            await gate.wait()
            return {}

        async with acp_host.AsyncHost(on_ext_request=hold) as host:
            async with host.pool(command(tmp_path, "--scenario", hold_scenario(tmp_path)), warm_spares=1,
                                 max_agents=2) as pool:
                await pool.ready(timeout=T)
                assert starts(tmp_path) == 1
                async with await pool.open_session(tmp_path) as ps:
                    assert isinstance(ps, acp_host.AsyncPooledSession)
                    assert ps.agent.pid == pids(tmp_path)[0]
                    events = ps.events()
                    first = asyncio.create_task(ps.prompt("first"))
                    seen = await events.collect_until(lambda e: e.kind == "turn_started", T)
                    second = asyncio.create_task(ps.prompt("second"))
                    await until_async("two prompts out", lambda: ps.pending_prompts == 2)
                    gate.set()
                    r1, r2 = await asyncio.wait_for(asyncio.gather(first, second), T)
                    assert (r1.stop_reason, r2.stop_reason) == ("end_turn", "end_turn") and r1.turn < r2.turn
                    seen += await events.collect_until(lambda e: e.kind == "turn_ended" and e.turn == r2.turn, T)
                    assert turn_events(seen, [r1.turn, r2.turn]) == [
                        ("turn_started", r1.turn), ("turn_ended", r1.turn),
                        ("turn_started", r2.turn), ("turn_ended", r2.turn),
                    ]
                    pid = ps.agent.pid
                    assert pid is not None
                assert ps.released and wait_gone(pid)

                # Two more sessions, each on a warm spare of its own; the cap is then reached.
                await until_async("one spare", lambda: pool.stats == acp_host.PoolStats(0, 1, 0, 0))
                ps2 = await pool.open_session(tmp_path)
                await until_async("one spare", lambda: pool.stats.spares == 1)
                other = await pool.open_session(tmp_path)
                assert starts(tmp_path) == 3
                assert len({ps2.agent.pid, other.agent.pid}) == 2
                with pytest.raises(acp_host.BusyError):
                    await pool.open_session(tmp_path)
                gate.clear()
                events = ps2.events()
                running = asyncio.create_task(ps2.prompt("running"))
                await events.collect_until(lambda e: e.kind == "turn_started", T)
                queued = asyncio.create_task(ps2.prompt("queued"))
                await until_async("two prompts out", lambda: ps2.pending_prompts == 2)
                await ps2.cancel()
                # The mock ends a turn cancelled during its request once the request is answered.
                gate.set()
                assert (await asyncio.wait_for(running, T)).stop_reason == "cancelled"
                with pytest.raises(acp_host.CancelledError):
                    await asyncio.wait_for(queued, T)
                assert ps2.pending_prompts == 0
                await other.release()
            assert pool.closed
            with pytest.raises(acp_host.ClosedError):
                await pool.open_session(tmp_path)
        assert all(wait_gone(p) for p in pids(tmp_path))

    asyncio.run(main())

"""Interpreter exit while threads of the script still use a host: daemon threads iterating
``host.events()``, blocked in ``next()``, an asyncio loop awaiting events and a prompt, and a turn
flooding events, when ``main`` returns without closing anything. CPython (< 3.14) ends a thread
that takes the GIL during finalization with ``pthread_exit``, which aborts the process when
there are Rust frames on its stack; the host must never let its threads re-enter a finalizing
interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from typing import List

import pytest

from conftest import MOCK, T, wait_gone

EXIT_WITH_THREADS_CHILD = textwrap.dedent("""
    import asyncio, sys, threading
    import acp_host

    mock, scenario, inflight = sys.argv[1], sys.argv[2], sys.argv[3] == "inflight"
    host = acp_host.Host(on_permission=lambda r: r.option_id("allow_once"))
    async_ready = threading.Event()

    def say(line):
        sys.stdout.write(line + "\\n")  # one write: lines of two threads do not interleave
        sys.stdout.flush()

    def prompt_until_closed(session):
        try:
            session.prompt("in flight at exit")
        except acp_host.ClosedError:
            pass  # the host closed at exit

    def iterate():
        for ev in host.events():
            ev.kind, ev.data

    def blocking_next(stream):
        while True:
            stream.next()

    def asyncio_thread():
        async def main():
            ahost = acp_host.AsyncHost()
            evs = ahost.events()
            agent = await ahost.spawn([mock, "--scenario", scenario])
            ready = await evs.collect_until(lambda e: e.kind == "agent_ready", 20)
            say(f"PID {ready[-1].data['pid']}")
            session = await agent.new_session("/tmp")
            await session.prompt("first")
            async_ready.set()
            asyncio.ensure_future(session.prompt("in flight at exit"))
            async for ev in evs:
                ev.data
        asyncio.run(main())

    stream = host.events()
    threading.Thread(target=iterate, daemon=True).start()
    threading.Thread(target=asyncio_thread, daemon=True).start()
    agent = host.spawn([mock, "--scenario", scenario])
    say(f"PID {stream.collect_until(lambda e: e.kind == 'agent_ready', 20)[-1].data['pid']}")
    session = agent.new_session("/tmp")
    threading.Thread(target=blocking_next, args=(session.events(),), daemon=True).start()
    threading.Thread(target=blocking_next, args=(stream,), daemon=True).start()
    session.prompt("hello")
    if inflight:
        threading.Thread(target=prompt_until_closed, args=(session,), daemon=True).start()
    async_ready.wait(20)
    say("DONE")
""")

RUNS = int(os.environ.get("ACP_EXIT_RUNS", "30"))


def run_child(scenario: str, inflight: bool) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    return subprocess.run(
        [sys.executable, "-c", EXIT_WITH_THREADS_CHILD, MOCK, scenario, "inflight" if inflight else "idle"],
        capture_output=True, text=True, timeout=T, env=env, cwd="/",
    )


@pytest.mark.parametrize("scenario", ["default", "flood"])
def test_returning_from_main_with_threads_in_the_host_exits_cleanly(scenario: str) -> None:
    failures: List[str] = []
    for i in range(RUNS):
        proc = run_child(scenario, inflight=i % 2 == 1)
        pids = [int(p) for p in re.findall(r"^PID (\d+)$", proc.stdout, re.M)]
        if proc.returncode != 0 or "Fatal Python error" in proc.stderr or "DONE" not in proc.stdout:
            failures.append(f"run {i}: exit {proc.returncode}\n{proc.stdout}{proc.stderr[-2000:]}")
        assert len(pids) == 2, (proc.stdout, proc.stderr)
        for pid in pids:
            assert wait_gone(pid, 5), f"run {i}: agent {pid} outlived the interpreter"
    assert not failures, f"{len(failures)} of {RUNS} runs failed:\n" + "\n".join(failures[:3])

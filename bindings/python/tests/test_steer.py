"""``Session.steer`` behind ``unstable=["_session/steering"]`` (docs/STEERING.md), sync and
asyncio: injected into the running turn of an agent that advertises steering, queued then
prompted as its own turn otherwise, rejected by a cancel; every step a ``steer`` event."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, List, Tuple

import pytest

import acp_host
from conftest import T, mock

CWD = "/tmp"
OPT_IN = ["_session/steering"]


def _steers(evs: List[Any]) -> List[Tuple[Any, ...]]:
    return [(e.data["steer"], e.data["outcome"], e.turn) for e in evs if e.kind == "steer"]


class _Prompt(threading.Thread):
    """A blocking prompt on a thread of its own (the sync API steers beside it)."""

    def __init__(self, session: acp_host.Session) -> None:
        super().__init__(daemon=True)
        self.session = session
        self.result: Any = None
        self.error: Any = None

    def run(self) -> None:
        try:
            self.result = self.session.prompt("go")
        except acp_host.AcpError as e:  # pragma: no cover - reported by the test
            self.error = e

    def wait(self) -> acp_host.TurnResult:
        self.join(T)
        assert self.error is None, self.error
        assert self.result is not None
        return self.result  # type: ignore[no-any-return]


def _running(host: acp_host.Host, scenario: str) -> Tuple[acp_host.Session, acp_host.EventStream, _Prompt, Any]:
    stream = host.events()
    agent = host.spawn(mock(scenario))
    session = agent.new_session(CWD)
    prompt = _Prompt(session)
    prompt.start()
    started = stream.collect_until(lambda e: e.kind == "turn_started", timeout=T)[-1]
    return session, stream, prompt, started


def test_steer_without_the_opt_in_is_unsupported() -> None:
    with acp_host.Host() as host:
        session = host.spawn(mock("steering")).new_session(CWD)
        with pytest.raises(acp_host.UnsupportedError, match="_session/steering"):
            session.steer("hi")


def test_an_agent_that_advertises_steering_takes_the_text_into_the_running_turn() -> None:
    with acp_host.Host(unstable=OPT_IN) as host:
        session, stream, prompt, started = _running(host, "steering")
        r = session.steer("go left")
        assert (r.outcome, r.turn) == ("injected", started.turn)
        assert r.to_json() == {"steer": r.steer, "outcome": "injected", "turn": started.turn}
        assert prompt.wait().text == "workingsteered: go left done"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", timeout=T)
        assert _steers(evs) == [(r.steer, "injected", started.turn)]
        assert [e for e in evs if e.kind == "steer"][0].data["prompt"][0]["text"] == "go left"


def test_without_steering_the_text_is_queued_then_prompted_as_its_own_turn() -> None:
    with acp_host.Host(unstable=OPT_IN) as host:
        session, stream, prompt, started = _running(host, "no-steering")
        r = session.steer("next")
        assert (r.outcome, r.turn) == ("queued", None)
        assert prompt.wait().stop_reason == "end_turn"
        second = started.turn + 1
        evs = stream.collect_until(lambda e: e.kind == "turn_ended" and e.turn == second, timeout=T)
        assert _steers(evs) == [(r.steer, "queued", None), (r.steer, "prompted", second)]
        starts = [e for e in evs if e.kind == "turn_started"]
        assert [e.data["prompt"][0]["text"] for e in starts] == ["next"]


def test_a_cancel_rejects_the_queued_steers() -> None:
    with acp_host.Host(unstable=OPT_IN) as host:
        session, stream, prompt, _ = _running(host, "no-steering")
        a = session.steer("one")
        b = session.steer("two")
        session.cancel()
        assert prompt.wait().stop_reason == "cancelled"
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", timeout=T)
        rejected = [(e.data["steer"], e.data["reason"]) for e in evs if e.kind == "steer" and e.data["outcome"] == "rejected"]
        assert rejected == [(a.steer, "cancelled"), (b.steer, "cancelled")]
        # Nothing more is prompted: no event at all follows within 0.4 s.
        with pytest.raises(acp_host.TimeoutError):
            ev = stream.next(timeout=0.4)
            raise AssertionError(f"unexpected event {ev.kind if ev else None}")


def test_the_agent_refusing_a_steer_raises_its_typed_error() -> None:
    with acp_host.Host(unstable=OPT_IN) as host:
        session, _, prompt, _ = _running(host, "steering")
        with pytest.raises(acp_host.AgentError, match="the mock refuses"):
            session.steer("!failed please")
        prompt.wait()


def test_steer_async() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(unstable=OPT_IN) as host:
            stream = host.events()
            agent = await host.spawn(mock("no-steering"))
            session = await agent.new_session(CWD)
            turn = asyncio.ensure_future(session.prompt("go"))
            started = (await stream.collect_until(lambda e: e.kind == "turn_started", timeout=T))[-1]
            queued = await session.steer("next")
            assert (queued.outcome, queued.turn) == ("queued", None)
            assert (await turn).stop_reason == "end_turn"
            evs = await stream.collect_until(lambda e: e.kind == "turn_ended" and e.turn == started.turn + 1, timeout=T)
            assert _steers(evs) == [(queued.steer, "queued", None), (queued.steer, "prompted", started.turn + 1)]

            # A cancel rejects the steer queued behind the next turn... which here is none: with
            # no turn running the steer is the next prompt at once.
            r = await session.steer("now")
            assert r.outcome == "prompted" and r.turn == started.turn + 2
            await stream.collect_until(lambda e: e.kind == "turn_ended" and e.turn == r.turn, timeout=T)

        async with acp_host.AsyncHost(unstable=OPT_IN) as host:
            stream = host.events()
            agent = await host.spawn(mock("steering"))
            session = await agent.new_session(CWD)
            turn = asyncio.ensure_future(session.prompt("go"))
            started = (await stream.collect_until(lambda e: e.kind == "turn_started", timeout=T))[-1]
            injected = await session.steer("go left")
            assert (injected.outcome, injected.turn) == ("injected", started.turn)
            assert (await turn).text == "workingsteered: go left done"

    asyncio.run(asyncio.wait_for(main(), T))


def test_a_cancel_rejects_queued_steers_async() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(unstable=OPT_IN) as host:
            stream = host.events()
            agent = await host.spawn(mock("no-steering"))
            session = await agent.new_session(CWD)
            turn = asyncio.ensure_future(session.prompt("go"))
            await stream.collect_until(lambda e: e.kind == "turn_started", timeout=T)
            a = await session.steer("one")
            await session.cancel()
            assert (await turn).stop_reason == "cancelled"
            evs = await stream.collect_until(lambda e: e.kind == "steer" and e.data["outcome"] == "rejected", timeout=T)
            assert evs[-1].data["steer"] == a.steer and evs[-1].data["reason"] == "cancelled"

    asyncio.run(asyncio.wait_for(main(), T))

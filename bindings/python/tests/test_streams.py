"""A session's stream from its beginning, sessions as context managers, per-call timeouts and
``events=False`` (issue 10: consistent faces)."""

from __future__ import annotations

import asyncio
import builtins
import json
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import acp_host
from conftest import T, mock

EARLY = ["session_info_update", "available_commands_update", "current_mode_update"]


def scenario(tmp_path: Path, name: str, body: Dict[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"description": name, **body}))
    return str(path)


def of_session(events: List[acp_host.Event], session_id: str) -> List[int]:
    return [e.seq for e in events if e.session == session_id]


def kinds(events: List[acp_host.Event]) -> List[str]:
    return [e.update_kind or e.kind for e in events]


# ---------------------------------------------------------------------------- stream beginnings


def test_new_session_stream_starts_with_session_opened_and_early_updates() -> None:
    with acp_host.Host() as host:
        everything = host.events()
        agent = host.spawn(mock("early-updates"))
        session = agent.new_session("/tmp")
        stream = session.events()
        assert session.prompt("hi").stop_reason == "end_turn"
        got = stream.collect_until(lambda e: e.kind == "turn_ended", T)
        assert kinds(got)[:4] == ["session_opened", *EARLY]
        assert got[0].data["origin"] == "new" and got[1].data["title"] == "Early bird"
        assert kinds(got)[4:] == ["turn_started", "agent_message_chunk", "turn_ended"]
        assert stream.dropped == 0
        # Exactly the session's part of the host's stream: no gap, no duplicate.
        host_side = everything.collect_until(lambda e: e.kind == "turn_ended", T)
        assert [e.seq for e in got] == of_session(host_side, session.id)


def test_load_replay_is_in_the_session_stream_then_live_events() -> None:
    with acp_host.Host() as host:
        everything = host.events()
        agent = host.spawn(mock("load-replay"))
        session = agent.load_session("sess_old", "/tmp")
        stream = session.events()
        session.prompt("more")
        got = stream.collect_until(lambda e: e.kind == "turn_ended", T)
        assert got[0].kind == "session_opened" and got[0].data["origin"] == "load"
        replay = [e for e in got if e.replay]
        assert len(replay) == 8 and got[1:9] == replay
        assert replay[0].data["content"]["text"] == "Please fix the flaky test."
        assert [e.kind for e in got[9:]] == ["turn_started", "session_update", "turn_ended"]
        assert not any(e.replay for e in got[9:])
        host_side = everything.collect_until(lambda e: e.kind == "turn_ended", T)
        assert [e.seq for e in got] == of_session(host_side, "sess_old")


def test_resume_and_fork_streams_start_with_session_opened() -> None:
    with acp_host.Host(unstable=["session/fork"]) as host:
        agent = host.spawn(mock("list-resume-close-delete"))
        resumed = agent.resume_session("sess_a", "/tmp")
        forked = agent.fork_session("sess_a", "/tmp")
        for s, origin in ((resumed, "resume"), (forked, "fork")):
            first = s.events().next(T)
            assert first is not None and first.kind == "session_opened"
            assert first.session == s.id and first.data["origin"] == origin


def test_every_stream_replays_the_beginning_until_the_first_prompt() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock("early-updates"))
        session = agent.new_session("/tmp")
        a, b = session.events(), session.events()
        session.set_mode("architect")  # outside a turn: logged too
        c = session.events()
        for st in (a, b, c):
            got = st.collect_until(lambda e: e.update_kind == "current_mode_update"
                                   and e.data["currentModeId"] == "architect", T)
            assert kinds(got) == ["session_opened", *EARLY, "current_mode_update"]
        session.prompt("one")
        later = session.events()  # after the first prompt: from the beginning too (the one rule)
        session.prompt("two")
        got = later.collect_until(lambda e: e.kind == "turn_ended" and e.turn == 2, T)
        assert kinds(got)[:4] == ["session_opened", *EARLY] and later.missed == 0
        assert kinds(got)[-3:] == ["turn_started", "agent_message_chunk", "turn_ended"]
        assert [e.turn for e in got if e.kind == "turn_started"] == [1, 2]


def test_a_failing_open_call_leaves_nothing_behind_and_the_next_one_works() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock("load-replay"))
        with pytest.raises(acp_host.AgentError) as ei:
            agent.load_session("sess_nope", "/tmp")
        assert ei.value.rpc_code == -32002
        session = agent.load_session("sess_old", "/tmp")
        got = session.events().collect_until(lambda e: e.kind == "session_opened", T)
        assert [e.kind for e in got] == ["session_opened"]  # nothing of the failed load before it
        fresh = agent.new_session("/tmp")
        first = fresh.events().next(T)
        assert first is not None and first.kind == "session_opened" and first.session == fresh.id


def test_two_sessions_opening_at_once_each_get_their_own_beginning(tmp_path: Path) -> None:
    slow = scenario(tmp_path, "slow-new", {
        "newSession": {"before": [
            {"update": {"sessionUpdate": "session_info_update", "title": "early $SESSION"}},
            {"sleepMs": 200},
            {"update": {"sessionUpdate": "available_commands_update", "availableCommands": []}},
        ]},
        "prompts": [[{"flood": {"count": 1000}}]],
    })
    with acp_host.Host() as host:
        everything = host.events()
        agent = host.spawn(mock(slow))
        busy = agent.new_session("/tmp")
        flood = threading.Thread(target=busy.prompt, args=("flood",))
        flood.start()  # another session's events interleave with the openings
        opened: List[acp_host.Session] = []
        threads = [threading.Thread(target=lambda: opened.append(agent.new_session("/tmp"))) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(T)
        flood.join(T)
        assert len(opened) == 2 and opened[0].id != opened[1].id
        waiting = {"turn_ended", *(s.id for s in opened)}

        def seen_all(e: acp_host.Event) -> bool:
            waiting.discard(e.session if e.update_kind == "available_commands_update" else e.kind)
            return not waiting

        host_side = everything.collect_until(seen_all, T)
        for s in opened:
            got = s.events().collect_until(lambda e: e.update_kind == "available_commands_update", T)
            assert {e.session for e in got} == {s.id}
            assert kinds(got) == ["session_opened", "session_info_update", "available_commands_update"]
            assert got[1].data["title"] == f"early {s.id}"
            assert [e.seq for e in got] == of_session(host_side, s.id)


def test_session_closed_while_iterating_ends_the_stream_and_later_streams_at_once() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock())
        session = agent.new_session("/tmp")
        stream = session.events()
        seen: List[acp_host.Event] = []
        reader = threading.Thread(target=lambda: seen.extend(stream))
        reader.start()
        session.prompt("hi")
        session.close()
        reader.join(T)
        assert not reader.is_alive() and seen[0].kind == "session_opened"
        assert seen[-1].kind == "session_closed" and seen[-1].data["reason"] == "closed"
        # Closed already: from its beginning (the history of closed sessions is kept) to its end.
        late = [e.kind for e in session.events()]
        assert late[0] == "session_opened" and late[-1] == "session_closed"


def test_agent_exit_ends_session_and_agent_streams_even_when_created_afterwards() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock("crash-mid-turn"))
        session = agent.new_session("/tmp")
        stream = session.events()
        with pytest.raises(acp_host.AgentExitedError):
            session.prompt("go")
        got = list(stream)
        assert got[0].kind == "session_opened"
        assert got[-1].kind == "session_closed" and got[-1].data["reason"] == "agent_exited"
        # Created after the crash, an agent stream still sees its agent_exited (or, once that was
        # dispatched, ends at once); either way streams created afterwards end at once.
        exit_seen = agent.events()
        assert [e.kind for e in exit_seen][-1:] in ([], ["agent_exited"])
        assert list(agent.events()) == []  # after the agent's last event: ends at once
        late = list(session.events())  # the session's kept history, to its end
        assert late[0].kind == "session_opened" and late[-1].kind == "session_closed"
        assert late[-1].data["reason"] == "agent_exited"


def test_the_beginning_is_capped_and_the_stream_says_how_much_it_lacks(tmp_path: Path) -> None:
    n, cap = 70_000, 65_536
    history = [{"flood": {"count": n, "text": "x"}}]
    big = scenario(tmp_path, "big-replay", {"sessions": {"sess_big": {"history": history}}})
    with acp_host.Host() as host:
        everything = host.events()
        replayed = threading.Event()

        def drain() -> None:  # keeps the host reading; tells when the whole replay was dispatched
            count = 0
            for batch in everything.batches():
                count += sum(e.replay for e in batch)
                if count == n:
                    replayed.set()

        threading.Thread(target=drain, daemon=True).start()
        agent = host.spawn(mock(big))
        session = agent.load_session("sess_big", "/tmp")
        assert replayed.wait(T)
        stream = session.events()
        got = [stream.next(T) for _ in range(cap)]
        # The history holds the newest `earlyUpdateLimit` events: the oldest ones (its
        # `session_opened` among them) went, and the stream says how many.
        assert stream.missed == stream.dropped == n + 1 - cap
        seqs = [e.seq for e in got if e is not None]
        # The rest follow without a gap.
        assert seqs == list(range(seqs[0], seqs[0] + cap))
        assert all(e is not None and e.replay for e in got)
        with pytest.raises(acp_host.TimeoutError):
            stream.next(0.2)


def test_async_session_stream_starts_at_its_beginning() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock("load-replay"))
            loaded = await agent.load_session("sess_old", "/tmp")
            new = await agent.new_session("/tmp")
            async with loaded.events() as stream:
                task = asyncio.ensure_future(loaded.prompt("go"))
                got = await stream.collect_until(lambda e: e.kind == "turn_ended", T)
                await task
            assert got[0].kind == "session_opened" and sum(e.replay for e in got) == 8
            assert [e.kind for e in got[-3:]] == ["turn_started", "session_update", "turn_ended"]
            first = await new.events().next(T)
            assert first is not None and first.kind == "session_opened" and first.session == new.id

    asyncio.run(asyncio.wait_for(main(), T))


def test_async_concurrent_opens_keep_their_own_beginnings() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock("early-updates"))
            sessions = await asyncio.gather(*(agent.new_session("/tmp") for _ in range(4)))
            assert len({s.id for s in sessions}) == 4
            for s in sessions:
                got = await s.events().collect_until(lambda e: e.update_kind == "current_mode_update", T)
                assert kinds(got) == ["session_opened", *EARLY] and {e.session for e in got} == {s.id}

    asyncio.run(asyncio.wait_for(main(), T))


# ---------------------------------------------------------------------------- context managers


def test_session_context_manager_closes_it() -> None:
    with acp_host.Host() as host:
        everything = host.events()
        agent = host.spawn(mock())
        with agent.new_session("/tmp") as session:
            assert session.prompt("hi").stop_reason == "end_turn"
        assert agent.session(session.id) is None
        closed = everything.collect_until(lambda e: e.kind == "session_closed", T)[-1]
        assert closed.session == session.id and closed.data["reason"] == "closed"


def test_session_context_manager_keeps_the_body_exception_and_never_raises_for_closed_or_dead() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(mock())
        with pytest.raises(ValueError, match="body"):
            with agent.new_session("/tmp") as session:
                raise ValueError("body")
        assert agent.session(session.id) is None
        with agent.new_session("/tmp") as session:
            session.close()  # already closed on exit: fine
        with agent.new_session("/tmp") as session:
            agent.shutdown()  # the agent is gone on exit: fine
        other = host.spawn(mock())
        with pytest.raises(KeyError):
            with other.new_session("/tmp"):
                other.shutdown()
                raise KeyError("the agent is gone and the body failed")


def test_session_context_manager_without_session_close_forgets_it_locally(tmp_path: Path) -> None:
    no_close = scenario(tmp_path, "no-close", {"initialize": {"agentCapabilities": {"loadSession": True}}})
    with acp_host.Host(wire_events=True) as host:
        agent = host.spawn(mock(no_close))
        with pytest.raises(acp_host.UnsupportedError):
            agent.new_session("/tmp").close()  # close() itself keeps its semantics
        wire = host.events()
        with agent.new_session("/tmp") as session:
            pass
        assert agent.session(session.id) is not None  # still open at the agent
        # Forgotten here; a stream still starts at the session's beginning (the one rule).
        later = session.events()
        session.prompt("hi")
        assert later.next(T).kind == "session_opened"  # type: ignore[union-attr]
        sent = [e.data["message"].get("method") for e in wire.collect_until(lambda e: e.kind == "turn_ended", T)
                if e.kind == "wire" and e.data["direction"] == "out"]
        assert "session/close" not in sent


def test_async_session_context_manager() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock())
            async with await agent.new_session("/tmp") as session:
                assert (await session.prompt("hi")).stop_reason == "end_turn"
            assert agent.session(session.id) is None
            with pytest.raises(RuntimeError, match="body"):
                async with await agent.new_session("/tmp") as session:
                    await agent.shutdown()
                    raise RuntimeError("body")
            async with await (await host.spawn(mock())).new_session("/tmp") as other:
                await other.close()

    asyncio.run(asyncio.wait_for(main(), T))


# ---------------------------------------------------------------------------- per-call timeouts


def out_methods(events: List[acp_host.Event]) -> List[str]:
    return [e.data["message"].get("method", "") for e in events if e.kind == "wire" and e.data["direction"] == "out"]


def test_prompt_timeout_against_a_hanging_agent_cancels_and_settles_within_the_grace() -> None:
    with acp_host.Host(cancel_grace=0.3, wire_events=True) as host:
        agent = host.spawn(mock("hang"))
        session = agent.new_session("/tmp")
        stream = session.events()
        started = time.monotonic()
        with pytest.raises(acp_host.TimeoutError) as ei:
            session.prompt("go", timeout=0.4)
        took = time.monotonic() - started
        assert 0.65 <= took < 0.4 + 0.3 + 1.0, took
        err = ei.value
        assert isinstance(err, builtins.TimeoutError) and err.code == "timeout"
        assert err.data == {"what": "session/prompt", "afterMs": 400}
        ended = [e for e in stream.collect_until(lambda e: e.kind == "turn_ended", T) if e.kind == "turn_ended"]
        assert ended[-1].data["error"]["kind"] == "cancelled"
        # The agent is left usable: it still answers requests.
        assert agent.new_session("/tmp").id


def test_prompt_timeout_with_an_agent_that_honours_the_cancel() -> None:
    with acp_host.Host(cancel_grace=5, wire_events=True) as host:
        everything = host.events()
        agent = host.spawn(mock("wait-for-cancel"))
        session = agent.new_session("/tmp")
        started = time.monotonic()
        with pytest.raises(acp_host.TimeoutError):
            session.prompt("wait", timeout=0.3)
        assert time.monotonic() - started < 2.0, "the agent answered cancelled at once"
        evs = everything.collect_until(lambda e: e.kind == "turn_ended", T)
        assert "session/cancel" in out_methods(evs) and evs[-1].data["stopReason"] == "cancelled"
        with pytest.raises(acp_host.TimeoutError):  # the session is not left busy
            session.prompt("again", timeout=0.2)


def test_prompt_timeout_returns_an_answer_the_agent_gave_within_the_grace() -> None:
    with acp_host.Host(cancel_grace=5) as host:
        session = host.spawn(mock("ignore-cancel")).new_session("/tmp")
        result = session.prompt("go", timeout=0.3)  # it ignores the cancel, ends in ~1 s
        assert result.stop_reason == "end_turn" and "done." in result.text


def test_request_timeout_sends_cancel_request_and_raises(tmp_path: Path) -> None:
    hangs = scenario(tmp_path, "new-hangs", {"newSession": {"before": [{"hang": True}]}})
    with acp_host.Host(wire_events=True) as host:
        everything = host.events()
        agent = host.spawn(mock(hangs))
        started = time.monotonic()
        with pytest.raises(acp_host.TimeoutError) as ei:
            agent.new_session("/tmp", timeout=0.3)
        assert time.monotonic() - started < 2.0
        assert ei.value.data == {"what": "session/new", "afterMs": 300}
        evs = everything.collect_until(
            lambda e: e.kind == "wire" and e.data["message"].get("method") == "$/cancel_request", T)
        assert "session/new" in out_methods(evs)
        assert isinstance(agent.list_sessions(timeout=5)["sessions"], list)  # still answering


def test_spawn_timeout_gives_the_agent_up_and_leaves_no_process() -> None:
    with acp_host.Host(shutdown_grace=0.2) as host:
        started = time.monotonic()
        with pytest.raises(acp_host.TimeoutError) as ei:
            host.spawn(["sleep", "30"], timeout=0.3)  # never answers initialize
        assert time.monotonic() - started < 2.0 and ei.value.data["what"] == "spawn"


def test_timeout_must_be_a_non_negative_number() -> None:
    with acp_host.Host() as host:
        session = host.spawn(mock()).new_session("/tmp")
        with pytest.raises(acp_host.InvalidArgumentError):
            session.prompt("hi", timeout=-1)
        assert session.prompt("hi", timeout=float("inf")).stop_reason == "end_turn"
        session.set_mode("code", timeout=5)
        assert session.set_config_option("model", "mock-large", timeout=5)
        session.close(timeout=5)


def test_async_wait_for_cancels_the_turn_like_the_sync_timeout() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(cancel_grace=2) as host:
            agent = await host.spawn(mock("wait-for-cancel"))
            session = await agent.new_session("/tmp")
            stream = session.events()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(session.prompt("wait"), 0.3)
            evs = await stream.collect_until(lambda e: e.kind == "turn_ended", T)
            assert evs[-1].data["stopReason"] == "cancelled"

    asyncio.run(asyncio.wait_for(main(), T))


# ---------------------------------------------------------------------------- events=False


def test_events_false_queues_nothing_and_streams_end_at_once() -> None:
    with acp_host.Host(events=False) as host:
        stream = host.events()
        agent = host.spawn(mock())
        with agent.new_session("/tmp") as session:
            streams = [stream, agent.events(), session.events()]
            result = session.prompt("hi")
            assert result.stop_reason == "end_turn" and result.text
        for st in streams:
            assert st.next(T) is None and list(st) == []


def test_streams_created_after_the_host_closed_end() -> None:
    host = acp_host.Host()
    agent = host.spawn(mock())
    session = agent.new_session("/tmp")
    host.close()
    # They end. The first host stream has the host's events from its start, a session stream the
    # session's kept history; a live stream opened after the end has nothing.
    first = [e.kind for e in host.events()]
    assert first[0] == "agent_ready" and "agent_exited" in first
    assert list(host.events()) == [] and list(agent.events()) == []
    late = [e.kind for e in session.events()]
    assert late[0] == "session_opened" and late[-1] == "session_closed"


def test_async_events_false() -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(events=False) as host:
            agent = await host.spawn(mock())
            session = await agent.new_session("/tmp")
            assert (await session.prompt("hi")).stop_reason == "end_turn"
            assert [e async for e in session.events()] == []
            assert await host.events().next(T) is None

    asyncio.run(asyncio.wait_for(main(), T))

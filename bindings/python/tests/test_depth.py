"""Hostile JSON and working directories: what an agent nests 100,000 levels deep never reaches
``ev.data`` (the core refuses it, ``protocol_error`` ``too_deep``); JSON this interpreter cannot
decode raises ``ProtocolError``, never ``RecursionError``/``ValueError``; JSON we give that
cannot be sent raises ``InvalidArgumentError``; a ``cwd`` that is not an existing directory is a
typed error naming it, nothing started or sent."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, List

import pytest

import acp_host
from conftest import T, mock

#: A hand-written agent: on a prompt it sends an update nested 100,000 levels deep, one nested
#: exactly at the limit (100 levels), an update with a 5,000-digit integer, a request nested
#: 100,000 levels deep, then a plain update and the answer; its
#: extension methods answer deep or undecodable results. It reports the host's answers to its
#: own requests on stderr.
AGENT = r'''
import json, sys
N = 100_000
DEEP = "[" * N + "0" + "]" * N
BIG = "1" * 5000
AT_LIMIT = "[" * 97 + "0" + "]" * 97  # inside the message, its params and the update: 100

def send(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def update(text, meta):
    return ('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
            '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"},'
            '"_meta":%s}}}' % (text, meta))

for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method is None:
        err = msg.get("error") or {}
        sys.stderr.write("answer %s %s\n" % (json.dumps(rid), json.dumps(err.get("code"))))
        sys.stderr.flush()
    elif method == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}}))
    elif method == "session/new":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}}))
    elif method == "session/prompt":
        send(update("deep", DEEP))
        send(update("at-limit", AT_LIMIT))
        send(update("big", BIG))
        send('{"jsonrpc":"2.0","id":"d1","method":"_test/deep","params":{"x":%s}}' % DEEP)
        send(update("after", "{}"))
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}}))
    elif method == "_test/deep_result":
        send('{"jsonrpc":"2.0","id":%s,"result":{"x":%s}}' % (json.dumps(rid), DEEP))
    elif method == "_test/big_result":
        send('{"jsonrpc":"2.0","id":%s,"result":{"n":%s}}' % (json.dumps(rid), BIG))
    elif rid is not None:
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": msg.get("params")}))
'''

LIMIT = 100  # docs/ARCHITECTURE.md, "One nesting limit"


def agent_cmd() -> List[str]:
    return [sys.executable, "-c", AGENT]


def nested(levels: int) -> Any:
    v: Any = 0
    for _ in range(levels):
        v = [v]
    return v


def text_of(ev: acp_host.Event) -> str:
    """The chunk text of a session update, read from its JSON text (never from ``data``)."""
    for text in ("deep", "at-limit", "big", "after"):
        if f'"text":"{text}"' in ev.data_json:
            return text
    return ""


def run_turn(tmp_path: Path) -> tuple[List[acp_host.Event], acp_host.TurnResult]:
    with acp_host.Host() as host:
        stream = host.events()
        agent = host.spawn(agent_cmd())
        session = agent.new_session(tmp_path)
        result = session.prompt("go", timeout=T)
        # The agent reports the host's answer to its deep request on stderr, after it sent the
        # rest of the turn on stdout; the two pipes are read apart, so that line may come before
        # the turn's last updates: collect until both the turn's end and the answer were seen.
        seen = set()

        def both(e: acp_host.Event) -> bool:
            if e.kind == "turn_ended":
                seen.add("turn")
            elif e.kind == "agent_stderr" and "answer" in e.data_json:
                seen.add("answer")
            return len(seen) == 2

        events = stream.collect_until(both, T)
    return events, result


def test_a_deep_update_and_a_deep_request_never_reach_ev_data(tmp_path: Path) -> None:
    events, result = run_turn(tmp_path)
    assert result.stop_reason == "end_turn"
    assert result.text == "at-limitbigafter", "the turn went on past the deep messages"
    updates = [e for e in events if e.kind == "session_update"]
    assert [text_of(e) for e in updates] == ["at-limit", "big", "after"], "the deep update is not an event"
    (at_limit,) = [e for e in updates if text_of(e) == "at-limit"]
    assert at_limit.data["_meta"] == nested(97), "within the limit: forwarded whole, and decodes"
    for ev in events:
        assert len(ev.data_json) < 20_000, f"nothing deep is forwarded: {ev!r}"
        if text_of(ev) != "big":
            ev.data  # every other event decodes  # noqa: B018
    reports = [e.data for e in events if e.kind == "protocol_error" and e.data["reason"] == "too_deep"]
    assert [(r.get("method"), r.get("id")) for r in reports] == [("session/update", None), ("_test/deep", "d1")]
    assert all(r["limit"] == LIMIT for r in reports)
    answers = [e.data["line"] for e in events if e.kind == "agent_stderr" and "answer" in e.data["line"]]
    assert answers == ['answer "d1" -32600'], "the deep request was answered, so the agent is not left waiting"


def test_event_data_python_cannot_decode_raises_protocol_error(tmp_path: Path) -> None:
    events, _ = run_turn(tmp_path)
    (big,) = [e for e in events if e.kind == "session_update" and text_of(e) == "big"]
    assert "1" * 5000 in big.data_json, "the text is kept as it came"
    with pytest.raises(acp_host.ProtocolError) as ei:
        big.data  # noqa: B018
    assert ei.value.code == "protocol"
    assert isinstance(ei.value.__cause__, ValueError), "json's own error is the cause"
    assert not isinstance(ei.value, (ValueError, RecursionError))
    with pytest.raises(acp_host.ProtocolError):
        big.to_dict()
    # Asking again raises again (nothing half-decoded is kept).
    with pytest.raises(acp_host.ProtocolError):
        big.data  # noqa: B018


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="json's C recursion is counted against "
                    "sys.getrecursionlimit() only up to Python 3.11")
def test_a_recursion_error_while_decoding_is_a_protocol_error(tmp_path: Path) -> None:
    """The decoding failure path for nesting: an event within the core's limit (101 levels with its
    envelope) that this interpreter cannot decode, its recursion limit lowered, raises
    ``ProtocolError`` with json's ``RecursionError`` as its cause."""
    events, _ = run_turn(tmp_path)
    (at_limit,) = [e for e in events if e.kind == "session_update" and text_of(e) == "at-limit"]
    depth = 0
    while True:  # frames on the stack now
        try:
            sys._getframe(depth)
            depth += 1
        except ValueError:
            break
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 50)  # room to raise the error, not to decode 101 levels
    try:
        with pytest.raises(acp_host.ProtocolError) as ei:
            at_limit.to_dict()
    finally:
        sys.setrecursionlimit(old)
    assert isinstance(ei.value.__cause__, RecursionError)
    assert at_limit.to_dict()["data"]["_meta"] == nested(97), "decodes with the default limit"


def test_deep_or_undecodable_results_are_protocol_errors() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(agent_cmd())
        with pytest.raises(acp_host.ProtocolError) as ei:
            agent.ext_request("_test/deep_result", timeout=T)
        assert "deeper than" in str(ei.value)
        with pytest.raises(acp_host.ProtocolError):
            agent.ext_request("_test/big_result", timeout=T)
        # The connection carries on.
        assert agent.ext_request("_test/echo", {"a": 1}, timeout=T) == {"a": 1}


def test_json_we_give_that_would_nest_too_deep_is_invalid_argument() -> None:
    with acp_host.Host() as host:
        agent = host.spawn(agent_cmd())
        # Params are level 2 of the request (and the echoed result of the answer): 99 more levels
        # fit, 100 do not.
        fits = nested(LIMIT - 1)
        assert agent.ext_request("_test/echo", fits, timeout=T) == fits
        for levels in (LIMIT, 150, 100_000):  # the core's check, serde_json's, json.dumps'
            with pytest.raises(acp_host.InvalidArgumentError):
                agent.ext_request("_test/echo", nested(levels), timeout=T)
        assert agent.ext_request("_test/echo", timeout=T) == {}


def test_an_agent_cwd_that_is_not_a_directory_is_a_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with acp_host.Host() as host:
        for cwd, why in ((missing, "does not exist"), (a_file, "is not a directory")):
            with pytest.raises(acp_host.ConfigError) as ei:
                host.spawn(mock(), cwd=cwd)
            assert ei.value.code == "invalid_config"
            assert ei.value.data == {"path": "cwd"}
            assert str(cwd) in str(ei.value) and why in str(ei.value)
            assert "could not start agent" not in str(ei.value)
        host.spawn(mock(), cwd=tmp_path).close()


def test_a_session_cwd_that_is_not_a_directory_is_invalid_argument(tmp_path: Path) -> None:
    missing = tmp_path / "gone"

    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(mock())
            with pytest.raises(acp_host.InvalidArgumentError) as ei:
                await asyncio.wait_for(agent.new_session(missing), T)
            assert ei.value.data == {"path": "cwd"}
            assert str(missing) in str(ei.value) and "does not exist" in str(ei.value)
            session = await asyncio.wait_for(agent.new_session(tmp_path), T)
            assert session.id

    asyncio.run(main())


def test_the_limit_is_documented_where_the_faces_read_it() -> None:
    arch = (Path(__file__).resolve().parents[3] / "docs" / "ARCHITECTURE.md").read_text()
    assert f"`wire::MAX_JSON_DEPTH`, {LIMIT}" in arch
    assert json.loads(json.dumps(nested(LIMIT + 2))) == nested(LIMIT + 2), "json reads every event"

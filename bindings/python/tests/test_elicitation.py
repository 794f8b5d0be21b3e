"""Elicitation (``elicitation/create`` forms and URL consent, ``elicitation/complete``) through the
Python face, against the mock agent's ``elicitation`` scenario: a form for a tool call, then a URL
consent followed by ``elicitation/complete``. The agent echoes every answer it gets as a message
chunk ("form accept {...}", "url decline", "form error -32601"), so these tests check what the
agent really received, not only the host's events."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

import pytest

import acp_host
from conftest import T, mock

FORM = {"target": "staging", "replicas": 2}
ACCEPT_BOTH: Dict[str, acp_host.ElicitationAnswer] = {
    "form": {"action": "accept", "content": FORM},
    "url": {"action": "accept"},
}
SCHEMA_REQUIRED = ["target"]
URL = "https://example.invalid/login?turn=1"


class Run:
    def __init__(self, events: List[acp_host.Event], result: Any) -> None:
        self.events = events
        self.result = result

    def texts(self) -> List[str]:
        return [e.data["content"]["text"] for e in self.events if e.update_kind == "agent_message_chunk"]

    def form_accepted(self) -> Optional[Dict[str, Any]]:
        """The content the agent echoed for an accepted form ("form accept {...}"), if any."""
        for t in self.texts():
            if t.startswith("form accept "):
                return json.loads(t[len("form accept "):])  # type: ignore[no-any-return]
        return None

    def of(self, kind: str) -> List[Dict[str, Any]]:
        return [e.data for e in self.events if e.kind == kind]

    def client_capabilities(self) -> Dict[str, Any]:
        for e in self.events:
            if e.kind == "wire" and e.data["direction"] == "out" and e.data["message"].get("method") == "initialize":
                return e.data["message"]["params"]["clientCapabilities"]  # type: ignore[no-any-return]
        raise AssertionError("no initialize on the wire")

    def responses_sent(self) -> List[Dict[str, Any]]:
        """What the host answered each ``elicitation/create`` with, on the wire (result or error)."""
        asked = [e.data["message"]["id"] for e in self.events if e.kind == "wire" and e.data["direction"] == "in"
                 and e.data["message"].get("method") == "elicitation/create"]
        out = {json.dumps(e.data["message"].get("id")): e.data["message"] for e in self.events
               if e.kind == "wire" and e.data["direction"] == "out" and "method" not in e.data["message"]}
        return [out[json.dumps(i)].get("result") or out[json.dumps(i)].get("error") for i in asked]

    def stop_reason(self) -> str:
        assert isinstance(self.result, acp_host.TurnResult), repr(self.result)
        return self.result.stop_reason


def by_mode(answers: Dict[str, Any], seen: Optional[List[acp_host.ElicitationRequest]] = None,
            settled_at_call: Optional[List[bool]] = None) -> Callable[[acp_host.ElicitationRequest], Any]:
    def answer(req: acp_host.ElicitationRequest) -> Any:
        if seen is not None:
            seen.append(req)
        if settled_at_call is not None:
            settled_at_call.append(req.settled)
        return answers[req.mode]
    return answer


class Recorder:
    """A host's event stream that keeps everything pulled through it."""

    def __init__(self, stream: acp_host.EventStream) -> None:
        self.stream = stream
        self.events: List[acp_host.Event] = []

    def collect_until(self, stop: Callable[[acp_host.Event], bool]) -> List[acp_host.Event]:
        got = self.stream.collect_until(stop, T)
        self.events += got
        return got

    def next_request(self) -> int:
        """The id of the next ``elicitation_requested``."""
        return int(self.collect_until(lambda e: e.kind == "elicitation_requested")[-1].data["requestId"])


During = Callable[[acp_host.Host, acp_host.Session, Recorder], None]


def run_sync(tmp_path: Path, during: Optional[During] = None, scenario: str = "elicitation",
             **host_kw: Any) -> Run:
    """One `deploy` turn of the scenario on a sync Host (``during`` runs while the turn is in
    flight, e.g. to answer manually), then shutdown; every event up to ``agent_exited``."""
    with acp_host.Host(wire_events=True, **host_kw) as host:
        stream = Recorder(host.events())
        agent = host.spawn(mock(scenario))
        session = agent.new_session(tmp_path)
        box: Dict[str, Any] = {}

        def turn() -> None:
            try:
                box["r"] = session.prompt("deploy")
            except acp_host.AcpError as exc:
                box["r"] = exc

        th = threading.Thread(target=turn)
        th.start()
        if during is not None:
            during(host, session, stream)
        th.join(T)
        assert not th.is_alive(), "the turn must end"
        stream.collect_until(lambda e: e.kind == "turn_ended")
        agent.shutdown()
        stream.collect_until(lambda e: e.kind == "agent_exited")
    return Run(stream.events, box.get("r"))


async def run_async(tmp_path: Path, **host_kw: Any) -> Run:
    async with acp_host.AsyncHost(wire_events=True, **host_kw) as host:
        stream = host.events()
        agent = await host.spawn(mock("elicitation"))
        session = await agent.new_session(tmp_path)
        result = await asyncio.wait_for(session.prompt("deploy"), T)
        await agent.shutdown()
        events = await stream.collect_until(lambda e: e.kind == "agent_exited", T)
    return Run(events, result)


def assert_accepted_both(run: Run) -> None:
    """The agent got the form's values and the URL consent; the events say so, once each."""
    assert run.stop_reason() == "end_turn"
    assert run.client_capabilities()["elicitation"] == {"form": {}, "url": {}}
    texts = run.texts()
    assert run.form_accepted() == FORM, texts
    assert "url accept" in texts, texts
    requested = run.of("elicitation_requested")
    assert [r["mode"] for r in requested] == ["form", "url"]
    resolved = run.of("elicitation_resolved")
    assert [(r["requestId"], r["action"], r["decidedBy"]) for r in resolved] == [
        (requested[0]["requestId"], "accept", "host"),
        (requested[1]["requestId"], "accept", "host"),
    ]
    assert resolved[0]["fields"] == ["replicas", "target"]
    assert "content" not in resolved[0], "the values stay with the embedder"
    # Only the URL elicitation the agent asked about completes; its unknown id is ignored.
    assert run.of("elicitation_completed") == [{"elicitationId": "el_1"}]


# ------------------------------------------------------------------ not configured


def test_without_a_handler_elicitation_is_not_advertised_and_refused(tmp_path: Path) -> None:
    run = run_sync(tmp_path)
    assert run.stop_reason() == "end_turn"
    assert "elicitation" not in run.client_capabilities()
    texts = run.texts()
    assert "form error -32601" in texts and "url error -32601" in texts, texts
    assert not [e for e in run.events if e.kind.startswith("elicitation")]


# ------------------------------------------------------------------ a handler answers


@pytest.mark.parametrize("style", ["function", "coroutine"])
def test_a_handler_answers_the_form_and_the_url_consent(tmp_path: Path, style: str) -> None:
    seen: List[acp_host.ElicitationRequest] = []
    settled_at_call: List[bool] = []
    plain = by_mode(ACCEPT_BOTH, seen, settled_at_call)

    async def coroutine(req: acp_host.ElicitationRequest) -> Any:
        await asyncio.sleep(0.01)
        return plain(req)

    run = run_sync(tmp_path, on_elicitation=plain if style == "function" else coroutine)
    assert_accepted_both(run)

    form, url = seen
    assert form.mode == "form" and url.mode == "url"
    assert (form.agent, form.session_id, form.turn, form.tool_call_id) == (1, "sess_1", 1, "call_1")
    assert form.message == "Where should I deploy?"
    assert form.requested_schema is not None and form.requested_schema["required"] == SCHEMA_REQUIRED
    assert form.url is None and form.elicitation_id is None
    assert (url.url, url.elicitation_id, url.message) == (URL, "el_1", "Sign in to continue")
    assert url.requested_schema is None and url.tool_call_id is None and url.scope_request_id is None
    assert form.scope_known and url.scope_known
    # The request the handler sees is the event's payload.
    assert [r.to_dict() for r in seen] == run.of("elicitation_requested")
    assert form.id == form.request_id == run.of("elicitation_requested")[0]["requestId"]
    assert settled_at_call == [False, False], "pending while the handler runs"
    assert form.settled and url.settled, "settled once answered"


@pytest.mark.parametrize("style", ["function", "coroutine"])
def test_async_host_handlers_answer_on_the_loop(tmp_path: Path, style: str) -> None:
    loops: List[Optional[asyncio.AbstractEventLoop]] = []

    def plain(req: acp_host.ElicitationRequest) -> Any:
        loops.append(asyncio.get_running_loop())
        return ACCEPT_BOTH[req.mode]

    async def coroutine(req: acp_host.ElicitationRequest) -> Any:
        await asyncio.sleep(0.01)
        return plain(req)

    async def main() -> Run:
        run = await run_async(tmp_path, on_elicitation=plain if style == "function" else coroutine)
        assert loops == [asyncio.get_running_loop()] * 2, "both ran on the host's loop"
        return run

    assert_accepted_both(asyncio.run(main()))


@pytest.mark.parametrize("modes", ["form", ("form",), ["form"]])
def test_only_the_modes_given_are_advertised_and_asked(tmp_path: Path, modes: Any) -> None:
    seen: List[acp_host.ElicitationRequest] = []
    run = run_sync(tmp_path, on_elicitation=by_mode(ACCEPT_BOTH, seen), elicitation_modes=modes)
    assert run.stop_reason() == "end_turn"
    assert run.client_capabilities()["elicitation"] == {"form": {}}
    texts = run.texts()
    assert run.form_accepted() == FORM, texts
    assert "url error -32602" in texts, texts
    assert [r.mode for r in seen] == ["form"], "nobody is asked about a mode it cannot render"
    assert len(run.of("elicitation_requested")) == 1
    assert len(run.of("elicitation_resolved")) == 1
    assert not run.of("elicitation_completed")
    assert any(p["method"] == "elicitation/create" for p in run.of("protocol_error"))


def test_url_only_modes(tmp_path: Path) -> None:
    run = run_sync(tmp_path, on_elicitation=by_mode(ACCEPT_BOTH), elicitation_modes=["url"])
    assert run.client_capabilities()["elicitation"] == {"url": {}}
    texts = run.texts()
    assert "form error -32602" in texts and "url accept" in texts, texts
    assert [r["mode"] for r in run.of("elicitation_requested")] == ["url"]


def test_decline_and_cancel_reach_the_agent(tmp_path: Path) -> None:
    run = run_sync(tmp_path, on_elicitation=by_mode({"form": {"action": "decline"}, "url": {"action": "cancel"}}))
    texts = run.texts()
    assert any(t.startswith("form decline") for t in texts), texts
    assert "url cancel" in texts, texts
    assert [(r["action"], r["decidedBy"]) for r in run.of("elicitation_resolved")] == [
        ("decline", "host"), ("cancel", "host"),
    ]


# ------------------------------------------------------------------ fail-closed


async def _coroutine_raises(req: acp_host.ElicitationRequest) -> Any:
    raise RuntimeError("no UI")


def _raises(req: acp_host.ElicitationRequest) -> Any:
    raise RuntimeError("no UI")


BAD_HANDLERS: Dict[str, Callable[[acp_host.ElicitationRequest], Any]] = {
    "raises": _raises,
    "coroutine-raises": _coroutine_raises,
    "returns-none": lambda req: None,
    "returns-a-string": lambda req: "accept",
    "unknown-action": lambda req: {"action": "sure"},
    "no-action": lambda req: {"content": FORM},
    "content-not-an-object": lambda req: {"action": "accept", "content": ["staging"]},
    "content-not-json": lambda req: {"action": "accept", "content": {"target": object()}},
}


@pytest.mark.parametrize("kind", sorted(BAD_HANDLERS))
def test_a_failing_or_invalid_handler_cancels(tmp_path: Path, kind: str) -> None:
    run = run_sync(tmp_path, on_elicitation=BAD_HANDLERS[kind])
    assert run.stop_reason() == "end_turn", "the connection survives"
    texts = run.texts()
    assert any(t.startswith("form cancel") for t in texts), texts
    assert "url cancel" in texts, texts
    resolved = run.of("elicitation_resolved")
    assert len(resolved) == 2, "exactly one resolution each"
    for r in resolved:
        assert (r["action"], r["decidedBy"]) == ("cancel", "invalid_answer"), r
        assert isinstance(r.get("reason"), str) and r["reason"], r
    if "raises" in kind:
        assert "RuntimeError: no UI" in resolved[0]["reason"], resolved[0]


@pytest.mark.parametrize("content", [
    {"replicas": 2},                          # the required field is missing
    {"target": "moon"},                       # not one of the allowed values
    {"target": "staging", "replicas": 99},    # out of range
    {"target": "staging", "replicas": 1.5},   # not an integer
    {"target": "staging", "password": "x"},   # a field nobody asked for
])
def test_content_that_does_not_match_the_schema_cancels(tmp_path: Path, content: Dict[str, Any]) -> None:
    answers: Dict[str, acp_host.ElicitationAnswer] = {
        "form": {"action": "accept", "content": content},
        "url": {"action": "decline"},
    }
    run = run_sync(tmp_path, on_elicitation=by_mode(answers))
    texts = run.texts()
    assert any(t.startswith("form cancel") for t in texts), texts
    assert not any(t.startswith("form accept") for t in texts), "the values never reach the agent"
    assert "url decline" in texts, texts
    form = run.of("elicitation_resolved")[0]
    assert (form["action"], form["decidedBy"]) == ("cancel", "invalid_answer"), form
    assert form["reason"], form
    assert "fields" not in form


def test_a_slow_handler_times_out_as_cancel_and_its_coroutine_is_cancelled(tmp_path: Path) -> None:
    cancelled = threading.Event()

    async def slow(req: acp_host.ElicitationRequest) -> Any:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ACCEPT_BOTH[req.mode]

    started = time.monotonic()
    run = run_sync(tmp_path, on_elicitation=slow, elicitation_timeout=0.2)
    assert time.monotonic() - started < 10
    assert [(r["action"], r["decidedBy"]) for r in run.of("elicitation_resolved")] == [
        ("cancel", "timeout"), ("cancel", "timeout"),
    ]
    texts = run.texts()
    assert any(t.startswith("form cancel") for t in texts) and "url cancel" in texts, texts
    assert cancelled.wait(5), "the pending coroutine was cancelled"


# ------------------------------------------------------------------ manual answers


def test_manual_answers_are_checked_and_count_once(tmp_path: Path) -> None:
    def during(host: acp_host.Host, session: acp_host.Session, stream: Recorder) -> None:
        form = stream.next_request()
        with pytest.raises(acp_host.NotFoundError) as ei:
            host.respond_elicitation(form + 1000, {"action": "decline"})
        assert ei.value.code == "not_found" and isinstance(ei.value, LookupError)
        # Invalid content: raises, and the agent gets `cancel`.
        with pytest.raises(acp_host.InvalidArgumentError) as ia:
            host.respond_elicitation(form, {"action": "accept", "content": {"target": 7}})
        assert ia.value.code == "invalid_argument" and "target" in str(ia.value)
        with pytest.raises(acp_host.AlreadyResolvedError) as ar:
            host.respond_elicitation(form, {"action": "accept", "content": FORM})
        assert ar.value.code == "already_resolved"
        url = stream.next_request()
        host.respond_elicitation(url, {"action": "accept"})
        with pytest.raises(acp_host.AlreadyResolvedError):
            host.respond_elicitation(url, {"action": "decline"})

    run = run_sync(tmp_path, during, on_elicitation="manual")
    assert run.stop_reason() == "end_turn"
    texts = run.texts()
    assert any(t.startswith("form cancel") for t in texts), texts
    assert "url accept" in texts, texts
    resolved = run.of("elicitation_resolved")
    assert [(r["action"], r["decidedBy"]) for r in resolved] == [("cancel", "invalid_answer"), ("accept", "host")]
    assert run.of("elicitation_completed") == [{"elicitationId": "el_1"}]


def test_a_malformed_manual_answer_cancels_and_raises(tmp_path: Path) -> None:
    def during(host: acp_host.Host, session: acp_host.Session, stream: Recorder) -> None:
        form = stream.next_request()
        with pytest.raises(acp_host.InvalidArgumentError):
            host.respond_elicitation(form, {"action": "acept"})  # type: ignore[typeddict-item]
        url = stream.next_request()
        with pytest.raises(acp_host.InvalidArgumentError):
            host.respond_elicitation(url, "accept")  # type: ignore[arg-type]
        with pytest.raises(acp_host.AlreadyResolvedError):
            host.respond_elicitation(url, {"action": "accept"})

    run = run_sync(tmp_path, during, on_elicitation="manual")
    texts = run.texts()
    assert any(t.startswith("form cancel") for t in texts) and "url cancel" in texts, texts
    assert [r["action"] for r in run.of("elicitation_resolved")] == ["cancel", "cancel"]


def test_manual_answers_on_async_host(tmp_path: Path) -> None:
    async def main() -> Run:
        async with acp_host.AsyncHost(on_elicitation="manual") as host:
            stream = host.events()
            agent = await host.spawn(mock("elicitation"))
            session = await agent.new_session(tmp_path)
            turn = asyncio.ensure_future(session.prompt("deploy"))
            events = await stream.collect_until(lambda e: e.kind == "elicitation_requested", T)
            form = events[-1].data["requestId"]
            with pytest.raises(acp_host.NotFoundError):
                await host.respond_elicitation(form + 1000, {"action": "cancel"})
            await host.respond_elicitation(form, {"action": "accept", "content": FORM})
            with pytest.raises(acp_host.AlreadyResolvedError):
                await host.respond_elicitation(form, {"action": "decline"})
            events += await stream.collect_until(lambda e: e.kind == "elicitation_requested", T)
            await host.respond_elicitation(events[-1].data["requestId"], {"action": "decline"})
            result = await asyncio.wait_for(turn, T)
            await agent.shutdown()
            events += await stream.collect_until(lambda e: e.kind == "agent_exited", T)
        return Run(events, result)

    run = asyncio.run(main())
    assert run.stop_reason() == "end_turn"
    texts = run.texts()
    assert run.form_accepted() == FORM and "url decline" in texts, texts
    assert [(r["action"], r["decidedBy"]) for r in run.of("elicitation_resolved")] == [
        ("accept", "host"), ("decline", "host"),
    ]


def test_manual_requests_time_out_as_cancel(tmp_path: Path) -> None:
    run = run_sync(tmp_path, on_elicitation="manual", elicitation_timeout=0.2)
    assert run.stop_reason() == "end_turn"
    assert [(r["action"], r["decidedBy"]) for r in run.of("elicitation_resolved")] == [
        ("cancel", "timeout"), ("cancel", "timeout"),
    ]


# ------------------------------------------------------------------ session/cancel


@pytest.mark.parametrize("handler", ["manual", "coroutine"])
def test_session_cancel_answers_a_pending_elicitation_cancel(tmp_path: Path, handler: str) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def waits(req: acp_host.ElicitationRequest) -> Any:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ACCEPT_BOTH[req.mode]

    def during(host: acp_host.Host, session: acp_host.Session, stream: Recorder) -> None:
        form = stream.next_request()
        if handler == "coroutine":
            assert started.wait(T), "the handler runs"
        session.cancel()
        resolved = stream.collect_until(lambda e: e.kind == "elicitation_resolved")[-1].data
        assert (resolved["requestId"], resolved["action"], resolved["decidedBy"]) == (form, "cancel", "cancelled")
        with pytest.raises(acp_host.AlreadyResolvedError):
            host.respond_elicitation(form, {"action": "accept", "content": FORM})

    on: Union[str, Callable[[acp_host.ElicitationRequest], Any]] = "manual" if handler == "manual" else waits
    run = run_sync(tmp_path, during, on_elicitation=on)
    assert run.stop_reason() == "cancelled"
    # The agent ends its turn at session/cancel (its echo is not sent): the wire shows the answer.
    assert run.responses_sent()[0] == {"action": "cancel"}
    resolved = run.of("elicitation_resolved")
    assert all((r["action"], r["decidedBy"]) == ("cancel", "cancelled") for r in resolved), resolved
    assert len(resolved) == len(run.of("elicitation_requested"))
    if handler == "coroutine":
        assert cancelled.wait(5), "the pending coroutine was cancelled"


def test_a_handler_is_not_left_running_for_a_request_settled_before_it_started(tmp_path: Path) -> None:
    """session/cancel right after the request arrives, while the host may still be starting the
    handler: it is then not called at all, or cancelled, never left running for a settled request
    (a UI would show a form nobody waits for)."""
    finished = threading.Event()

    async def slow(req: acp_host.ElicitationRequest) -> Any:
        await asyncio.sleep(1.0)
        finished.set()
        return {"action": "cancel"}

    def during(host: acp_host.Host, session: acp_host.Session, stream: Recorder) -> None:
        stream.next_request()
        session.cancel()

    run = run_sync(tmp_path, during, on_elicitation=slow)
    assert run.stop_reason() == "cancelled"
    resolved = run.of("elicitation_resolved")
    assert resolved and all((r["action"], r["decidedBy"]) == ("cancel", "cancelled") for r in resolved), resolved
    assert not finished.wait(1.5), "the handler ran on for a settled request"


# ------------------------------------------------------------------ options


@pytest.mark.parametrize("kw", [
    {"on_elicitation": 42},
    {"on_elicitation": "auto"},
    {"on_elicitation": "manual", "elicitation_modes": ("form", "sms")},
    {"on_elicitation": "manual", "elicitation_timeout": -1},
])
def test_bad_options_raise(kw: Dict[str, Any]) -> None:
    with pytest.raises(acp_host.InvalidArgumentError):
        acp_host.Host(**kw)

    async def main() -> None:
        with pytest.raises(acp_host.InvalidArgumentError):
            acp_host.AsyncHost(**kw)

    asyncio.run(main())


def test_the_types_are_exported() -> None:
    for name in ("ElicitationRequest", "ElicitationAnswer", "ElicitationAccept", "ElicitationDecline",
                 "ElicitationCancel", "ElicitationMode"):
        assert name in acp_host.__all__ and hasattr(acp_host, name), name
    req = acp_host.ElicitationRequest._from_json(json.dumps({
        "requestId": 3, "agent": 1, "sessionId": None, "toolCallId": None, "scopeRequestId": 7,
        "turn": None, "message": "m", "mode": "url", "elicitationId": "e", "url": "https://x.invalid",
    }))
    assert (req.id, req.scope_request_id, req.url, req.settled) == (3, 7, "https://x.invalid", False)
    assert req.scope_known is True, "absent means known (older payloads)"
    unknown = acp_host.ElicitationRequest._from_json(json.dumps({
        "requestId": 4, "agent": 1, "sessionId": None, "toolCallId": None, "scopeRequestId": "r-1",
        "scopeKnown": False, "turn": None, "message": "m", "mode": "url", "elicitationId": "e",
        "url": "https://x.invalid",
    }))
    assert unknown.scope_known is False and unknown.to_dict()["scopeKnown"] is False


def test_request_scoped_elicitations_naming_no_request_of_the_host_are_asked(tmp_path: Path) -> None:
    seen: List[acp_host.ElicitationRequest] = []

    def handler(req: acp_host.ElicitationRequest) -> Dict[str, Any]:
        seen.append(req)
        return {"action": "accept", "content": {"name": "ws"}} if req.mode == "form" else {"action": "decline"}

    run = run_sync(tmp_path, scenario="elicitation-unknown-request", on_elicitation=handler)
    assert run.texts() == ['form accept {"name":"ws"}', "url decline"]
    assert [(r.mode, r.scope_request_id, r.scope_known, r.session_id) for r in seen] == [
        ("form", "agent-req-1", False, None), ("url", 9999, False, None)]
    assert [d["scopeKnown"] for d in run.of("elicitation_requested")] == [False, False]
    # Fail-closed as any other: content off the schema cancels.
    bad = run_sync(tmp_path, scenario="elicitation-unknown-request",
                   on_elicitation=lambda r: {"action": "accept", "content": {"name": ""}}
                   if r.mode == "form" else {"action": "accept"})
    assert bad.texts()[0].startswith("form cancel"), bad.texts()
    assert bad.of("elicitation_resolved")[0]["decidedBy"] == "invalid_answer"

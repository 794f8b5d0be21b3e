"""Cross-face conformance: every case of fixtures/scenarios/conformance/cases.json through the
sync ``Host`` and the asyncio ``AsyncHost`` must produce the normalised trace in expected/<case>.json
(the same traces the Rust, C and Node faces produce)."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import acp_host
from conftest import ROOT, SCENARIOS, T, mock

DOC = json.loads((SCENARIOS / "conformance" / "cases.json").read_text())
CASES = {c["name"]: c for c in DOC["cases"]}
CWD = DOC["cwd"]


def prepare() -> None:
    os.makedirs(CWD, exist_ok=True)
    # Other faces' runs share this directory (side by side in scripts/test): a file already
    # right is left alone, another one replaced at once (a rename), never seen empty.
    for name, content in DOC["files"].items():
        path = os.path.join(CWD, name)
        try:
            with open(path, newline="") as f:
                if f.read() == content:
                    continue
        except OSError:
            pass
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", newline="") as f:
            f.write(content)
        os.replace(tmp, path)


def normalise(events: List[acp_host.Event]) -> List[Dict[str, Any]]:
    out = []
    for ev in events:
        if ev.kind in ("agent_stderr", "terminal_exited"):
            continue
        data = ev.data
        if ev.kind == "agent_ready":
            data.pop("pid", None)
        elif ev.kind == "agent_exited":
            data.pop("stderrTail", None)
        out.append({"kind": ev.kind, "session": ev.session, "turn": ev.turn, "replay": ev.replay, "data": data})
    return out


def matches(ev: acp_host.Event, spec: str) -> bool:
    kind, _, update = spec.partition(":")
    if update:
        return ev.kind == kind and ev.update_kind == update
    return ev.kind == kind


def host_kwargs(case: Dict[str, Any], aio: bool = False) -> Dict[str, Any]:
    kw: Dict[str, Any] = {}
    perm = case.get("permission", "deny")
    if perm == "allow":
        kw["on_permission"] = lambda req: req.option_id("allow_once")
    elif perm == "manual":
        kw["on_permission"] = "manual"
    if "maxLineBytes" in case:
        kw["max_line_bytes"] = case["maxLineBytes"]
    if "cancelGraceMs" in case:
        kw["cancel_grace"] = case["cancelGraceMs"] / 1000
    if "unstable" in case:
        kw["unstable"] = case["unstable"]
    if "elicitation" in case:
        # Advertise exactly the modes given; answer every elicitation of a mode with its answer
        # (a plain function on Host, a coroutine function on AsyncHost).
        answers: Dict[str, Any] = case["elicitation"]
        kw["elicitation_modes"] = tuple(answers)
        if aio:
            async def answer(req: acp_host.ElicitationRequest) -> Any:
                return answers[req.mode]

            kw["on_elicitation"] = answer
        else:
            kw["on_elicitation"] = lambda req: answers[req.mode]
    if case.get("terminalAuth"):
        # The "user" logs in: the login leaves the credentials file the mock agent looks for.
        def login(cmd: Dict[str, Any]) -> int:
            Path(cmd["env"]["ACP_MOCK_CREDENTIALS"]).write_text("logged-in\n")
            return 0

        if aio:
            async def login_async(cmd: Dict[str, Any]) -> int:
                return login(cmd)

            kw["on_terminal_auth"] = login_async
        else:
            kw["on_terminal_auth"] = login
    if "ext" in case:
        # Serve the agent's extension requests from the case's table (a method not in it: -32601),
        # a plain function on Host, a coroutine function on AsyncHost.
        table: Dict[str, Any] = case["ext"]

        def serve(method: str, params: Any) -> Any:
            entry = table.get(method)
            if entry is None:
                raise acp_host.ServiceError("method not found", rpc_code=-32601)
            if "result" in entry:
                return entry["result"]
            err = entry["error"]
            raise acp_host.ServiceError(err.get("message", "error"), rpc_code=err.get("code", -32603))

        if aio:
            async def serve_async(method: str, params: Any) -> Any:
                return serve(method, params)

            kw["on_ext_request"] = serve_async
        else:
            kw["on_ext_request"] = serve
    return kw


def check_value(what: str, got: Any, expect: Optional[str]) -> None:
    """A call's value (a steer's outcome, a status, a title, a mode) against ``expect`` (no
    ``expect``, or an ``error:`` one, which the call would have raised: nothing to compare)."""
    if expect is not None and not expect.startswith("error:"):
        assert got == expect, f"{what}: got {got!r}, want {expect!r}"


def check_steer(session: Any, op: Dict[str, Any]) -> None:
    """A ``steerOn`` steer of a prompt op (sync API): its outcome is ``steerExpect``."""
    try:
        r = session.steer(op["steer"])
    except acp_host.AcpError as exc:
        expect_error("steer", exc, op.get("steerExpect"))
    else:
        check_value("steer", r.outcome, op.get("steerExpect"))


async def check_steer_async(session: Any, op: Dict[str, Any]) -> None:
    try:
        r = await session.steer(op["steer"])
    except acp_host.AcpError as exc:
        expect_error("steer", exc, op.get("steerExpect"))
    else:
        check_value("steer", r.outcome, op.get("steerExpect"))


def current_mode(d: acp_host.SessionDefaults) -> Any:
    return (d.modes or {}).get("currentModeId")


def expect_error(what: str, exc: BaseException, expect: Optional[str]) -> None:
    assert expect and expect.startswith("error:"), f"{what} failed: {exc!r}"
    assert isinstance(exc, acp_host.AcpError), repr(exc)
    assert exc.code == expect[len("error:"):], f"{what}: {exc!r}"


def sid(session: Any) -> str:
    """The current session's id (for the ops without ``sessionId``)."""
    assert session is not None
    return str(session.id)


_CREDENTIALS = tempfile.TemporaryDirectory(prefix="acp-host-py-creds-")  # removed at exit


def credentials_env() -> Dict[str, Optional[str]]:
    """The mock agent's credentials file: a fresh path per case (a terminal login creates it)."""
    return {"ACP_MOCK_CREDENTIALS": str(Path(_CREDENTIALS.name) / f"credentials-{uuid.uuid4().hex}")}


def run_sync(case: Dict[str, Any], spawn: Optional[Dict[str, Any]] = None,
             host_extra: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """The case through ``Host``; ``spawn``: the agent's ``spawn`` arguments instead of the mock
    agent's (a replay), ``host_extra``: more host options (``record``)."""
    trace: List[acp_host.Event] = []
    env = credentials_env()
    with acp_host.Host(**host_kwargs(case), **(host_extra or {})) as host:
        events = host.events()
        if "spawnExpect" in case:
            with pytest.raises(acp_host.AcpError) as ei:
                host.spawn(mock(case["scenario"]), env=env)
            assert ei.value.code == case["spawnExpect"][len("error:"):]
            trace += events.collect_until(lambda e: e.kind == "agent_exited", T)
            return normalise(trace)
        agent = host.spawn(**(spawn or {"command": mock(case["scenario"]), "env": env}))
        current: Optional[acp_host.Session] = None
        exited = False
        for op in case["ops"]:
            name, expect = op["op"], op.get("expect")
            try:
                if name == "new_session":
                    current = agent.new_session(CWD)
                elif name in ("load_session", "resume_session", "fork_session"):
                    fn = {"load_session": agent.load_session, "resume_session": agent.resume_session,
                          "fork_session": agent.fork_session}[name]
                    current = fn(op["sessionId"], CWD)
                elif name == "prompt":
                    assert current is not None
                    session = current
                    box: Dict[str, Any] = {}

                    def turn() -> None:
                        try:
                            box["result"] = session.prompt(op.get("content") or op["text"])
                        except BaseException as exc:  # noqa: BLE001
                            box["error"] = exc

                    th = threading.Thread(target=turn)
                    th.start()
                    if "steerOn" in op:
                        trace += events.collect_until(lambda e: matches(e, op["steerOn"]), T)
                        check_steer(session, op)
                    if "cancelOn" in op:
                        trace += events.collect_until(lambda e: matches(e, op["cancelOn"]), T)
                        session.cancel()
                    # v2: cancel the tool call / terminal the matching update names; the call
                    # returns the agent's acceptance (the confirming update follows in the trace).
                    for key, field in (("cancelToolCallOn", "toolCallId"), ("cancelTerminalOn", "terminalId")):
                        if key in op:
                            seen = events.collect_until(lambda e, on=op[key]: matches(e, on), T)
                            trace += seen
                            cid = seen[-1].data[field]
                            cancel = session.cancel_tool_call if key == "cancelToolCallOn" else session.cancel_terminal
                            assert cancel(cid) == {}, key
                    if "abortOn" in op:
                        # The sync API's Stop from another thread: cancel() settles the blocked
                        # prompt within cancel_grace even when the agent ignores it.
                        trace += events.collect_until(lambda e: matches(e, op["abortOn"]), T)
                        session.cancel()
                    th.join(T)
                    assert not th.is_alive(), "prompt hung"
                    if "error" in box:
                        expect_error(name, box["error"], expect)
                        exited = exited or box["error"].code == "agent_exited"
                    else:
                        assert box["result"].stop_reason == expect
                    # A prompt refused locally (`unsupported`: nothing sent) has no turn; `turns`:
                    # a queued steer is a turn of its own after the prompt's.
                    if expect != "error:unsupported":
                        for _ in range(op.get("turns", 1)):
                            trace += events.collect_until(lambda e: e.kind == "turn_ended", T)
                    continue
                elif name == "steer":
                    assert current is not None
                    outcome = current.steer(op["text"]).outcome
                    check_value(name, outcome, expect)
                    if outcome == "prompted":
                        trace += events.collect_until(lambda e: e.kind == "turn_ended", T)
                elif name == "session_status":
                    check_value(name, agent.session_status(op.get("sessionId") or sid(current)).status, expect)
                elif name == "set_title":
                    check_value(name, agent.set_session_title(op.get("sessionId") or sid(current), op["title"]), expect)
                elif name == "archive_session":
                    agent.archive_session(op.get("sessionId") or sid(current))
                elif name == "unarchive_session":
                    agent.unarchive_session(op.get("sessionId") or sid(current))
                elif name == "session_options":
                    check_value(name, current_mode(agent.session_options(CWD, session_id=op.get("sessionId"))), expect)
                elif name == "set_mode":
                    assert current is not None
                    current.set_mode(op["modeId"])
                elif name == "set_config_option":
                    assert current is not None
                    current.set_config_option(op["configId"], op["value"])
                elif name == "authenticate":
                    agent.authenticate(op["methodId"])
                elif name == "logout":
                    agent.logout()
                elif name == "terminal_auth":
                    agent = agent.terminal_auth(op["methodId"])
                    # The old agent's exit and the new one's agent_ready are in the trace.
                    trace += events.collect_until(lambda e: e.kind == "agent_ready", T)
                elif name == "set_model":
                    assert current is not None
                    current.set_model(op["modelId"])
                elif name == "list_sessions":
                    agent.list_sessions()
                elif name == "close_session":
                    assert current is not None
                    current.close()
                elif name == "delete_session":
                    agent.delete_session(op["sessionId"])
                elif name == "shutdown":
                    agent.shutdown()
                    exited = True
                else:
                    raise AssertionError(f"unknown op {name}")
            except acp_host.AcpError as exc:
                expect_error(name, exc, expect)
                continue
            assert not (expect or "").startswith("error:"), f"{name}: expected {expect}"
        assert exited, "a case ends with shutdown or an agent exit"
        last = agent.id
        trace += events.collect_until(lambda e: e.kind == "agent_exited" and e.agent == last, T)
    return normalise(trace)


async def run_async(case: Dict[str, Any]) -> List[Dict[str, Any]]:
    trace: List[acp_host.Event] = []
    env = credentials_env()
    async with acp_host.AsyncHost(**host_kwargs(case, aio=True)) as host:
        events = host.events()
        if "spawnExpect" in case:
            with pytest.raises(acp_host.AcpError) as ei:
                await host.spawn(mock(case["scenario"]), env=env)
            assert ei.value.code == case["spawnExpect"][len("error:"):]
            trace += await events.collect_until(lambda e: e.kind == "agent_exited", T)
            return normalise(trace)
        agent = await host.spawn(mock(case["scenario"]), env=env)
        current: Optional[acp_host.AsyncSession] = None
        exited = False
        for op in case["ops"]:
            name, expect = op["op"], op.get("expect")
            try:
                if name == "new_session":
                    current = await agent.new_session(CWD)
                elif name in ("load_session", "resume_session", "fork_session"):
                    afn = {"load_session": agent.load_session, "resume_session": agent.resume_session,
                           "fork_session": agent.fork_session}[name]
                    current = await afn(op["sessionId"], CWD)
                elif name == "prompt":
                    assert current is not None
                    task = asyncio.ensure_future(current.prompt(op.get("content") or op["text"]))
                    if "steerOn" in op:
                        trace += await events.collect_until(lambda e: matches(e, op["steerOn"]), T)
                        await check_steer_async(current, op)
                    if "cancelOn" in op:
                        trace += await events.collect_until(lambda e: matches(e, op["cancelOn"]), T)
                        await current.cancel()
                    for key, field in (("cancelToolCallOn", "toolCallId"), ("cancelTerminalOn", "terminalId")):
                        if key in op:
                            seen = await events.collect_until(lambda e, on=op[key]: matches(e, on), T)
                            trace += seen
                            cid = seen[-1].data[field]
                            acancel = current.cancel_tool_call if key == "cancelToolCallOn" else current.cancel_terminal
                            assert await acancel(cid) == {}, key
                    if "abortOn" in op:
                        # asyncio's Stop: the task raises CancelledError at once; the turn still
                        # ends (the agent's answer, or `cancelled` after cancel_grace).
                        trace += await events.collect_until(lambda e: matches(e, op["abortOn"]), T)
                        task.cancel()
                        with pytest.raises(asyncio.CancelledError):
                            await task
                        trace += await events.collect_until(lambda e: e.kind == "turn_ended", T)
                        continue
                    try:
                        result = await asyncio.wait_for(task, T)
                    except acp_host.AcpError as exc:
                        expect_error(name, exc, expect)
                        exited = exited or exc.code == "agent_exited"
                    else:
                        assert result.stop_reason == expect
                    if expect != "error:unsupported":
                        for _ in range(op.get("turns", 1)):
                            trace += await events.collect_until(lambda e: e.kind == "turn_ended", T)
                    continue
                elif name == "steer":
                    assert current is not None
                    outcome = (await current.steer(op["text"])).outcome
                    check_value(name, outcome, expect)
                    if outcome == "prompted":
                        trace += await events.collect_until(lambda e: e.kind == "turn_ended", T)
                elif name == "session_status":
                    status = await agent.session_status(op.get("sessionId") or sid(current))
                    check_value(name, status.status, expect)
                elif name == "set_title":
                    title = await agent.set_session_title(op.get("sessionId") or sid(current), op["title"])
                    check_value(name, title, expect)
                elif name == "archive_session":
                    await agent.archive_session(op.get("sessionId") or sid(current))
                elif name == "unarchive_session":
                    await agent.unarchive_session(op.get("sessionId") or sid(current))
                elif name == "session_options":
                    defaults = await agent.session_options(CWD, session_id=op.get("sessionId"))
                    check_value(name, current_mode(defaults), expect)
                elif name == "set_mode":
                    assert current is not None
                    await current.set_mode(op["modeId"])
                elif name == "set_config_option":
                    assert current is not None
                    await current.set_config_option(op["configId"], op["value"])
                elif name == "authenticate":
                    await agent.authenticate(op["methodId"])
                elif name == "logout":
                    await agent.logout()
                elif name == "terminal_auth":
                    agent = await agent.terminal_auth(op["methodId"])
                    trace += await events.collect_until(lambda e: e.kind == "agent_ready", T)
                elif name == "set_model":
                    assert current is not None
                    await current.set_model(op["modelId"])
                elif name == "list_sessions":
                    await agent.list_sessions()
                elif name == "close_session":
                    assert current is not None
                    await current.close()
                elif name == "delete_session":
                    await agent.delete_session(op["sessionId"])
                elif name == "shutdown":
                    await agent.shutdown()
                    exited = True
                else:
                    raise AssertionError(f"unknown op {name}")
            except acp_host.AcpError as exc:
                expect_error(name, exc, expect)
                continue
            assert not (expect or "").startswith("error:"), f"{name}: expected {expect}"
        assert exited, "a case ends with shutdown or an agent exit"
        last_id = agent.id
        trace += await events.collect_until(lambda e: e.kind == "agent_exited" and e.agent == last_id, T)
    return normalise(trace)


def expected(name: str) -> List[Dict[str, Any]]:
    doc = json.loads((SCENARIOS / "conformance" / "expected" / f"{name}.json").read_text())
    return doc["events"]  # type: ignore[no-any-return]


def compare(name: str, got: List[Dict[str, Any]], want: Optional[List[Dict[str, Any]]] = None) -> None:
    want = expected(name) if want is None else want
    for i, (w, g) in enumerate(zip(want, got)):
        assert g == w, f"{name}: trace differs at event {i}\n  want: {json.dumps(w)}\n  got:  {json.dumps(g)}"
    assert len(got) == len(want), f"{name}: {len(got)} events, want {len(want)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_sync_trace_matches(name: str) -> None:
    prepare()
    compare(name, run_sync(CASES[name]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_async_trace_matches(name: str) -> None:
    prepare()
    compare(name, asyncio.run(run_async(CASES[name])))


def test_every_expected_trace_has_a_case() -> None:
    files = {p.stem for p in (SCENARIOS / "conformance" / "expected").glob("*.json")}
    assert files == set(CASES)


# ---- recordings of every face, replayed through this one (fixtures/recordings/faces) ----------

FACES = ("c", "kotlin", "node", "python", "rust")
RECORDINGS = ROOT / "fixtures" / "recordings" / "faces"
FACE_DOC = json.loads((RECORDINGS / "cases.json").read_text())


def without_process(trace: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """A trace as a replay inside the host gives it: no process, so no exit code, signal or
    stderr tail (at any depth), and no message of an ``agent_exited`` error (it names them)."""
    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            drop = {"exitCode", "signal", "stderrTail"}
            if v.get("kind") == "agent_exited":
                drop.add("message")
            return {k: strip(x) for k, x in v.items() if k not in drop}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return [strip(ev) for ev in trace]


def recording(face: str, name: str) -> Path:
    """The face's recording of case ``name``; skips when the face has none at all yet, fails
    when only this one is missing."""
    d = RECORDINGS / face
    if not d.is_dir():
        reason = f"no recordings of the {face} face: {d} does not exist (ACP_RECORDINGS_OUT of its conformance test)"
        print(reason)
        pytest.skip(reason)
    file = d / f"{name}.acprec.jsonl"
    assert file.is_file(), f"{face}/{name}: no recording at {file}"
    return file


def test_record_this_faces_fixtures_when_asked() -> None:
    """With ``ACP_RECORDINGS_OUT=DIR``: the cases of fixtures/recordings/faces/cases.json run once
    more, recorded (host option ``record``) into ``DIR/python/<case>.acprec.jsonl``."""
    out = os.environ.get("ACP_RECORDINGS_OUT")
    if not out:
        pytest.skip("ACP_RECORDINGS_OUT not set: nothing to record")
    d = Path(out) / "python"
    d.mkdir(parents=True, exist_ok=True)
    for name in FACE_DOC["cases"]:
        file = d / f"{name}.acprec.jsonl"
        if file.exists():
            file.unlink()
        prepare()
        compare(name, run_sync(CASES[name], host_extra={"record": {"file": str(file)}}))
        assert file.is_file(), f"{name}: nothing recorded at {file}"


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("name", FACE_DOC["cases"])
def test_every_faces_recording_replays_to_the_expected_trace_without_divergence(
        face: str, name: str, tmp_path: Path) -> None:
    file = recording(face, name)
    out = tmp_path / "report.json"
    prepare()
    got = run_sync(CASES[name], spawn={"replay": acp_host.Replay(file, pace="fast", report=out)})
    r = json.loads(out.read_text())
    assert r["divergenceCount"] == 0 and r["complete"] is True, f"{face}/{name}: {json.dumps(r, indent=2)}"
    compare(f"{face}/{name}", without_process(got), without_process(expected(name)))


@pytest.mark.parametrize("face", FACES)
def test_a_changed_permission_answer_is_an_answer_differs_divergence(face: str, tmp_path: Path) -> None:
    changed = FACE_DOC["changed"]
    name = changed["case"]
    file = recording(face, name)
    out = tmp_path / "report.json"
    prepare()
    run_sync(dict(CASES[name], permission=changed["permission"]),
             spawn={"replay": acp_host.Replay(file, pace="fast", report=out)})
    r = json.loads(out.read_text())
    assert any(d["kind"] == "answer_differs" and d["method"] == "session/request_permission"
               for d in r["divergences"]), f"{face}: {json.dumps(r, indent=2)}"

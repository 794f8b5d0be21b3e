"""The fail-closed matrix through the Python face: every way a permission request can end without a
valid "allow" denies, resolves exactly once, reaches the agent, and the file write does not happen."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

import acp_host
from conftest import T, mock


class Run:
    def __init__(self, events: List[acp_host.Event], cwd: Path, result: Any) -> None:
        self.events = events
        self.cwd = cwd
        self.result = result

    def resolutions(self) -> List[Dict[str, Any]]:
        return [e.data for e in self.events if e.kind == "permission_resolved"]

    def written(self) -> bool:
        return (self.cwd / "hello.txt").exists()

    def tool_status(self) -> Optional[str]:
        for e in reversed(self.events):
            if e.update_kind == "tool_call_update" and "status" in e.data:
                return e.data["status"]  # type: ignore[no-any-return]
        return None


def permission_write(tmp_path: Path, during: Callable[[acp_host.Host, acp_host.Session, int], None] = lambda h, s, i: None,
                     **host_kw: Any) -> Run:
    cwd = tmp_path.resolve()
    with acp_host.Host(**host_kw) as host:
        stream = host.events()
        agent = host.spawn(mock("permission-write"))
        session = agent.new_session(cwd)
        box: Dict[str, Any] = {}
        th = threading.Thread(target=lambda: box.setdefault("r", _safe(lambda: session.prompt("write"))))
        th.start()
        events = stream.collect_until(lambda e: e.kind == "permission_requested", T)
        during(host, session, events[-1].data["requestId"])
        th.join(T)
        assert not th.is_alive(), "the turn must end"
        agent.shutdown()
        events += stream.collect_until(lambda e: e.kind == "agent_exited", T)
    return Run(events, cwd, box.get("r"))


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except acp_host.AcpError as exc:
        return exc


def assert_denied(run: Run, decided_by: str) -> None:
    res = run.resolutions()
    assert len(res) == 1, f"exactly one resolution: {res}"
    assert res[0]["decidedBy"] == decided_by, res
    assert not run.written(), f"the file was written although the request was denied ({decided_by})"


def allow_once(req: acp_host.PermissionRequest) -> Optional[str]:
    return req.option_id("allow_once")


def test_allowed_by_a_function_the_write_happens(tmp_path: Path) -> None:
    run = permission_write(tmp_path, on_permission=allow_once)
    assert run.resolutions()[0]["decidedBy"] == "host"
    assert run.written(), "control case: an allowed write lands"
    assert run.tool_status() == "completed"
    assert run.result.stop_reason == "end_turn"


def test_allowed_by_a_coroutine_on_the_sync_host(tmp_path: Path) -> None:
    async def decide(req: acp_host.PermissionRequest) -> Optional[str]:
        await asyncio.sleep(0.01)
        return req.option_id("allow_once")

    run = permission_write(tmp_path, on_permission=decide)
    assert run.resolutions()[0]["decidedBy"] == "host"
    assert run.written()


def test_handler_sees_the_request(tmp_path: Path) -> None:
    seen: List[acp_host.PermissionRequest] = []

    def decide(req: acp_host.PermissionRequest) -> None:
        seen.append(req)
        return None

    run = permission_write(tmp_path, on_permission=decide)
    assert_denied(run, "host")
    (req,) = seen
    assert req.session_id == "sess_1" and req.agent == 1 and req.turn == 1
    assert req.tool_call["title"] == "Edit hello.txt" and req.tool_kind == "edit"
    assert [o.option_id for o in req.options] == ["allow-once", "allow-always", "reject-once", "reject-always"]
    assert req.option_id("reject_once") == "reject-once"
    assert req.to_dict()["requestId"] == req.id
    assert run.resolutions()[0]["outcome"] == {"outcome": "selected", "optionId": "reject-once"}


def test_default_without_a_handler_denies(tmp_path: Path) -> None:
    run = permission_write(tmp_path)
    assert_denied(run, "rule")
    assert run.resolutions()[0]["rule"] == "preset deny-all"
    assert run.tool_status() == "failed", "the agent saw the denial"


def test_read_only_preset_denies_an_edit(tmp_path: Path) -> None:
    run = permission_write(tmp_path, policy="read-only", on_permission=allow_once)
    assert_denied(run, "rule")
    assert run.resolutions()[0]["rule"] == "preset read-only"


def test_timeout_denies(tmp_path: Path) -> None:
    run = permission_write(tmp_path, on_permission="manual", permission_timeout=0.2)
    assert_denied(run, "timeout")
    assert run.tool_status() == "failed"


def test_slow_handler_times_out_and_its_late_answer_is_ignored(tmp_path: Path) -> None:
    def slow(req: acp_host.PermissionRequest) -> Optional[str]:
        time.sleep(0.6)
        return req.option_id("allow_once")

    run = permission_write(tmp_path, on_permission=slow, permission_timeout=0.2)
    assert_denied(run, "timeout")


def test_a_handler_that_blocks_does_not_hold_up_the_next_one(tmp_path: Path) -> None:
    """Sync handlers run side by side: while one waits (a human at a prompt), another request's
    handler is called and answered (the first gets its answer only after the second was called)."""
    second_called = threading.Event()
    lock = threading.Lock()
    calls: List[str] = []

    def handler(req: acp_host.PermissionRequest) -> Optional[str]:
        with lock:
            calls.append(req.session_id)
            first = len(calls) == 1
        if first:
            if not second_called.wait(T):
                return None  # never asked while this one waited: the test fails below
        else:
            second_called.set()
        return req.option_id("allow_once")

    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    results: Dict[int, Any] = {}
    with acp_host.Host(on_permission=handler) as host:
        # Two agents (the mock asks in one turn at a time).
        sessions = [host.spawn(mock("permission-write")).new_session(d.resolve()) for d in dirs]
        threads = [threading.Thread(target=lambda i=i, s=s: results.setdefault(i, _safe(lambda: s.prompt("write"))))
                   for i, s in enumerate(sessions)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(2 * T)
            assert not th.is_alive(), "the turn must end"
    assert second_called.is_set(), "the second request's handler was not called while the first one waited"
    assert len(calls) == 2
    assert all((d / "hello.txt").exists() for d in dirs), results


def test_slow_coroutine_is_cancelled_at_the_timeout(tmp_path: Path) -> None:
    cancelled = threading.Event()

    async def slow(req: acp_host.PermissionRequest) -> Optional[str]:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return req.option_id("allow_once")

    run = permission_write(tmp_path, on_permission=slow, permission_timeout=0.2)
    assert_denied(run, "timeout")
    assert cancelled.wait(5), "the pending coroutine was cancelled"


@pytest.mark.parametrize("kind", ["raises", "coroutine-raises", "wrong-type", "bogus-option"])
def test_failing_or_wrong_handlers_deny(tmp_path: Path, kind: str) -> None:
    def raises(req: acp_host.PermissionRequest) -> str:
        raise RuntimeError("UI unavailable")

    async def coroutine_raises(req: acp_host.PermissionRequest) -> str:
        raise RuntimeError("UI unavailable")

    handlers: Dict[str, Any] = {
        "raises": raises,
        "coroutine-raises": coroutine_raises,
        "wrong-type": lambda req: True,
        "bogus-option": lambda req: "allow-everything-forever",
    }
    run = permission_write(tmp_path, on_permission=handlers[kind])
    assert_denied(run, "invalid_answer")
    assert run.tool_status() == "failed"


def test_unknown_stale_and_duplicate_answers_change_nothing(tmp_path: Path) -> None:
    def during(host: acp_host.Host, session: acp_host.Session, rid: int) -> None:
        with pytest.raises(acp_host.NotFoundError) as ei:
            host.respond_permission(rid + 1000, "allow-once")
        assert ei.value.code == "not_found" and isinstance(ei.value, LookupError)
        host.respond_permission(rid, None)
        with pytest.raises(acp_host.AlreadyResolvedError):
            host.respond_permission(rid, "allow-once")

    run = permission_write(tmp_path, during, on_permission="manual")
    assert_denied(run, "host")


def test_manual_answer_allows(tmp_path: Path) -> None:
    run = permission_write(tmp_path, lambda h, s, rid: h.respond_permission(rid, "allow-once"), on_permission="manual")
    assert run.resolutions()[0]["decidedBy"] == "host"
    assert run.written()


def test_an_option_that_was_not_offered_denies_and_raises(tmp_path: Path) -> None:
    errors: List[BaseException] = []

    def during(host: acp_host.Host, session: acp_host.Session, rid: int) -> None:
        try:
            host.respond_permission(rid, "not-offered")
        except acp_host.AcpError as exc:
            errors.append(exc)

    run = permission_write(tmp_path, during, on_permission="manual")
    assert_denied(run, "invalid_answer")
    assert errors and isinstance(errors[0], acp_host.AcpError)


def test_session_cancel_answers_cancelled(tmp_path: Path) -> None:
    run = permission_write(tmp_path, lambda h, s, rid: s.cancel(), on_permission="manual")
    assert_denied(run, "cancelled")
    assert run.resolutions()[0]["outcome"] == {"outcome": "cancelled"}


def test_host_close_resolves_as_disconnected(tmp_path: Path) -> None:
    run = permission_write(tmp_path, lambda h, s, rid: h.close(), on_permission="manual", shutdown_grace=0.3)
    assert_denied(run, "disconnected")
    assert run.resolutions()[0]["outcome"] is None
    assert isinstance(run.result, acp_host.AcpError), "the pending prompt failed"


def test_hard_deny_beats_a_handler_allow(tmp_path: Path) -> None:
    policy = {"preset": "ask", "rules": [{"action": "deny", "paths": ["**/hello.txt"]}]}
    run = permission_write(tmp_path, policy=policy, on_permission=allow_once)
    assert_denied(run, "rule")
    assert "hello.txt" in run.resolutions()[0]["rule"]


def test_policy_file_and_json_text(tmp_path: Path) -> None:
    doc = '{"rules": [{"action": "deny", "paths": ["**/hello.txt"], "description": "no hello"}]}'
    p = tmp_path / "policy.json"
    p.write_text(doc)
    for i, policy in enumerate((p, str(p), doc)):
        sub = tmp_path / f"w{i}"
        sub.mkdir()
        run = permission_write(sub, policy=policy, on_permission=allow_once)
        assert_denied(run, "rule")
        assert run.resolutions()[0]["rule"] == "rules[0] (deny: no hello)"


def test_bad_policies_raise_with_the_spot(tmp_path: Path) -> None:
    with pytest.raises(acp_host.PolicyError) as ei:
        acp_host.Host(policy={"rules": [{"action": "permit"}]})
    # The same kind and path as every face (docs/ERRORS.md).
    assert ei.value.code == "invalid_config"
    assert ei.value.data["path"] == "policy.rules[0].action"
    assert isinstance(ei.value, acp_host.ConfigError)
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, acp_host.InvalidArgumentError)
    with pytest.raises(acp_host.PolicyError):
        acp_host.Host(policy="yolo")
    with pytest.raises(acp_host.PolicyError):
        acp_host.Host(policy=tmp_path / "missing.json")
    with pytest.raises(acp_host.ConfigError) as ce:
        acp_host.Host(on_permission="always")  # type: ignore[arg-type]
    assert ce.value.data["path"] == "permission"
    with pytest.raises(acp_host.ConfigError) as ce:
        acp_host.Host(unstable=["session/forks"])
    assert ce.value.code == "invalid_config" and ce.value.data["path"] == "unstable[0]"
    assert not isinstance(ce.value, acp_host.PolicyError)


def test_allow_always_grants_the_session_and_nothing_else(tmp_path: Path) -> None:
    picks = []

    def decide(req: acp_host.PermissionRequest) -> Optional[str]:
        picks.append(req.id)
        return req.option_id("allow_always")

    cwd = tmp_path.resolve()
    with acp_host.Host(on_permission=decide) as host:
        stream = host.events()
        agent = host.spawn(mock("permission-write"))
        s1 = agent.new_session(cwd)
        s1.prompt("1")
        s1.prompt("2")
        s2 = agent.new_session(cwd)
        s2.prompt("3")
        agent.shutdown()
        evs = stream.collect_until(lambda e: e.kind == "agent_exited", T)
    by = [e.data["decidedBy"] for e in evs if e.kind == "permission_resolved"]
    assert by == ["host", "grant", "host"], "the grant covers its session only"
    assert len(picks) == 2


# ----------------------------------------------------------------------------- asyncio twin

async def permission_write_async(tmp_path: Path, during: Any = None, **host_kw: Any) -> Run:
    cwd = tmp_path.resolve()
    async with acp_host.AsyncHost(**host_kw) as host:
        stream = host.events()
        agent = await host.spawn(mock("permission-write"))
        session = await agent.new_session(cwd)
        task = asyncio.ensure_future(session.prompt("write"))
        events = await stream.collect_until(lambda e: e.kind == "permission_requested", T)
        if during is not None:
            await during(host, session, events[-1].data["requestId"])
        try:
            result: Any = await asyncio.wait_for(task, T)
        except acp_host.AcpError as exc:
            result = exc
        await agent.shutdown()
        events += await stream.collect_until(lambda e: e.kind == "agent_exited", T)
    return Run(events, cwd, result)


def test_async_coroutine_handler_runs_on_the_hosts_loop(tmp_path: Path) -> None:
    loops = []

    async def decide(req: acp_host.PermissionRequest) -> Optional[str]:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return req.option_id("allow_once")

    async def main() -> Run:
        run = await permission_write_async(tmp_path, on_permission=decide)
        assert loops == [asyncio.get_running_loop()]
        return run

    run = asyncio.run(main())
    assert run.resolutions()[0]["decidedBy"] == "host"
    assert run.written()


def test_async_plain_handler_runs_on_the_loop_thread(tmp_path: Path) -> None:
    threads = []

    def decide(req: acp_host.PermissionRequest) -> Optional[str]:
        threads.append(threading.get_ident())
        return req.option_id("allow_once")

    run = asyncio.run(permission_write_async(tmp_path, on_permission=decide))
    assert threads == [threading.get_ident()]
    assert run.written()


@pytest.mark.parametrize("kind", ["raises", "wrong-type", "timeout"])
def test_async_failing_handlers_deny(tmp_path: Path, kind: str) -> None:
    async def raises(req: acp_host.PermissionRequest) -> str:
        raise ValueError("nope")

    async def wrong(req: acp_host.PermissionRequest) -> Any:
        return 42

    async def hangs(req: acp_host.PermissionRequest) -> Any:
        await asyncio.sleep(30)

    handler = {"raises": raises, "wrong-type": wrong, "timeout": hangs}[kind]
    run = asyncio.run(permission_write_async(tmp_path, on_permission=handler, permission_timeout=0.3))
    assert_denied(run, "timeout" if kind == "timeout" else "invalid_answer")


def test_async_respond_permission_and_cancel(tmp_path: Path) -> None:
    async def answer(host: acp_host.AsyncHost, session: acp_host.AsyncSession, rid: int) -> None:
        await host.respond_permission(rid, "allow-once")
        with pytest.raises(acp_host.AlreadyResolvedError):
            await host.respond_permission(rid, "allow-once")

    run = asyncio.run(permission_write_async(tmp_path, answer, on_permission="manual"))
    assert run.written()

    async def cancel(host: acp_host.AsyncHost, session: acp_host.AsyncSession, rid: int) -> None:
        await session.cancel()

    sub = tmp_path / "c"
    sub.mkdir()
    run = asyncio.run(permission_write_async(sub, cancel, on_permission="manual"))
    assert_denied(run, "cancelled")


def test_environment_is_not_leaked_into_policy_by_default() -> None:
    # A host without handler or policy is deny-all; with a handler, the "ask" preset.
    assert acp_host.Host().policy_name == "deny-all"
    assert acp_host.Host(on_permission=allow_once).policy_name == "ask"
    assert acp_host.Host(policy="read-only").policy_name == "read-only"
    assert os.environ.get("ACP_HOST_POLICY") is None

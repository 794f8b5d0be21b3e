"""Delivery receipts (docs/EVENTS.md, "Delivery receipts"): ``respond_permission`` and
``respond_elicitation`` return the answer's receipt, a raised error's ``data["receipt"]`` is the
``rejected`` receipt of the unused answer, and the resolution event carries the same receipt."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import acp_host
from conftest import T, mock


def with_turn(tmp_path: Path, scenario: str, during: Callable[[acp_host.Host, acp_host.EventStream], None]) -> None:
    with acp_host.Host(on_permission="manual", on_elicitation="manual") as host:
        stream = host.events()
        agent = host.spawn(mock(scenario))
        session = agent.new_session(tmp_path.resolve())
        box: Dict[str, Any] = {}

        def turn() -> None:
            try:
                box["r"] = session.prompt("x")
            except acp_host.AcpError as exc:
                box["r"] = exc

        th = threading.Thread(target=turn)
        th.start()
        during(host, stream)
        agent.shutdown()
        th.join(T)


def last(stream: acp_host.EventStream, kind: str) -> Dict[str, Any]:
    events: List[Any] = stream.collect_until(lambda e: e.kind == kind, T)
    data: Dict[str, Any] = events[-1].data
    return data


def test_a_permission_answer_is_delivered_and_a_second_one_rejected(tmp_path: Path) -> None:
    def during(host: acp_host.Host, stream: acp_host.EventStream) -> None:
        rid = last(stream, "permission_requested")["requestId"]
        receipt = host.respond_permission(rid, "allow-once")
        assert receipt == {"status": "delivered"}
        assert last(stream, "permission_resolved")["receipt"] == receipt
        with pytest.raises(acp_host.AlreadyResolvedError) as err:
            host.respond_permission(rid, None)
        assert err.value.data["receipt"]["status"] == "rejected"
        assert err.value.data["receipt"]["state"] == "unavailable"
        assert err.value.data["receipt"]["code"] == "already_resolved"
        with pytest.raises(acp_host.NotFoundError) as nf:
            host.respond_permission(rid + 1000, None)
        assert nf.value.data["receipt"]["state"] == "unavailable"

    with_turn(tmp_path, "permission-write", during)


def test_an_option_not_offered_is_rejected_and_the_deny_delivered(tmp_path: Path) -> None:
    def during(host: acp_host.Host, stream: acp_host.EventStream) -> None:
        rid = last(stream, "permission_requested")["requestId"]
        with pytest.raises(acp_host.InvalidArgumentError) as err:
            host.respond_permission(rid, "yolo")
        assert err.value.data["receipt"]["status"] == "rejected"
        resolved = last(stream, "permission_resolved")
        assert resolved["decidedBy"] == "invalid_answer"
        assert resolved["receipt"]["status"] == "delivered"

    with_turn(tmp_path, "permission-write", during)


def test_a_large_answer_whose_pipe_fails_mid_write_is_uncertain(tmp_path: Path) -> None:
    def during(host: acp_host.Host, stream: acp_host.EventStream) -> None:
        rid = last(stream, "elicitation_requested")["requestId"]
        receipt = host.respond_elicitation(rid, {"action": "accept", "content": {"note": "n" * (1 << 20)}})
        assert receipt["status"] == "uncertain", receipt
        assert receipt["code"] == "io"
        assert last(stream, "elicitation_resolved")["receipt"] == receipt

    with_turn(tmp_path, "receipt-broken-pipe", during)


def test_asyncio_respond_returns_the_receipt(tmp_path: Path) -> None:
    async def main() -> None:
        async with acp_host.AsyncHost(on_permission="manual") as host:
            stream = host.events()
            agent = await host.spawn(mock("permission-write"))
            session = await agent.new_session(tmp_path.resolve())
            turn = asyncio.ensure_future(session.prompt("x"))
            events = await stream.collect_until(lambda e: e.kind == "permission_requested", T)
            receipt = await host.respond_permission(events[-1].data["requestId"], "allow-once")
            assert receipt == {"status": "delivered"}
            assert (await turn).stop_reason == "end_turn"

    asyncio.run(main())

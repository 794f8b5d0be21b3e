"""Every case of tests/options/cases.json through the Python face, the way its users call it:
``Host(**kwargs)`` with the document's names in snake_case, ``host.spawn(...)`` (ok cases really
spawn the mock agent), ``agent.new_session(...)`` on a spawned mock, ``host.pool(...)`` of the
mock. Each must give the case's outcome: ok, or ``ConfigError`` with the core's kind and exactly
its ``path`` (``.path`` and ``.data["path"]``)."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import acp_host
from acp_host import ConfigError, Host

from conftest import MOCK, ROOT

CASES = json.loads((ROOT / "tests" / "options" / "cases.json").read_text())["cases"]
#: Option objects whose keys are option names (given in snake_case here; a policy document, an
#: env map or MCP servers are data and keep their keys).
NESTED = {"fsLimits", "terminalLimits", "clientInfo", "restart"}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def substitute(value: Any, places: Dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in places.items():
            value = value.replace(k, v)
        return value
    if isinstance(value, list):
        return [substitute(v, places) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, places) for k, v in value.items()}
    return value


def kwargs(doc: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in doc.items():
        if k in NESTED and isinstance(v, dict):
            v = {snake(n): x for n, x in v.items()}
        out[snake(k)] = v
    return out


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    d = tmp_path_factory.mktemp("options")
    (d / "file.txt").write_text("x")
    (d / "policy.json").write_text(json.dumps({"preset": "read-only"}))
    return {"$DIR": str(d), "$MISSING": str(d / "missing"), "$FILE": str(d / "file.txt"), "$MOCK": MOCK,
            "$POLICY": str(d / "policy.json")}


def run_case(case: Dict[str, Any], doc: Dict[str, Any], places: Dict[str, str]) -> None:
    kind = case["document"]
    if kind == "host":
        Host(**kwargs(doc)).close()
        return
    with Host() as host:
        if kind == "agent":
            kw = kwargs(doc)
            command = kw.pop("command", None)
            host.spawn(command, **kw).shutdown()
        elif kind == "session":
            agent = host.spawn(MOCK)
            agent.new_session(**kwargs(doc)).close()
        elif kind == "pool":
            with host.pool(MOCK, **kwargs(doc)):
                pass
        else:
            raise AssertionError(f"unknown document {kind}")


@pytest.mark.parametrize("case", CASES, ids=[f"{c['document']}: {c['name']}" for c in CASES])
def test_case(case: Dict[str, Any], places: Dict[str, str]) -> None:
    doc = substitute(case["doc"], places)
    expect = case["expect"]
    if expect == "ok" or "python" in expect.get("except", []):
        run_case(case, doc, places)
        return
    with pytest.raises(acp_host.AcpError) as info:
        run_case(case, doc, places)
    err = info.value
    assert err.code == expect["kind"], err
    assert isinstance(err, ConfigError)
    assert err.path == expect["path"], err
    assert err.data["path"] == expect["path"], err


def test_every_document_kind_is_covered() -> None:
    assert {c["document"] for c in CASES} == {"host", "agent", "session", "pool"}


def test_seconds_spelling_converts_exactly() -> None:
    # 1.1 s is 1100 ms (binary floating point would give 1100.0000000000002, which the core
    # refuses as fractional); 0.0005 s is half a millisecond: refused, named canonically.
    Host(request_timeout=1.1, shutdown_grace=0.25, event_stall_timeout=None).close()
    with pytest.raises(ConfigError) as info:
        Host(request_timeout=0.0005)
    assert info.value.path == "requestTimeoutMs"
    with pytest.raises(ConfigError) as info:
        Host(request_timeout=0)
    assert info.value.path == "requestTimeoutMs"


def test_both_spellings_at_once_is_an_error() -> None:
    with pytest.raises(ConfigError) as info:
        Host(request_timeout=1.0, request_timeout_ms=1000)
    assert info.value.path == "requestTimeoutMs"
    with pytest.raises(ConfigError) as info:
        Host(fs_limits={"max_read_bytes": 1, "maxReadBytes": 2})
    assert info.value.path == "fsLimits.maxReadBytes"


def test_nested_either_spelling(places: Dict[str, str]) -> None:
    Host(fs_limits={"maxReadBytes": 10, "max_write_bytes": 10},
         terminal_limits={"max_terminals": 2}, client_info={"name": "x"}).close()
    with Host() as host:
        agent = host.spawn(MOCK, restart={"max_restarts": 1, "backoff": 0.01})
        agent.shutdown()
        with pytest.raises(ConfigError) as info:
            host.spawn(MOCK, restart={"backoff": -1})
        assert info.value.path == "restart.backoffMs"


def test_a_relative_path_is_refused_not_resolved(places: Dict[str, str]) -> None:
    # Breaking: Python used to resolve it against the current directory.
    with pytest.raises(ConfigError) as info:
        Host(roots=["rel"])
    assert info.value.path == "roots[0]"
    with Host() as host:
        with pytest.raises(ConfigError) as info:
            host.spawn(MOCK, cwd=".")
        assert info.value.path == "cwd"


def test_handler_and_plain_answerer_conflict() -> None:
    with pytest.raises(ConfigError) as info:
        Host(permission="deny", on_permission=lambda req: None)
    assert info.value.path == "permission"
    with pytest.raises(ConfigError) as info:
        Host(permission="handler")
    assert info.value.path == "permission"


def test_asynchost_takes_the_same_options() -> None:
    import asyncio

    async def main() -> Tuple[str, ...]:
        with pytest.raises(ConfigError) as info:
            acp_host.AsyncHost(max_line_bytes=1023)
        host = acp_host.AsyncHost(max_outbound_bytes=65536, early_update_limit=1, max_pending_agent_requests=1,
                                  event_queue_bytes=4096, event_stall_timeout_ms=None)
        await host.close()
        return (info.value.path or "",)

    assert asyncio.run(main()) == ("maxLineBytes",)

"""The typed events (``acp_host.types``, generated into ``acp_host/_schema.py``):

- the committed module is what the generator makes of schema/events.schema.json (drift);
- the events this face produces (the cross-face conformance traces, which test_conformance.py
  checks the sync and asyncio hosts reproduce) have the shapes the types promise;
- mypy --strict really narrows on them: wrong accesses after a narrowing are errors.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Literal, Set, Tuple, Union, get_args, get_origin, get_type_hints

import pytest

import acp_host
from acp_host import _schema, types
from conftest import ROOT, SCENARIOS

PKG = ROOT / "bindings" / "python"
GENERATED = PKG / "python" / "acp_host" / "_schema.py"


def load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_types", PKG / "scripts" / "gen_types.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_types_are_current() -> None:
    gen = load_generator()
    schema = json.loads((ROOT / "schema" / "events.schema.json").read_text(encoding="utf-8"))
    fresh = gen.generate(schema)
    assert fresh == GENERATED.read_text(encoding="utf-8"), (
        "bindings/python/python/acp_host/_schema.py is stale (schema/events.schema.json changed): "
        "run python3 bindings/python/scripts/gen_types.py (or scripts/gen-types)"
    )
    # Deterministic: a second run gives the same text.
    assert gen.generate(schema) == fresh


def test_every_kind_has_an_event_type() -> None:
    schema = json.loads((ROOT / "schema" / "events.schema.json").read_text(encoding="utf-8"))
    assert list(types.EVENT_KINDS) == list(schema["properties"])
    assert list(get_type_hints(types.EventData)) == list(schema["properties"])
    members = get_args(types.AnyEvent)
    assert len(members) == len(types.EVENT_KINDS)
    for cls, kind in zip(members, types.EVENT_KINDS):
        assert get_type_hints(cls.kind.fget)["return"] == Literal[kind]  # type: ignore[attr-defined]
    assert acp_host.AnyEvent is types.AnyEvent
    assert "tool_call" in get_args(types.SessionUpdateKind) or Literal["tool_call"] in get_args(
        types.SessionUpdateKind
    )


# ---------------------------------------------------------------- runtime shapes vs the types
def problems(value: Any, tp: Any, path: str) -> List[str]:
    """Where ``value`` does not fit ``tp`` (required keys, tags, primitive types; extra keys are
    allowed: agents may send fields newer than the schema)."""
    if tp is Any:
        return []
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    origin = get_origin(tp)
    if origin is Union:
        # Report against the member whose tags (Literal keys) the value has, if any.
        found = [(not tags_match(value, arg), problems(value, arg, path)) for arg in get_args(tp)]
        return [] if any(not p for _, p in found) else min(found, key=lambda f: (f[0], len(f[1])))[1]
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{path}: {value!r} not in {get_args(tp)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [p for i, v in enumerate(value) for p in problems(v, get_args(tp)[0], f"{path}[{i}]")]
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{path}: {value!r} is not an object"]
    if isinstance(tp, type) and hasattr(tp, "__required_keys__"):  # a TypedDict
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        missing = [f"{path}.{k}: missing" for k in sorted(tp.__required_keys__) if k not in value]
        hints = get_type_hints(tp)
        return missing + [p for k, v in value.items() if k in hints for p in problems(v, hints[k], f"{path}.{k}")]
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return [] if ok else [f"{path}: {value!r} is not {tp.__name__}"]


def tags_match(value: Any, tp: Any) -> bool:
    if not (isinstance(tp, type) and hasattr(tp, "__required_keys__") and isinstance(value, dict)):
        return False
    hints = get_type_hints(tp)
    return all(value[k] in get_args(t) for k, t in hints.items() if get_origin(t) is Literal and k in value)


def conformance_events() -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for f in sorted((SCENARIOS / "conformance" / "expected").glob("*.json")):
        for i, ev in enumerate(json.loads(f.read_text())["events"]):
            out.append((f"{f.stem}[{i}]", ev))
    return out


def test_conformance_events_fit_the_types() -> None:
    data_types = get_type_hints(types.EventData)
    update_kinds = {get_args(a)[0] for a in get_args(types.SessionUpdateKind)}
    seen: Set[str] = set()
    unknown_updates: List[str] = []
    bad: List[str] = []
    for where, ev in conformance_events():
        assert ev["kind"] in types.EVENT_KINDS, f"{where}: kind {ev['kind']} is not in EventKind"
        seen.add(ev["kind"])
        if ev["kind"] == "session_update" and ev["data"].get("sessionUpdate") not in update_kinds:
            # Kinds newer than the schema arrive as they are (docs/EVENTS.md); not typed.
            unknown_updates.append(ev["data"]["sessionUpdate"])
            continue
        bad += problems(ev["data"], data_types[ev["kind"]], f"{where} {ev['kind']}")
    assert not bad, "\n".join(bad)
    # The traces do exercise the types: most kinds, and the one deliberate unknown update.
    assert {"session_update", "permission_requested", "turn_ended", "agent_ready", "fs_read"} <= seen
    assert unknown_updates == ["future_kind", "future_kind"]  # all-updates, v2-updates


def test_v2_updates_fit_their_types_and_an_unknown_kind_arrives_as_sent() -> None:
    # A live v2 session: each v2-only kind is a variant of the SessionUpdate union (its own
    # TypedDict, by the tag) and fits it; the unknown kind arrives untouched, not typed.
    from conftest import T, mock

    variants = {get_type_hints(v)["sessionUpdate"].__args__[0]: v for v in get_args(_schema.SessionUpdate)}
    for kind, tp in [("user_message", _schema.SessionUpdateUserMessage),
                     ("agent_message", _schema.SessionUpdateAgentMessage),
                     ("tool_call_content_chunk", _schema.SessionUpdateToolCallContentChunk),
                     ("terminal_update", _schema.SessionUpdateTerminalUpdate),
                     ("terminal_output_chunk", _schema.SessionUpdateTerminalOutputChunk)]:
        assert variants[kind] is tp, kind
    with acp_host.Host(unstable=["protocol/v2"], on_permission=lambda req: req.option_id("allow_once")) as host:
        stream = host.events()
        session = host.spawn(mock("v2-updates")).new_session("/tmp")
        result = session.prompt("all")
        assert result.stop_reason == "end_turn"
        assert result.text == "Here: permission selected."  # msg_1's chunk, then its upsert
        evs = stream.collect_until(lambda e: e.kind == "turn_ended", timeout=T)
        state = session.state
    updates = [e.data for e in evs if e.kind == "session_update"]
    kinds = [u["sessionUpdate"] for u in updates]
    assert {"agent_thought", "terminal_update", "plan_update", "plan_removed", "notice"} <= set(kinds)
    bad = [p for u in updates if u["sessionUpdate"] in variants for p in problems(u, _schema.SessionUpdate, "u")]
    assert not bad, bad
    assert [u for u in updates if u["sessionUpdate"] not in variants] == [
        {"sessionUpdate": "future_kind", "somethingNew": {"x": 1}}]
    chunk = next(u for u in updates if u["sessionUpdate"] == "terminal_output_chunk")
    assert (chunk["terminalId"], chunk["data"]) == ("term_1", "b2sK")
    # The state took the upsert and the content chunks in (the call the permission merged over).
    call = next(c for c in state.tool_calls if c["toolCallId"] == "call_1")
    assert (call["title"], len(call["content"]), call["status"]) == ("Run the tests", 2, "completed")


def test_problems_finds_a_mistyped_payload() -> None:
    # The checker above is not vacuous: a tool call without its id, a bad status, a text block
    # without text are all reported.
    upd = {"sessionUpdate": "tool_call", "title": "t", "status": "done",
           "content": [{"type": "content", "content": {"type": "text"}}]}
    found = problems(upd, _schema.SessionUpdate, "u")
    assert "u.toolCallId: missing" in found
    assert any(p.startswith("u.status: 'done'") for p in found)
    assert "u.content[0].content.text: missing" in found


# ---------------------------------------------------------------- mypy narrows (and rejects)
BAD = '''
from typing import List
import acp_host
from acp_host.types import AnyEvent, ContentBlock

def f(events: List[AnyEvent], session: acp_host.Session) -> None:
    for ev in events:
        if ev.kind == "agent_ready":
            print(ev.data["protocolVersion"])
            print(ev.data["toolCallId"])  # E: typeddict-item
        if ev.kind == "sesion_update":  # E: comparison-overlap
            pass
        if ev.kind == "session_update":
            u = ev.data
            if u["sessionUpdate"] == "agent_message_chunk":
                print(u["content"])
                print(u["toolCallId"])  # E: typeddict-item
            if u["sessionUpdate"] == "tool_call":
                print(u["toolCallId"], u["title"])
            if u["sessionUpdate"] == "tool_cal":  # E: comparison-overlap
                pass
            if u["sessionUpdate"] == "agent_message":
                print(u["messageId"], u.get("content"))
                print(u["text"])  # E: typeddict-item
            if u["sessionUpdate"] == "terminal_output_chunk":
                print(u["terminalId"], u["data"])
                print(u["toolCallId"])  # E: typeddict-item
        if ev.kind == "turn_ended":
            print(ev.data["requestId"])  # E: typeddict-item
        print(ev.data["sessionId"])  # E: typeddict-item
    result = session.prompt("hi")
    if result.stop_reason == "end_trun":  # E: comparison-overlap
        pass
    block: ContentBlock = {"type": "txt", "text": "hi"}  # E: typeddict-item
    session.prompt([{"type": "image", "text": "x"}])  # E: list-item
    req: acp_host.PermissionRequest
    req.option_id("allow_one")  # E: arg-type
'''


def test_mypy_rejects_accesses_the_narrowing_rules_out(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed")
    src = textwrap.dedent(BAD).lstrip()
    path = tmp_path / "wrong.py"
    path.write_text(src)
    expected = {(n, m.group(1)) for n, line in enumerate(src.splitlines(), 1)
                for m in [re.search(r"# E: ([\w-]+)", line)] if m}
    # From the package's source dir: the project's mypy config and cache apply.
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context", str(path)],
        cwd=PKG / "python", capture_output=True, text=True, timeout=300,
    )
    reported = {(int(m.group(1)), m.group(2))
                for m in re.finditer(r"^.*wrong\.py:(\d+): error: .*\[([\w-]+)\]$", proc.stdout, re.M)}
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # Exactly the marked lines fail: the right accesses beside them pass (the narrowing works).
    assert reported == expected, proc.stdout

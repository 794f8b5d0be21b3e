"""A consumer of the typed API, checked with ``mypy --strict`` by scripts/test-python (never run,
never collected by pytest). Every access below must type-check only because of the narrowing:
``ev.kind`` selects the event's ``data`` type, ``data["sessionUpdate"]`` (or ``["type"]``) the
variant. tests/test_types.py checks that mypy rejects the wrong accesses.
"""

from __future__ import annotations

from typing import List, Optional

from typing_extensions import assert_type

import acp_host
from acp_host.types import (
    AnyEvent,
    ContentBlock,
    ContentBlockResource,
    PermissionOptionKind,
    SessionConfigOption,
    SessionUpdate,
    StopReason,
    ToolCallContent,
    ToolCallStatus,
    ToolKind,
)


def describe_content(block: ContentBlock) -> str:
    if block["type"] == "text":
        return block["text"]
    if block["type"] == "image" or block["type"] == "audio":
        return f"<{block['mimeType']}, {len(block['data'])} base64 chars>"
    if block["type"] == "resource_link":
        return block["uri"]
    assert_type(block, ContentBlockResource)  # every other variant was handled
    return f"<embedded {block['resource']['uri']}>"


def describe_tool_content(item: ToolCallContent) -> str:
    if item["type"] == "diff":
        return f"diff of {item['path']}: {len(item['newText'])} chars"
    if item["type"] == "terminal":
        return f"terminal {item['terminalId']}"
    if item["type"] == "content":
        return describe_content(item["content"])
    return f"session {item['sessionId']}"


def on_update(update: SessionUpdate, out: List[str]) -> None:
    tag = update["sessionUpdate"]
    if update["sessionUpdate"] == "agent_message_chunk":
        out.append(describe_content(update["content"]))
    elif update["sessionUpdate"] == "tool_call":
        call_id: str = update["toolCallId"]
        title: str = update["title"]  # required on a tool_call
        kind: Optional[ToolKind] = update.get("kind")
        status: Optional[ToolCallStatus] = update.get("status")
        for item in update.get("content", []):
            out.append(describe_tool_content(item))
        for loc in update.get("locations", []):
            out.append(f"{loc['path']}:{loc.get('line')}")
        out.append(f"{call_id} {title} {kind} {status}")
    elif update["sessionUpdate"] == "tool_call_update":
        new_status: Optional[ToolCallStatus] = update.get("status")  # may be absent or null
        out.append(f"{update['toolCallId']} -> {new_status}")
    elif update["sessionUpdate"] == "plan":
        out.extend(f"[{e['status']}] {e['content']} ({e['priority']})" for e in update["entries"])
    elif update["sessionUpdate"] == "usage_update":
        used: int = update["used"]
        out.append(f"{used}/{update['size']}")
    elif update["sessionUpdate"] == "config_option_update":
        options: List[SessionConfigOption] = update["configOptions"]
        for opt in options:
            if opt["type"] == "select":
                out.append(f"{opt['id']}={opt['currentValue']}")
            else:
                on: bool = opt["currentValue"]
                out.append(f"{opt['name']}: {on}")
    # ACP v2 (draft): message upserts, tool-call content chunks, agent-owned terminals, plans.
    elif (
        update["sessionUpdate"] == "agent_message"
        or update["sessionUpdate"] == "user_message"
        or update["sessionUpdate"] == "agent_thought"
    ):
        message_id: str = update["messageId"]
        blocks: Optional[List[ContentBlock]] = update.get("content")  # absent or null: unchanged/cleared
        out.append(message_id + "".join(describe_content(b) for b in blocks or []))
    elif update["sessionUpdate"] == "tool_call_content_chunk":
        out.append(f"{update['toolCallId']} += {describe_tool_content(update['content'])}")
    elif update["sessionUpdate"] == "terminal_update":
        exit_status = update.get("exitStatus")
        code: Optional[int] = exit_status.get("exitCode") if exit_status else None
        size = update.get("size")
        cols: Optional[int] = size["cols"] if size else None
        out.append(f"{update['terminalId']} {update.get('command')} {cols} {code}")
    elif update["sessionUpdate"] == "terminal_output_chunk":
        data: str = update["data"]  # base64
        out.append(f"{update['terminalId']} += {len(data)}")
    elif update["sessionUpdate"] == "plan_update":
        plan = update["plan"]
        if plan["type"] == "items":
            out.extend(e["content"] for e in plan["entries"])
        else:
            out.append(plan["content"])
    else:
        out.append(tag)


def consume(events: List[AnyEvent]) -> List[str]:
    out: List[str] = []
    for ev in events:
        seq: int = ev.seq
        if ev.kind == "session_update":
            assert_type(ev.data, SessionUpdate)
            kind_name: str = ev.update_kind  # a session_update always has one
            # Narrowing through the attribute works too, without a local.
            if ev.data["sessionUpdate"] == "tool_call":
                out.append(f"{seq} {kind_name} {ev.data['toolCallId']} {ev.data['title']}")
            on_update(ev.data, out)
        elif ev.kind == "permission_requested":
            req_id: int = ev.data["requestId"]
            call = ev.data["toolCall"]
            option_kinds: List[PermissionOptionKind] = [o["kind"] for o in ev.data["options"]]
            out.append(f"{req_id} {call['toolCallId']} {call.get('title')} {option_kinds}")
        elif ev.kind == "permission_resolved":
            outcome = ev.data.get("outcome")
            if outcome is not None and outcome["outcome"] == "selected":
                out.append(outcome["optionId"])
            out.append(ev.data["decidedBy"])
        elif ev.kind == "turn_ended":
            stop: Optional[StopReason] = ev.data.get("stopReason")
            error = ev.data.get("error")
            out.append(f"{ev.turn} {stop} {error['kind'] if error else ''}")
        elif ev.kind == "agent_exited":
            code: Optional[int] = ev.data.get("exitCode")
            out.append(f"{ev.data['reason']} {code}")
        elif ev.kind == "session_opened":
            modes = ev.data.get("modes")
            if modes:
                out.append(modes["currentModeId"])
        elif ev.kind == "agent_restarting":
            attempt: int = ev.data["attempt"]
            out.append(f"{attempt}/{ev.data['maxRestarts']} in {ev.data['delayMs']} ms: {ev.data['error']['kind']}")
        elif ev.kind == "agent_restarted":
            pid: Optional[int] = ev.data.get("pid")
            recovered = [f"{r['sessionId']} via {r['via']}" for r in ev.data["recovered"]]
            lost: List[str] = ev.data["lost"]
            out.append(f"{pid} {recovered} {lost}")
        elif ev.kind == "agent_failed":
            out.append(f"gave up after {ev.data['attempts']}: {ev.data['error']['message']}")
        elif ev.kind == "session_lost":
            out.append(f"{ev.data['sessionId']} lost: {ev.data['error']['kind']}")
        elif ev.kind == "steer":
            out.append(f"steer {ev.data['steer']}: {ev.data['outcome']}")
    return out


def run_sync(host: acp_host.Host, cmd: List[str]) -> acp_host.TurnResult:
    agent = host.spawn(cmd, restart=acp_host.RestartPolicy(max_restarts=5, backoff=0.1))
    exhausted: bool = agent.restarts_exhausted
    pid: Optional[int] = agent.pid
    print(exhausted, pid)
    caps = agent.capabilities
    if caps.get("loadSession"):
        print("can load")
    session = agent.new_session(".")
    with session.events() as stream:
        text: ContentBlock = {"type": "text", "text": "hello"}
        result = session.prompt([text, "and a plain string"])
        consume(stream.collect_until(lambda e: e.kind == "turn_ended", timeout=5))
        first = stream.next(0.1)
        if first is not None and first.kind == "fs_read":
            print(first.data["path"], first.data["outcome"])
    stop: StopReason = result.stop_reason
    if result.stop_reason == "max_tokens":
        print("truncated", stop)
    state = session.state
    for call in state.tool_calls:
        print(call["toolCallId"], call.get("title"), call.get("status"))
    for entry in state.plan or []:
        print(entry["content"], entry["status"])
    for option in state.config_options or []:
        print(option["id"], option["type"])
    if state.usage is not None:
        print(state.usage["used"], state.usage["size"])
    last: Optional[StopReason] = state.last_stop_reason
    print(last)
    return result


def decide(req: acp_host.PermissionRequest) -> Optional[str]:
    kind: Optional[ToolKind] = req.tool_kind
    if req.tool_call.get("status") == "pending" and kind in ("read", "search"):
        return req.option_id("allow_once")
    return None


async def run_async(host: acp_host.AsyncHost, cmd: List[str]) -> None:
    agent = await host.spawn(cmd, restart={"maxRestarts": 2, "backoffMs": 50})
    if agent.restarts_exhausted:
        return
    session = await agent.new_session(".")
    async with session.events() as stream:
        result = await session.prompt("hi")
        async for ev in stream:
            if ev.kind == "session_update" and ev.data["sessionUpdate"] == "agent_thought_chunk":
                print(describe_content(ev.data["content"]))
            if ev.kind == "turn_ended":
                break
        batch = await stream.next_batch()
        for e in batch or []:
            if e.kind == "terminal_exited":
                print(e.data["terminalId"], e.data.get("exitCode"))
    print(result.stop_reason, result.text)


def from_registry(host: acp_host.Host, path: str, cache: str) -> acp_host.Agent:
    from acp_host.registry import Registry, ResolvedAgent

    registry = Registry.from_file(path)
    r = registry.resolve("my-agent", prefer=["binary", "npx"], cache_dir=cache)
    assert_type(r, ResolvedAgent)
    assert_type(r.spec, acp_host.AgentSpec)
    if r.kind == "binary" and r.needs_install:
        assert_type(registry.install("my-agent", cache).already_installed, bool)
    return host.spawn(r.spec, cwd=cache, env={"EXTRA": None})

#!/usr/bin/env python3
"""Run one prompt in several ACP sessions at once and write a JSON summary per session.

    python examples/python/orchestrate.py [--sessions N] [--agents M] [--prompt TEXT]
                                          [--cwd DIR] [--out DIR] [-- AGENT_CMD ARGS...]

Without AGENT_CMD the repo's mock agent (target/debug/acp-mock-agent) runs. The agents get the
``read-only`` policy: they may read, search and think; every edit, command or other tool call is
denied by the policy, without asking anyone (a headless run). Sessions are spread round-robin over
M agent processes and run concurrently (asyncio). Each summary (``<out>/<n>-<session>.json``)
holds the stop reason, the agent's text, the tool calls, every permission decision and the usage.
Agents are shut down when the host closes, also on Ctrl-C or an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import acp_host

ROOT = Path(__file__).resolve().parents[2]


async def run_session(agent: acp_host.AsyncAgent, n: int, prompt: str, cwd: str, out: Path) -> Dict[str, Any]:
    started = time.monotonic()
    summary: Dict[str, Any] = {"agent": agent.id, "agent_name": agent.name, "prompt": prompt, "cwd": cwd,
                               "session": None, "stop_reason": None, "error": None, "text": "",
                               "permissions": [], "tool_calls": [], "usage": None, "events": 0}
    try:
        session = await agent.new_session(cwd)
        summary["session"] = session.id
        text: List[str] = []
        # Subscribe before prompting, so no event of the turn is missed.
        async with session.events() as events:
            turn = asyncio.ensure_future(session.prompt(prompt))
            async for ev in events:
                summary["events"] += 1
                # Narrowing on `kind`, then on the update's tag, types `ev.data` (acp_host.types).
                if ev.kind == "session_update" and ev.data["sessionUpdate"] == "agent_message_chunk":
                    content = ev.data["content"]
                    if content["type"] == "text":
                        text.append(content["text"])
                elif ev.kind == "permission_resolved":
                    d = ev.data
                    summary["permissions"].append({k: d.get(k) for k in ("decidedBy", "optionKind", "rule", "outcome")})
                elif ev.kind == "turn_ended":
                    break
            result = await turn
        summary["stop_reason"] = result.stop_reason
        summary["text"] = "".join(text)
        state = session.state
        summary["tool_calls"] = [{"id": t.get("toolCallId"), "title": t.get("title"), "kind": t.get("kind"),
                                  "status": t.get("status")} for t in state.tool_calls]
        summary["usage"] = result.usage or state.usage
    except acp_host.AcpError as exc:
        summary["error"] = {"code": exc.code, "message": str(exc), "data": exc.data}
    summary["seconds"] = round(time.monotonic() - started, 3)
    path = out / f"{n:03d}-{summary['session'] or 'failed'}.json"
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


async def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=4)
    p.add_argument("--agents", type=int, default=2)
    p.add_argument("--prompt", default="Take some notes about this project")
    p.add_argument("--cwd", default=os.getcwd())
    p.add_argument("--out", default="acp-summaries")
    p.add_argument("agent", nargs="*", help="agent command (after --)")
    args = p.parse_args()
    command = args.agent or [str(ROOT / "target" / "debug" / "acp-mock-agent")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cwd = os.path.abspath(args.cwd)

    async with acp_host.AsyncHost(policy="read-only", roots=[cwd]) as host:
        agents = await asyncio.gather(*(host.spawn(command) for _ in range(max(1, args.agents))))
        summaries = await asyncio.gather(*(
            run_session(agents[i % len(agents)], i, args.prompt, cwd, out) for i in range(args.sessions)
        ))
    failed = [s for s in summaries if s["error"]]
    for s in summaries:
        status = s["stop_reason"] or f"{s['error']['code']}: {s['error']['message']}"
        print(f"agent {s['agent']} session {s['session']}: {status}, {len(s['permissions'])} permission "
              f"decision(s), {s['events']} events, {s['seconds']} s", file=sys.stderr)
    print(f"{len(summaries)} summaries in {out}/", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except KeyboardInterrupt:
        sys.exit(130)

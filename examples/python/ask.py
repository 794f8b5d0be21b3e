#!/usr/bin/env python3
"""One prompt with the synchronous API: stream the agent's reply, ask on the terminal before
each tool call it wants to run.

    python examples/python/ask.py [--cwd DIR] [--yes] "PROMPT" [-- AGENT_CMD ARGS...]

Without AGENT_CMD the repo's mock agent runs. ``--yes`` answers every permission request with
the agent's "allow once" option (no terminal needed). Ctrl-C cancels the turn and exits.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import Optional

import acp_host

ROOT = Path(__file__).resolve().parents[2]
_ask_lock = threading.Lock()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cwd", default=os.getcwd())
    p.add_argument("--yes", action="store_true", help="allow every tool call once, without asking")
    p.add_argument("prompt")
    p.add_argument("agent", nargs="*", help="agent command (after --)")
    args = p.parse_args()
    command = args.agent or [str(ROOT / "target" / "debug" / "acp-mock-agent")]

    def decide(req: acp_host.PermissionRequest) -> Optional[str]:
        # Called on a worker thread of the host while the main thread waits in prompt().
        with _ask_lock:
            choices = ", ".join(f"{i}) {o.name}" for i, o in enumerate(req.options))
            print(f"\n[permission] {req.title or req.tool_kind or 'tool call'}: {choices}", file=sys.stderr)
            if args.yes:
                return req.option_id("allow_once")
            answer = input("choose a number (anything else denies): ").strip()
            if answer.isdigit() and int(answer) < len(req.options):
                return req.options[int(answer)].option_id
            return None

    with acp_host.Host(on_permission=decide, permission_timeout=600) as host:
        agent = host.spawn(command)
        session = agent.new_session(os.path.abspath(args.cwd))  # the host takes absolute paths only
        events = session.events()  # subscribe before prompting

        def show() -> None:
            for ev in events:
                if ev.kind == "session_update":
                    update = ev.data  # narrowed below by its tag, `sessionUpdate`
                    if update["sessionUpdate"] == "agent_message_chunk" and update["content"]["type"] == "text":
                        print(update["content"]["text"], end="", flush=True)
                    elif update["sessionUpdate"] == "tool_call":
                        print(f"\n[tool] {update['title']}", file=sys.stderr)
                elif ev.kind == "turn_ended":
                    return

        printer = threading.Thread(target=show, daemon=True)
        printer.start()
        try:
            result = session.prompt(args.prompt)
        except KeyboardInterrupt:
            print("\n[cancelled]", file=sys.stderr)
            return 130
        printer.join(5)
        print(f"\n[{result.stop_reason}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

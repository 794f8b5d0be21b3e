# What the docs' Python blocks assume exists (tests/docs/run.py puts this before each block, run
# in a scratch dir that has registry.json, policy.json and the agent names on PATH as the mock).
# No `from __future__ import annotations`: it would hide annotations that fail on Python 3.9.

import os
from typing import Any

import acp_host
from acp_host.registry import Registry

cache = os.path.abspath("cache")
# An agent serving ACP on a loopback port (tests/docs/run.py bridges each connection to a mock).
port = int(os.environ["ACP_DOC_AGENT_PORT"])
project = os.getcwd()
os.makedirs(cache, exist_ok=True)


class _Editor:
    def unsaved_buffers(self) -> list[str]:
        return []


editor = _Editor()
registry = Registry.from_file("registry.json")
host = acp_host.Host(policy="read-only")
agent = host.spawn(["acp-mock-agent"])
session = agent.new_session(cwd=project)


def _a_turn_then_close() -> None:
    # A block that iterates `session.events()` sees one turn and then the end of the stream.
    import time

    time.sleep(0.5)
    try:
        session.prompt("hello")
        session.close()
    except acp_host.AcpError:
        pass  # the block closed the host or the session itself


import threading  # noqa: E402

if os.environ.get("ACP_DOC_SESSION_ENDS"):  # run.py: the block iterates `session.events()`
    threading.Thread(target=_a_turn_then_close, daemon=True).start()

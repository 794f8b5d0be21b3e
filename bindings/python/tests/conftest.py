"""Shared fixtures: the mock agent, the interop peers, and a process-table check after every test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "fixtures" / "scenarios"
INTEROP = ROOT / "fixtures" / "interop"
T = 20.0  # seconds: generous bound for any single wait (a test that hits it failed)


def _mock_agent() -> str:
    env = os.environ.get("ACP_MOCK_AGENT")
    if env:
        return env
    path = ROOT / "target" / "debug" / "acp-mock-agent"
    if not path.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "acp-mock-agent"], cwd=ROOT, check=True)
    return str(path)


MOCK = _mock_agent()


def mock(scenario: "str | None" = None, *extra: str) -> List[str]:
    cmd = [MOCK]
    if scenario:
        cmd += ["--scenario", scenario]
    return cmd + list(extra)


@pytest.fixture
def mock_cmd():
    return mock


#: Prepended to the code of a child interpreter that a test interrupts with SIGINT. A child inherits
#: the disposition and the mask of SIGINT: started from a script's background job, `nohup`, or some
#: CI runners, SIGINT is ignored (Python then installs no KeyboardInterrupt handler) or blocked, and
#: the test's Ctrl-C would never arrive. This makes the child what an interactive shell starts.
#: (Not a `preexec_fn`: that is unsafe in a process with threads, as pytest's is after a host ran.)
DEFAULT_SIGINT = (
    "import signal as _s; _s.pthread_sigmask(_s.SIG_UNBLOCK, {_s.SIGINT}); "
    "_s.signal(_s.SIGINT, _s.default_int_handler); del _s\n"
)


def python_child(code: str, *args: str) -> List[str]:
    """argv of a child interpreter running ``code`` with Python's default Ctrl-C handling."""
    return [sys.executable, "-c", DEFAULT_SIGINT + code, *args]


def live_children() -> Dict[int, str]:
    """Processes whose parent is this test process (zombies excluded): pid -> command line."""
    me = os.getpid()
    out: Dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            fields = stat[stat.rindex(")") + 2:].split()
            state, ppid = fields[0], int(fields[1])
            if ppid != me or state == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            out[int(entry)] = cmd
        except (OSError, ValueError):
            continue
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        return stat[stat.rindex(")") + 2:].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return not alive(pid)


@pytest.fixture(autouse=True)
def no_leaked_processes():
    """Every test must leave no agent (or terminal) process behind once its hosts are closed."""
    before = set(live_children())
    yield
    deadline = time.monotonic() + 6.0
    leaked: Dict[int, str] = {}
    while time.monotonic() < deadline:
        leaked = {p: c for p, c in live_children().items() if p not in before}
        if not leaked:
            return
        time.sleep(0.05)
    pytest.fail(f"processes left behind: {leaked}")


def interop_peer(name: str) -> str:
    path = INTEROP / name
    probe = {
        "ts-agent": INTEROP / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "examples" / "agent.js",
        "py-echo-agent": INTEROP / ".cache" / "agent_client_protocol-0.12.1" / "examples" / "echo_agent.py",
    }[name]
    if not probe.exists():
        pytest.fail(f"{probe} missing: run scripts/setup")
    return str(path)


def agent_pid(events) -> int:
    for ev in events:
        if ev.kind == "agent_ready":
            return int(ev.data["pid"])
    raise AssertionError("no agent_ready event")

"""Terminal login: ``on_terminal_auth`` runs the agent's login; ``agent.terminal_auth`` relaunches
the agent, on which the call that raised ``AuthRequiredError`` succeeds (sync and asyncio)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

import acp_host
from conftest import T, mock

CWD = "/tmp"


def run_login(seen: List[Dict[str, Any]]) -> Any:
    def run(cmd: Dict[str, Any]) -> int:
        seen.append(cmd)
        env = dict(os.environ)
        for k, v in cmd["env"].items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return subprocess.run([cmd["command"], *cmd["args"]], env=env, stdout=subprocess.DEVNULL).returncode

    return run


def test_a_terminal_login_relaunches_the_agent(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    seen: List[Dict[str, Any]] = []
    with acp_host.Host(on_terminal_auth=run_login(seen)) as host:
        agent = host.spawn(mock("auth-required"), env={"ACP_MOCK_CREDENTIALS": str(creds)})
        assert agent.auth_method_kinds == {"mock-login": "agent", "mock-terminal": "terminal"}
        with pytest.raises(acp_host.AuthRequiredError):
            agent.new_session(CWD)
        fresh = agent.terminal_auth("mock-terminal")
        assert fresh.id != agent.id
        assert seen[0]["args"][-1] == "--login" and seen[0]["env"]["MOCK_LOGIN"] == "1"
        assert creds.exists()
        assert fresh.new_session(CWD).prompt("hi").stop_reason == "end_turn"


def test_a_failed_login_raises_auth_required_and_keeps_the_agent(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    with acp_host.Host(on_terminal_auth=run_login([])) as host:
        agent = host.spawn(mock("auth-required"),
                           env={"ACP_MOCK_CREDENTIALS": str(creds), "ACP_MOCK_LOGIN_FAIL": "1"})
        with pytest.raises(acp_host.AuthRequiredError, match="status 3"):
            agent.terminal_auth("mock-terminal")
        with pytest.raises(acp_host.InvalidArgumentError):
            agent.terminal_auth("mock-login")
        agent.authenticate("mock-login")
        agent.new_session(CWD)
    with acp_host.Host() as plain:
        agent = plain.spawn(mock("auth-required"), env={"ACP_MOCK_CREDENTIALS": str(creds)})
        with pytest.raises(acp_host.UnsupportedError):
            agent.terminal_auth("mock-terminal")
    with pytest.raises(acp_host.ConfigError):
        acp_host.Host(on_terminal_auth="yes")  # type: ignore[arg-type]


def test_terminal_login_async_with_a_coroutine_handler(tmp_path: Path) -> None:
    creds = tmp_path / "creds"

    async def login(cmd: Dict[str, Any]) -> int:
        env = {**os.environ, **{k: v for k, v in cmd["env"].items() if v is not None}}
        proc = await asyncio.create_subprocess_exec(cmd["command"], *cmd["args"], env=env,
                                                    stdout=asyncio.subprocess.DEVNULL)
        return await proc.wait()

    async def main() -> None:
        async with acp_host.AsyncHost(on_terminal_auth=login) as host:
            agent = await host.spawn(mock("auth-required"), env={"ACP_MOCK_CREDENTIALS": str(creds)})
            fresh = await agent.terminal_auth("mock-terminal")
            session = await fresh.new_session(CWD)
            assert (await session.prompt("hi")).stop_reason == "end_turn"

    asyncio.run(asyncio.wait_for(main(), T))

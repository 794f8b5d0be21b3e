"""acp_host.registry: the core's registry through the Python face — resolution of each kind from
the fixture, errors with their paths, an install from a local tar.gz followed by a turn through
the installed binary, and hostile archives refused. Nothing here touches the network."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import platform as host_platform
import tarfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import acp_host
from acp_host.registry import AgentSpec, InstalledAgent, Registry
from conftest import MOCK, ROOT

FIXTURE = ROOT / "fixtures" / "registry" / "registry.json"


def current_platform() -> str:
    os_key = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}[host_platform.system()]
    arch = {"x86_64": "x86_64", "AMD64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[
        host_platform.machine()
    ]
    return f"{os_key}-{arch}"


def tar_gz(files: Dict[str, bytes], mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def one_binary(archive: str, sha256: Optional[str], cmd: str, args: List[str],
               env: Dict[str, str], platform: str) -> Registry:
    target: Dict[str, Any] = {"archive": archive, "cmd": cmd, "args": args, "env": env}
    if sha256 is not None:
        target["sha256"] = sha256
    doc = {
        "version": "1.0.0",
        "agents": [{
            "id": "tool", "name": "Tool", "version": "0.1.0", "description": "from a local archive",
            "distribution": {"binary": {platform: target}},
        }],
    }
    return Registry.from_json(json.dumps(doc))


def test_the_fixture_lists_its_agents() -> None:
    reg = Registry.from_file(FIXTURE)
    assert reg.version == "1.0.0"
    assert len(reg) == 7
    assert [a.id for a in reg.agents()] == [
        "npx-agent", "uvx-agent", "cmd-agent", "binary-agent", "unverified-agent", "mixed-agent",
        "escape-agent",
    ]
    npx = reg.agent("npx-agent")
    assert (npx.name, npx.version, npx.authors, npx.license) == ("Npx Agent", "1.2.3", ["Example Author"], "MIT")
    assert npx.distribution["npx"]["package"] == "@example/npx-agent@1.2.3"
    assert "futureField" not in vars(npx)


def test_npx_uvx_and_binary_resolve_to_specs(tmp_path: Path) -> None:
    reg = Registry.from_file(str(FIXTURE))
    r = reg.resolve("npx-agent")
    assert (r.kind, r.agent_id, r.agent_version, r.needs_install) == ("npx", "npx-agent", "1.2.3", False)
    assert r.spec == AgentSpec("npx", ("-y", "@example/npx-agent@1.2.3", "--acp", "--verbose"),
                               {"NPX_AGENT_MODE": "acp"})
    assert r.spec.command == ["npx", "-y", "@example/npx-agent@1.2.3", "--acp", "--verbose"]

    r = reg.resolve("uvx-agent", uvx_command="/opt/uv/bin/uvx")
    assert r.kind == "uvx"
    assert r.spec.command == ["/opt/uv/bin/uvx", "uvx-agent==0.4.0", "acp"]
    assert r.spec.env == {"UVX_AGENT_LOG": "debug"}

    assert reg.resolve("cmd-agent").spec.command == [
        "npx", "-y", "--package", "@example/tools@2.0.0", "tools-acp", "--stdio"]
    assert reg.resolve("cmd-agent", prefer="uvx").spec.command == [
        "uvx", "--from", "example-tools==2.0.0", "tools-acp"]

    r = reg.resolve("binary-agent", platform="linux-x86_64", cache_dir=tmp_path)
    assert (r.kind, r.platform, r.needs_install) == ("binary", "linux-x86_64", True)
    install_dir = tmp_path / "binary-agent" / "3.1.4" / "linux-x86_64"
    assert r.install_dir == str(install_dir)
    assert r.spec == AgentSpec(str(install_dir / "binary-agent"), ("acp",),
                               {"BINARY_AGENT_PLATFORM": "linux-x86_64"})
    assert not install_dir.exists()  # resolution never installs

    # Without an install, the default order takes npx over a binary; `prefer` overrides it.
    assert reg.resolve("mixed-agent", platform="linux-x86_64", cache_dir=tmp_path).kind == "npx"
    r = reg.resolve("mixed-agent", prefer=["binary", "npx"], platform="linux-x86_64", cache_dir=tmp_path)
    assert (r.kind, r.needs_install) == ("binary", True)


def test_errors_map_to_the_exception_classes(tmp_path: Path) -> None:
    reg = Registry.from_file(FIXTURE)
    with pytest.raises(acp_host.NotFoundError) as nf:
        reg.resolve("no-such-agent")
    assert "no-such-agent" in str(nf.value)
    with pytest.raises(acp_host.NotFoundError):
        reg.agent("no-such-agent")
    with pytest.raises(acp_host.NotFoundError):  # no binary for this platform, nothing else
        reg.resolve("binary-agent", platform="linux-x86_64", prefer=["npx"])
    with pytest.raises(acp_host.InvalidArgumentError):
        reg.resolve("npx-agent", prefer=["pip"])  # type: ignore[list-item]
    with pytest.raises(acp_host.InvalidArgumentError):
        reg.resolve("binary-agent", platform="beos-m68k", cache_dir=tmp_path)
    with pytest.raises(acp_host.ConfigError) as esc:
        reg.resolve("escape-agent", platform="linux-x86_64", cache_dir=tmp_path)
    assert esc.value.data["path"] == "agents[6].distribution.binary.linux-x86_64.cmd"

    bad = {"agents": [
        {"id": "a", "name": "A", "version": "1.0.0", "description": "d", "distribution": {"npx": {"package": "a"}}},
        {"id": "b", "name": "B", "version": "1.0.0", "description": "d", "distribution": {"npx": {"args": []}}},
    ]}
    with pytest.raises(acp_host.ConfigError) as ce:
        Registry.from_json(json.dumps(bad))
    assert ce.value.code == "invalid_config"
    assert ce.value.data["path"] == "agents[1].distribution.npx.package"
    assert not isinstance(ce.value, acp_host.PolicyError)
    with pytest.raises(acp_host.ConfigError) as ce:
        Registry.from_json("{not json")
    assert ce.value.data["path"] == "$"
    with pytest.raises(acp_host.IoError):
        Registry.from_file(tmp_path / "missing.json")


def test_an_installed_binary_runs_a_turn(tmp_path: Path) -> None:
    plat = current_platform()
    script = (
        "#!/bin/sh\n"
        '[ "$TOOL_FROM_REGISTRY" = 1 ] || exit 3\n'
        '[ "$1" = --from-registry ] || exit 4\n'
        "shift\n"
        f"exec '{MOCK}' \"$@\"\n"
    ).encode()
    data = tar_gz({"agent/run.sh": script})  # 0644: the install makes the cmd executable
    archive = tmp_path / "agent.tar.gz"
    archive.write_bytes(data)
    reg = one_binary(archive.as_uri(), hashlib.sha256(data).hexdigest(), "./agent/run.sh",
                     ["--from-registry"], {"TOOL_FROM_REGISTRY": "1"}, plat)
    cache = tmp_path / "cache"

    before = reg.resolve("tool", cache_dir=cache)
    assert (before.kind, before.needs_install) == ("binary", True)
    installed = reg.install("tool", cache)
    install_dir = cache / "tool" / "0.1.0" / plat
    assert installed == InstalledAgent(str(install_dir), str(install_dir / "agent" / "run.sh"), False)
    assert reg.install("tool", str(cache)).already_installed  # nothing fetched the second time

    r = reg.resolve("tool", cache_dir=cache)
    assert (r.kind, r.needs_install, r.platform) == ("binary", False, plat)
    assert r.spec.program == installed.cmd
    with acp_host.Host() as host:
        agent = host.spawn(r.spec)
        assert agent.name == "acp-mock-agent"
        session = agent.new_session(cwd=str(tmp_path))
        assert session.prompt("hello").stop_reason == "end_turn"
        assert agent.shutdown().exit_code == 0

    async def through_async_host() -> str:
        async with acp_host.AsyncHost() as host:
            agent = await host.spawn(r.spec, cwd=tmp_path)
            session = await agent.new_session(cwd=str(tmp_path))
            return (await session.prompt("hello")).stop_reason

    assert asyncio.run(through_async_host()) == "end_turn"

    # `env=` overlays the spec's env: the script refuses to run without its variable.
    with acp_host.Host() as host:
        with pytest.raises((acp_host.AgentExitedError, acp_host.SpawnError)):
            host.spawn(r.spec, env={"TOOL_FROM_REGISTRY": None}, timeout=20)


def test_a_hostile_archive_is_refused_and_nothing_is_installed(tmp_path: Path) -> None:
    plat = current_platform()
    data = tar_gz({"agent/run.sh": b"#!/bin/sh\n", "../evil": b"pwned\n"})
    archive = tmp_path / "hostile.tar.gz"
    archive.write_bytes(data)
    reg = one_binary(str(archive), hashlib.sha256(data).hexdigest(), "./agent/run.sh", [], {}, plat)
    cache = tmp_path / "nest" / "cache"
    cache.mkdir(parents=True)
    with pytest.raises(acp_host.ConfigError) as e:
        reg.install("tool", cache)
    assert e.value.data["path"] == f"agents[0].distribution.binary.{plat}.archive"
    assert ".." in str(e.value)
    assert list(cache.iterdir()) == []
    assert not (tmp_path / "nest" / "evil").exists() and not (tmp_path / "evil").exists()


def test_unverifiable_and_remote_archives_are_not_installed(tmp_path: Path) -> None:
    plat = current_platform()
    data = tar_gz({"agent/run.sh": b"#!/bin/sh\n"})
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(data)
    no_sha = one_binary(archive.as_uri(), None, "./agent/run.sh", [], {}, plat)
    with pytest.raises(acp_host.ConfigError) as e:
        no_sha.install("tool", tmp_path / "cache")
    assert e.value.data["path"] == f"agents[0].distribution.binary.{plat}.sha256"
    wrong = one_binary(archive.as_uri(), "0" * 64, "./agent/run.sh", [], {}, plat)
    with pytest.raises(acp_host.ConfigError) as e:
        wrong.install("tool", tmp_path / "cache")
    assert e.value.data["path"] == f"agents[0].distribution.binary.{plat}.sha256"
    remote = one_binary("https://example.invalid/a.tar.gz", hashlib.sha256(data).hexdigest(),
                        "./agent/run.sh", [], {}, plat)
    with pytest.raises(acp_host.UnsupportedError) as u:
        remote.install("tool", tmp_path / "cache")
    assert "file://" in str(u.value)
    assert not (tmp_path / "cache" / "tool" / "0.1.0" / plat).exists()

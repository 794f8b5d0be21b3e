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
from typing import Any, Dict, Iterator, List, Optional, Union

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


# `install(..., fetch=)`: the embedder's download hook for URLs that are not local. Every URL
# below is served by a hook from bytes built here; nothing touches the network.

REMOTE = "https://example.invalid/tool-0.1.0.tar.gz"


def remote_tool(tmp_path: Path) -> "tuple[Registry, bytes, str]":
    plat = current_platform()
    data = tar_gz({"agent/run.sh": b"#!/bin/sh\necho from-the-hook\n"})
    return one_binary(REMOTE, hashlib.sha256(data).hexdigest(), "./agent/run.sh", [], {}, plat), data, plat


def test_a_fetch_hook_serves_an_https_archive(tmp_path: Path) -> None:
    reg, data, plat = remote_tool(tmp_path)
    calls: List[str] = []

    def fetch(url: str) -> bytes:
        calls.append(url)
        return data

    cache = tmp_path / "cache"
    installed = reg.install("tool", cache, fetch=fetch)
    install_dir = cache / "tool" / "0.1.0" / plat
    assert installed == InstalledAgent(str(install_dir), str(install_dir / "agent" / "run.sh"), False)
    assert Path(installed.cmd).read_bytes() == b"#!/bin/sh\necho from-the-hook\n"
    assert Path(installed.cmd).stat().st_mode & 0o100
    assert calls == [REMOTE]
    assert reg.install("tool", cache, fetch=fetch).already_installed
    assert calls == [REMOTE]  # installed: the hook is not called again
    r = reg.resolve("tool", cache_dir=cache)
    assert (r.needs_install, r.spec.program) == (False, installed.cmd)

    # bytearray and memoryview are bytes too.
    for i, wrap in enumerate([bytearray, memoryview]):
        other = tmp_path / f"cache-{i}"
        assert not reg.install("tool", other, fetch=lambda _url, w=wrap: w(data)).already_installed  # type: ignore[misc]
        assert (other / "tool" / "0.1.0" / plat / "agent" / "run.sh").is_file()


def test_a_fetch_hook_streams_chunks(tmp_path: Path) -> None:
    reg, data, plat = remote_tool(tmp_path)
    pulled: List[int] = []

    def fetch(url: str) -> Iterator[Union[bytes, bytearray]]:
        assert url == REMOTE
        for at in range(0, len(data), 7):
            pulled.append(at)
            yield data[at:at + 7] if at % 2 else bytearray(data[at:at + 7])
        yield b""

    installed = reg.install("tool", tmp_path / "cache", fetch=fetch)
    assert Path(installed.cmd).is_file()
    assert len(pulled) == (len(data) + 6) // 7

    # A list of chunks is an iterable too.
    chunks: List[Union[bytes, memoryview]] = [data[:10], memoryview(data[10:])]
    assert Path(reg.install("tool", tmp_path / "cache2", fetch=lambda _url: chunks).cmd).is_file()


def test_a_fetch_hook_that_raises_installs_nothing(tmp_path: Path) -> None:
    reg, data, plat = remote_tool(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()

    def refuse(url: str) -> bytes:
        raise ConnectionError("proxy said no")

    with pytest.raises(acp_host.IoError) as e:
        reg.install("tool", cache, fetch=refuse)
    assert REMOTE in str(e.value) and "ConnectionError" in str(e.value) and "proxy said no" in str(e.value)
    assert isinstance(e.value.__cause__, ConnectionError)
    assert list(cache.iterdir()) == []

    def cut_off(url: str) -> Iterator[bytes]:
        yield data[:20]
        raise TimeoutError("read timed out")

    with pytest.raises(acp_host.IoError) as e:
        reg.install("tool", cache, fetch=cut_off)
    assert "TimeoutError" in str(e.value) and "read timed out" in str(e.value)
    assert isinstance(e.value.__cause__, TimeoutError)
    assert list(cache.iterdir()) == []


def test_a_fetch_hook_with_other_bytes_fails_the_digest(tmp_path: Path) -> None:
    reg, data, plat = remote_tool(tmp_path)
    cache = tmp_path / "cache"
    evil = tar_gz({"agent/run.sh": b"#!/bin/sh\necho swapped\n"})
    with pytest.raises(acp_host.ConfigError) as e:
        reg.install("tool", cache, fetch=lambda _url: evil)
    assert e.value.data["path"] == f"agents[0].distribution.binary.{plat}.sha256"
    assert not cache.exists() or list(cache.iterdir()) == []

    # The fixture's entries: a made-up digest is a mismatch; no digest at all and the hook is
    # never called.
    fixture = Registry.from_file(FIXTURE)
    with pytest.raises(acp_host.ConfigError) as e:
        fixture.install("binary-agent", cache, platform="linux-x86_64", fetch=lambda _url: data)
    assert e.value.data["path"] == "agents[3].distribution.binary.linux-x86_64.sha256"
    called: List[str] = []
    with pytest.raises(acp_host.ConfigError) as e:
        fixture.install("unverified-agent", cache, platform="linux-x86_64",
                        fetch=lambda url: called.append(url) or data)  # type: ignore[func-returns-value]
    assert e.value.data["path"] == "agents[4].distribution.binary.linux-x86_64.sha256"
    assert called == []
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_fetch_hook_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    reg, data, plat = remote_tool(tmp_path)
    cache = tmp_path / "cache"
    for bad, name in [(lambda _url: "text", "str"), (lambda _url: 42, "int"), (lambda _url: None, "NoneType"),
                      (lambda _url: [data[:5], 7], "int")]:
        with pytest.raises(acp_host.InvalidArgumentError) as e:
            reg.install("tool", cache, fetch=bad)  # type: ignore[arg-type]
        assert not isinstance(e.value, acp_host.ConfigError)
        assert f"`{name}`" in str(e.value) and REMOTE in str(e.value)
        assert not cache.exists() or list(cache.iterdir()) == []

    async def async_fetch(url: str) -> bytes:
        return data

    with pytest.raises(acp_host.InvalidArgumentError) as e:
        reg.install("tool", cache, fetch=async_fetch)  # type: ignore[arg-type]
    assert "coroutine" in str(e.value) and "synchronous" in str(e.value)
    with pytest.raises(acp_host.InvalidArgumentError) as e:
        reg.install("tool", cache, fetch=b"not callable")  # type: ignore[arg-type]
    assert "callable" in str(e.value)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_local_archives_are_read_without_the_hook(tmp_path: Path) -> None:
    plat = current_platform()
    data = tar_gz({"agent/run.sh": b"#!/bin/sh\n"})
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()

    def never(url: str) -> bytes:
        raise AssertionError(f"the hook was called for {url}")

    for i, url in enumerate([archive.as_uri(), str(archive)]):
        reg = one_binary(url, sha, "./agent/run.sh", [], {}, plat)
        assert Path(reg.install("tool", tmp_path / f"hooked-{i}", fetch=never).cmd).is_file()
        assert Path(reg.install("tool", tmp_path / f"plain-{i}").cmd).is_file()

    remote = one_binary(REMOTE, sha, "./agent/run.sh", [], {}, plat)
    with pytest.raises(acp_host.UnsupportedError) as u:
        remote.install("tool", tmp_path / "cache")
    assert "file://" in str(u.value)
    assert not (tmp_path / "cache" / "tool").exists()

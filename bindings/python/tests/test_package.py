"""The artifacts as their users get them (issue 11): the wheel that scripts/setup-python built into
target/python-dist/ (the same file the other tests run, installed in .venv) installs into a fresh,
empty venv of the oldest and of the newest supported CPython with no cargo/rustc on PATH, ships its
typing files and runs a turn, sync and asyncio; it is abi3, links the system's unwinder (libgcc_s)
and is stripped; the release one (`scripts/setup-python --release`) is manylinux2014 (glibc 2.17).
The sdist carries the Rust sources and resolves, and pip builds the package from the clone."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import acp_host
from conftest import MOCK, ROOT

PKG = ROOT / "bindings" / "python"
#: scripts/setup-python's own output directory (target/wheels gets other builds' wheels).
DIST = ROOT / "target" / "python-dist"
#: The oldest CPython the package supports (pyproject's requires-python) and the newest one this kind
#: of machine has (pyenv). Each gets a fresh venv with only the wheel in it.
OLDEST, NEWEST = "3.9", "3.13"
#: How scripts/setup-python built the wheel: `dev` (the suite's: the dev profile, the system
#: linker, a linux_* tag) or `release` (`--release`: zig, manylinux2014; scripts/release-artifacts
#: builds the same for every target).
PROFILE = (DIST / "profile").read_text().strip() if (DIST / "profile").is_file() else "release"
#: The stripped module is ~7.4 MB in release and ~20 MB in dev; unstripped it is 67 MB and more.
MAX_NATIVE_BYTES = (16 if PROFILE == "release" else 40) << 20
GLIBC_FLOOR = (2, 17)  # manylinux2014: zig links against glibc 2.17 stubs (see scripts/setup-python)


def _one(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern))
    assert len(found) == 1, f"want exactly one {pattern} in {DIST} (scripts/setup-python builds it): {found}"
    return found[0]


def _wheel() -> Path:
    return _one("acp_host-*.whl")


def _cpython(minor: str) -> Optional[str]:
    """An interpreter of CPython `minor`: pyenv's newest patch release, else `python3.X` on PATH."""
    def patch(p: str) -> int:
        m = re.search(r"/\d+\.\d+\.(\d+)/", p)
        return int(m.group(1)) if m else -1
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{minor}.*/bin/python3")), key=patch)
    found = [p for p in found if re.search(rf"/{re.escape(minor)}\.\d+/bin/", p)]
    return found[-1] if found else shutil.which(f"python{minor}")


def _no_rust_env(venv: Path) -> Dict[str, str]:
    """The environment of an empty consumer: the venv first, and no directory with cargo or rustc."""
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not any(os.path.exists(os.path.join(d, tool)) for tool in ("cargo", "rustc", "rustup"))]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    return env


def _run(cmd: List[str], env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=cwd)
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _elf_headers(elf: bytes) -> List[Tuple[int, ...]]:
    """The section headers of a 64-bit little-endian ELF file: (name, type, flags, addr, offset, size,
    link, ...)."""
    assert elf[:6] == b"\x7fELF\x02\x01", "not a 64-bit little-endian ELF file"
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]


def _cstr(elf: bytes, at: int) -> str:
    return elf[at: elf.index(b"\0", at)].decode()


def _elf_sections(elf: bytes) -> List[str]:
    """The section names of a 64-bit little-endian ELF file."""
    shstrndx, = struct.unpack_from("<H", elf, 0x3E)
    headers = _elf_headers(elf)
    strtab = headers[shstrndx][4]
    return [_cstr(elf, strtab + h[0]) for h in headers]


def _elf_needed(elf: bytes) -> List[str]:
    """The DT_NEEDED entries (the shared libraries it links) of a 64-bit little-endian ELF file."""
    headers = _elf_headers(elf)
    dynamic = next(h for h in headers if h[1] == 6)  # SHT_DYNAMIC
    dynstr = headers[dynamic[6]][4]
    entries = (struct.unpack_from("<qQ", elf, dynamic[4] + i) for i in range(0, dynamic[5], 16))
    return [_cstr(elf, dynstr + val) for tag, val in entries if tag == 1]  # DT_NEEDED


#: Runs in the consumer venv (`python -I`, cwd outside the repository); Python 3.9 syntax.
CONSUMER = r'''
import asyncio, json, os, shutil, sys, sysconfig
from pathlib import Path

assert shutil.which("cargo") is None and shutil.which("rustc") is None, os.environ["PATH"]
import acp_host

pkg = Path(acp_host.__file__).resolve().parent
site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
assert pkg.parent in site, (str(pkg), sorted(map(str, site)))
assert (pkg / "py.typed").is_file(), "py.typed not installed"
stubs = sorted(p.name for p in pkg.glob("*.pyi"))
assert "_native.pyi" in stubs, stubs
native = [p for p in pkg.iterdir() if p.name.startswith("_native.") and p.suffix == ".so"]
assert len(native) == 1, native
mock, cwd = sys.argv[1], sys.argv[2]

def allow(req):
    return req.option_id("allow_once")

with acp_host.Host(on_permission=allow) as host:
    with host.spawn([mock]) as agent:
        with agent.new_session(cwd=cwd) as session:
            turn = session.prompt("hello")
            sync = {"stop_reason": turn.stop_reason, "text": turn.text,
                    "tool_calls": len(session.state.tool_calls)}

async def main():
    async with acp_host.AsyncHost(on_permission=allow) as host:
        agent = await host.spawn([mock])
        session = await agent.new_session(cwd=cwd)
        kinds = []
        async with session.events() as events:
            task = asyncio.create_task(session.prompt("hello"))
            async for ev in events:
                kinds.append(ev.kind)
                if ev.kind == "turn_ended":
                    break
        turn = await task
        return {"stop_reason": turn.stop_reason, "text": turn.text, "kinds": kinds}

print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "version": acp_host.__version__,
    "stubs": stubs,
    "native_bytes": native[0].stat().st_size,
    "installed_bytes": sum(p.stat().st_size for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts),
    "sync": sync,
    "async": asyncio.run(main()),
}))
'''


@pytest.mark.parametrize("minor", [OLDEST, NEWEST])
def test_the_wheel_installs_and_runs_a_turn_in_a_fresh_venv_without_rust(minor: str, tmp_path: Path) -> None:
    python = _cpython(minor)
    if python is None:
        pytest.skip(f"CPython {minor} is not installed here (~/.pyenv/versions/{minor}.*, python{minor} on PATH)")
    wheel = _wheel()
    venv = tmp_path / f"venv-{minor}"
    _run([python, "-m", "venv", str(venv)])
    env = _no_rust_env(venv)
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "-q", "--no-index", "--disable-pip-version-check", str(wheel)],
         env=env, cwd=tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    out = _run([py, "-I", "-c", CONSUMER, MOCK, str(project)], env=env, cwd=tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    print(f"CPython {got['python']} ({python}): installed acp_host {got['installed_bytes']} bytes, "
          f"_native {got['native_bytes']} bytes")
    assert got["python"] == minor and got["version"] == acp_host.__version__
    assert got["native_bytes"] < MAX_NATIVE_BYTES, "the native module is not stripped"
    for turn in (got["sync"], got["async"]):
        assert turn["stop_reason"] == "end_turn" and "ACP mock agent" in turn["text"], turn
    assert got["sync"]["tool_calls"] >= 1
    assert got["async"]["kinds"][0] == "session_opened" and "session_update" in got["async"]["kinds"]


def test_oldest_is_the_requires_python_floor() -> None:
    text = (PKG / "pyproject.toml").read_text()
    assert f'requires-python = ">={OLDEST}"' in text
    assert "abi3-py" + OLDEST.replace(".", "") in (ROOT / "Cargo.toml").read_text()


def test_the_tests_run_the_installed_wheel() -> None:
    pkg = Path(acp_host.__file__).resolve().parent
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    assert pkg.parent in site, f"acp_host imported from {pkg}, not from the wheel installed in {sys.prefix}"
    with zipfile.ZipFile(_wheel()) as zf:
        names = set(zf.namelist())
    for rel in ("py.typed", "_native.pyi", "__init__.py"):
        assert f"acp_host/{rel}" in names
        assert (pkg / rel).read_bytes() == (PKG / "python" / "acp_host" / rel).read_bytes(), \
            f"installed {rel} differs from the source: run scripts/setup-python"


def test_the_wheel_is_abi3_and_stripped() -> None:
    wheel = _wheel()
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
        natives = [n for n in zf.namelist() if re.fullmatch(r"acp_host/_native\..*so", n)]
        assert len(natives) == 1, zf.namelist()
        so = zf.read(natives[0])
        requires = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    tags = re.findall(r"^Tag: (\S+)$", meta, re.M)
    machine = os.uname().machine
    if PROFILE == "release":
        assert tags == [f"cp39-abi3-manylinux2014_{machine}", f"cp39-abi3-manylinux_2_17_{machine}"], tags
    else:
        assert tags == [f"cp39-abi3-linux_{machine}"], tags
    assert "Root-Is-Purelib: false" in meta
    assert not re.search(r"^Requires-Dist: (?!.*extra ==)", requires, re.M), "runtime dependencies"
    assert len(so) < MAX_NATIVE_BYTES, f"_native ({PROFILE}) is {len(so)} bytes: not stripped"
    sections = _elf_sections(so)
    assert ".text" in sections and not [n for n in sections if n.startswith(".debug") or n == ".symtab"], sections
    # The unwinder is the system's libgcc_s, as for any Rust linux-gnu library; not zig's static
    # libunwind, which crashes CPython's exit with threads in the host (scripts/setup-python).
    needed = _elf_needed(so)
    assert "libgcc_s.so.1" in needed, needed
    print(f"{wheel.name}: {wheel.stat().st_size} bytes, _native {len(so)} bytes")


@pytest.mark.skipif(PROFILE != "release", reason="the release wheel's floor (scripts/setup-python --release; "
                    "scripts/release-artifacts checks every target's): the suite's dev wheel is linked for this machine")
def test_the_release_wheel_needs_glibc_2_17_at_most() -> None:
    with zipfile.ZipFile(_wheel()) as zf:
        so = zf.read(next(n for n in zf.namelist() if re.fullmatch(r"acp_host/_native\..*so", n)))
    versions = {tuple(map(int, v)) for v in re.findall(rb"GLIBC_(\d+)\.(\d+)", so)}
    assert versions and max(versions) <= GLIBC_FLOOR, f"needs glibc {max(versions)}"


def test_the_sdist_carries_the_sources_and_resolves(tmp_path: Path) -> None:
    sdist = _one("acp_host-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = set(tf.getnames())
        top = sdist.name[: -len(".tar.gz")]
        for rel in ("pyproject.toml", "Cargo.toml", "Cargo.lock", "PKG-INFO", "core/Cargo.toml", "core/src/lib.rs",
                    "bindings/python/Cargo.toml", "bindings/python/src/lib.rs", "python/acp_host/py.typed",
                    "python/acp_host/_native.pyi", "python/acp_host/__init__.py"):
            assert f"{top}/{rel}" in names, f"{rel} missing from {sdist.name}"
        tf.extractall(tmp_path)  # noqa: S202 (our own artifact)
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("no cargo: the sdist's workspace is not resolved")
    # The from-source path: the trimmed workspace of the sdist resolves with its lock file.
    _run([cargo, "metadata", "--format-version", "1", "--locked", "--offline", "--no-deps"], cwd=tmp_path / top)


def test_pip_builds_the_package_from_the_clone(tmp_path: Path) -> None:
    # `pip install ./bindings/python` = pip's PEP 517 build with maturin (pyproject's backend, in the
    # tree, stripped). Given scripts/setup-python's build arguments ($DIST/build-args: the profile,
    # the features, the linker), it reuses that build (a few seconds): cargo fingerprints the
    # profile, the features and the linker, so other arguments (a user's plain from-source
    # install) would compile the whole workspace again. Build isolation is off (it would only fetch the same pinned maturin).
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               MATURIN_PEP517_ARGS=(DIST / "build-args").read_text().strip())
    release = _wheel()
    before = set(DIST.iterdir())
    try:
        _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
              "--disable-pip-version-check", "-w", str(tmp_path), str(PKG)], env=env, cwd=ROOT)
    finally:
        for extra in set(DIST.iterdir()) - before:  # maturin's PEP 517 build leaves its wheel there too
            extra.unlink()
    built = sorted(tmp_path.glob("acp_host-*.whl"))
    assert len(built) == 1 and built[0].name.startswith(release.name.split("-manylinux")[0]), built
    with zipfile.ZipFile(built[0]) as a, zipfile.ZipFile(release) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())


#: Runs in a venv of the oldest CPython: every ```python block of the README must parse there and
#: its imports, functions and classes must be defined there (annotations are evaluated when a
#: function is defined: `str | None` fails on 3.9); the blocks named in argv[3] run whole.
README_CHECK = r'''
import ast, asyncio, json, os, sys
from typing import Any, Dict, List, Optional
import acp_host
# Snippets lean on what the quick start imported.
context = {"acp_host": acp_host, "asyncio": asyncio, "json": json, "os": os, "Any": Any, "Dict": Dict,
           "List": List, "Optional": Optional}
blocks, run = json.loads(open(sys.argv[1]).read()), set(json.loads(sys.argv[2]))
for i, src in enumerate(blocks):
    tree = ast.parse(src, f"README block {i}")
    if i not in run:
        keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        tree.body = [n for n in tree.body if isinstance(n, keep)]
    try:
        exec(compile(tree, f"README block {i}", "exec"), {"__name__": "readme", **context})
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "acp_host":
            raise
        print(f"block {i}: {e.name} is not installed here; its definitions were not checked")
print("ok")
'''


def _readme_blocks() -> List[str]:
    return re.findall(r"```python\n(.*?)```", (PKG / "README.md").read_text(), re.S)


def test_readme_python_runs_on_the_oldest_python(tmp_path: Path) -> None:
    python = _cpython(OLDEST)
    if python is None:
        pytest.skip(f"CPython {OLDEST} is not installed here (~/.pyenv/versions/{OLDEST}.*, python{OLDEST} on PATH)")
    venv = tmp_path / "venv"
    _run([python, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "-q", "--no-index", "--disable-pip-version-check", str(_wheel())])
    project = tmp_path / "project"
    project.mkdir()
    blocks = _readme_blocks()
    # The quick starts run whole, against the mock agent, in a real directory.
    quick = [i for i, b in enumerate(blocks)
             if 'host.spawn(["claude-agent-acp"])' in b or 'host.spawn(["my-agent", "--acp"])' in b]
    assert len(quick) == 2, "the two quick starts (sync, asyncio)"
    for i in quick:
        blocks[i] = (blocks[i].replace('["claude-agent-acp"]', json.dumps([MOCK]))
                     .replace('["my-agent", "--acp"]', json.dumps([MOCK]))
                     .replace('"/abs/project"', json.dumps(str(project))))
    src = tmp_path / "blocks.json"
    src.write_text(json.dumps(blocks))
    out = _run([py, "-I", "-c", README_CHECK, str(src), json.dumps(quick)], cwd=project)
    assert out.strip().splitlines()[-1] == "ok", out

"""Runs every fenced code block of the docs listed in tests/docs/files.txt (scripts/test-docs).

Each block goes to the runner of its language; a block no runner takes and no marker explains
fails the run. Markers (an HTML comment on the line before the fence, see blocks.py):
  output / skip REASON / compile REASON / run [root] / json KIND. Every marker's reason is
  printed. `run` executes an sh block in a scratch dir (`run root`: in the repository root).

Usage: run.py [--root DIR] [--only LANG,...] [FILE.md ...]   (files default to files.txt)
Environment: ACP_DOC_PY39 — a Python 3.9 interpreter with acp_host installed (optional).
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import Block, extract, known_failures  # noqa: E402

RUST_NAME = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)", re.M)


class Result:
    def __init__(self, block: Block, status: str, note: str = "") -> None:
        self.block, self.status, self.note = block, status, note


class Harness:
    """status: ran (executed), checked (parsed/fed to the core, syntax-checked or compiled),
    marked (output/skip marker, reason printed), gap (no runner for the language here, printed),
    fail."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self.root, self.scratch = root, scratch
        self.results: list[Result] = []
        self.target = Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
        self.bin = self.target / "debug"
        self.env = dict(os.environ)
        self.env["PATH"] = f"{scratch / 'bin'}{os.pathsep}{self.bin}{os.pathsep}{os.environ['PATH']}"
        self.env["ACP_DOC_SCRATCH"] = str(scratch)
        # The mock agents share their sessions (a block loads one another process opened).
        self.env["ACP_MOCK_STATE_DIR"] = str(scratch / "state")
        for k in ("ACP_MOCK_CREDENTIALS", "ACP_MOCK_LOGIN_FAIL"):
            self.env.pop(k, None)
        self.rust: list[Block] = []
        self.kotlin: list[Block] = []
        self.policy_schema: tuple[Block, dict] | None = None
        self.policies: list[tuple[Block, object]] = []

    # ---- helpers -------------------------------------------------------------------------
    def add(self, b: Block, status: str, note: str = "") -> Result:
        r = Result(b, status, note)
        self.results.append(r)
        return r

    def sh(self, cmd: list[str], cwd: Path | None = None, timeout: int = 120, stdin: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(cmd, cwd=cwd or self.scratch, env=env or self.env, text=True,
                                  input=stdin if stdin is not None else "",
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {timeout}s: {e}")
        except OSError as e:  # the tool is not there (e.g. .venv before scripts/setup-python)
            return subprocess.CompletedProcess(cmd, 127, "", f"cannot run {cmd[0]}: {e}")

    def work(self, b: Block) -> Path:
        d = self.scratch / "blocks" / re.sub(r"[^A-Za-z0-9]+", "_", b.where)
        d.mkdir(parents=True, exist_ok=True)
        for f in ("registry.json", "policy.json"):
            shutil.copy(self.scratch / f, d / f)
        return d

    def outcome(self, b: Block, p: subprocess.CompletedProcess[str], ok: str) -> Result:
        if p.returncode == 0:
            return self.add(b, ok)
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-12:]
        return self.add(b, "fail", f"exit {p.returncode}\n" + "\n".join("    " + l for l in tail))

    def abs_paths(self, code: str) -> str:
        """`/abs/...` in the docs stands for an absolute path of the reader's: the scratch dir's."""
        return code.replace("'/abs/", f"'{self.scratch}/abs/").replace('"/abs/', f'"{self.scratch}/abs/')

    # ---- runners -------------------------------------------------------------------------
    def run_block(self, b: Block) -> None:
        lang = b.lang.lower()
        if b.marker == "output":
            self.add(b, "marked", "output" + (f": {b.marker_arg}" if b.marker_arg else ""))
            return
        if b.marker == "skip":
            if not b.marker_arg:
                self.add(b, "fail", "`doc-test: skip` needs a reason")
            else:
                self.add(b, "marked", f"skip: {b.marker_arg}")
            return
        if b.marker not in (None, "compile", "run", "json"):
            self.add(b, "fail", f"unknown marker `doc-test: {b.marker}`")
            return
        runner = {
            "rust": self.rust_block, "json": self.json_block, "jsonc": self.json_block,
            "sh": self.sh_block, "bash": self.sh_block, "shell": self.sh_block,
            "c": self.c_block, "python": self.python_block, "py": self.python_block,
            "ts": self.ts_block, "typescript": self.ts_block, "js": self.ts_block,
            "javascript": self.ts_block, "lua": self.lua_block, "kotlin": self.kotlin_block,
        }.get(lang)
        if runner is None:
            self.add(b, "fail", f"no runner for language {lang or '(none)'!r} and no marker "
                     "(<!-- doc-test: output --> or <!-- doc-test: skip REASON -->)")
            return
        runner(b)

    def json_block(self, b: Block) -> None:
        text = b.code
        if b.lang == "jsonc":
            text = re.sub(r"\s//[^\n\"]*$", "", text, flags=re.M)
            text = re.sub(r"\{ \.\.\. \}", "{}", text)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            self.add(b, "fail", f"not JSON: {e}")
            return
        kind = b.marker_arg if b.marker == "json" else self.json_kind(doc)
        if kind == "schema" and doc.get("title") == "acp-host permission policy":
            self.policy_schema = (b, doc)
        if kind == "policy":
            self.policies.append((b, doc))
        if kind in ("", "none", "schema"):
            self.add(b, "checked", "parsed" + (" (a JSON schema)" if kind == "schema" else ""))
            return
        if kind == "scenario":
            d = self.work(b)
            (d / "scenario.json").write_text(json.dumps(doc))
            p = self.sh([str(self.bin / "acp-mock-agent"), "--scenario", str(d / "scenario.json"), "--check"], d)
            self.outcome(b, p, "checked")
            return
        d = self.work(b)
        f = d / "block.json"
        f.write_text(text)
        p = self.sh([str(self.bin / "doc-check"), kind, str(f)], d)
        r = self.outcome(b, p, "checked")
        if p.returncode == 0:
            r.note = p.stdout.strip()

    def option_names(self) -> set[str]:
        """The top-level option names of docs/OPTIONS.md (generated from the core's table)."""
        text = (self.root / "docs/OPTIONS.md").read_text()
        return {n for n in re.findall(r"^\| `([A-Za-z]+)` \|", text, re.M)}

    def json_kind(self, doc: object) -> str:
        if not isinstance(doc, dict):
            return "none"
        if doc and set(doc) <= self.option_names() and not ({"rules", "hardDeny"} & doc.keys()):
            return "options"
        if doc.get("$schema", "").startswith("https://json-schema.org"):
            return "schema"
        if "agents" in doc:
            return "registry"
        if "kind" in doc and "seq" in doc:
            return "event"
        if {"preset", "rules", "hardDeny"} & doc.keys():
            return "policy"
        if "steps" in doc or "initialize" in doc:
            return "scenario"
        return "none"

    def finish_policies(self) -> None:
        """The policy blocks also validate against the policy JSON schema docs/PERMISSIONS.md
        shows (so that the schema and the examples the core loads agree)."""
        if not self.policy_schema:
            return
        try:
            import jsonschema
        except ImportError:
            print("test-docs: no jsonschema module: the policy blocks are not validated against the schema")
            return
        sb, schema = self.policy_schema
        for b, doc in self.policies:
            errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
            r = next(r for r in self.results if r.block is b)
            if errors:
                r.status, r.note = "fail", f"against the schema of {sb.where}: {errors[0].message}"
            elif r.status == "checked":
                r.note += f"; valid against the schema of {sb.where}"

    def sh_block(self, b: Block) -> None:
        p = self.sh(["bash", "-n"], stdin=b.code)
        if p.returncode != 0:
            self.outcome(b, p, "checked")
            return
        if b.marker != "run":
            self.add(b, "checked", "syntax" + (f": {b.marker_arg}" if b.marker_arg else ""))
            return
        # `run root`: a command of the repository's (a clone's root is where the reader types it).
        d = self.root if b.marker_arg.split()[:1] == ["root"] else self.work(b)
        p = self.sh(["bash", "-euo", "pipefail", "-c", b.code], d, timeout=120)
        r = self.outcome(b, p, "ran")
        if b.marker_arg:
            r.note = f"in {'the repository root' if d == self.root else 'a scratch dir'}"

    def rust_block(self, b: Block) -> None:
        self.rust.append(b)  # run together by finish_rust

    def finish_rust(self, files: list[str]) -> None:
        """The Rust blocks are tests of tests/docs/rust (its build.rs writes them from the same
        files): compiled together, then run one at a time (each enters its scratch dir)."""
        if not self.rust:
            return
        env = dict(self.env, ACP_DOC_FILES=":".join(files))
        try:
            p = subprocess.run(["cargo", "test", "-p", "acp-host-doc-tests", "--test", "blocks", "--",
                                "--ignored", "--skip", "_compiled", "--test-threads=1"], cwd=self.root,
                               env=env, text=True, capture_output=True, timeout=900)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess([], 124, "", "cargo test timed out")
        got = dict(RUST_NAME.findall(p.stdout))
        built = "running " in p.stdout
        for b in self.rust:
            name = f"{re.sub(r'[/.-]', '_', b.path).lower()}_l{b.line}"
            st = got.get(name)
            if b.marker == "compile" and built:
                self.add(b, "checked", f"compiled only: {b.marker_arg}")
            elif st == "ok":
                self.add(b, "ran")
            elif not built:
                err = [l for l in p.stderr.splitlines() if l.startswith(("error", "  -->"))]
                self.add(b, "fail", "the Rust blocks do not compile:\n    " + "\n    ".join(err[:40]))
            elif st is None:
                self.add(b, "fail", f"no test {name} in tests/docs/rust")
            else:
                m = re.search(rf"---- {name} stdout ----\n(.*?)(?=\n---- |\nfailures:)", p.stdout, re.S)
                self.add(b, "fail", (m.group(1) if m else p.stdout[-1500:]).strip())

    C_PRELUDE = ('#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
                 '#include "acp_host.h"\n')

    # The names the docs' C fragments use without declaring them (a block's own declarations
    # shadow these).
    C_NAMES = ("extern acph_host *host; extern acph_error *err; extern uint64_t call, agent, session;\n"
               "extern const char *spec, *opts, *path; extern int from_agent, to_agent;\n"
               "extern const char *chunk; extern size_t chunk_len;\n")

    def c_block(self, b: Block) -> None:
        d = self.work(b)
        src = d / "block.c"
        inc = ["-I", str(self.root / "include")]
        if re.search(r"\bint\s+main\s*\(", b.code):
            src.write_text(b.code)
            exe = d / "block"
            p = self.sh(["cc", "-std=c11", "-Wall", "-Werror", *inc, str(src), "-o", str(exe),
                         f"-L{self.bin}", "-lacp_host", f"-Wl,-rpath,{self.scratch / 'lib'}"], d)
            if p.returncode != 0 or b.marker == "compile":
                self.outcome(b, p, "checked")
                return
            self.outcome(b, self.sh([str(exe)], d, timeout=60), "ran")
            return
        # A fragment: first as declarations at file scope, then as statements in a function that
        # has the names the docs use (host, err, call, spec, opts, path, ...).
        src.write_text(self.C_PRELUDE + self.C_NAMES + b.code)
        p = self.sh(["cc", "-std=c11", "-fsyntax-only", *inc, str(src)], d)
        if p.returncode == 0:
            self.add(b, "checked", "compiled (declarations)")
            return
        body = (self.C_PRELUDE + self.C_NAMES +
                f"void doc_block(void) {{\n#line 1 \"{b.where}\"\n{b.code}\n}}\n")
        src.write_text(body)
        p2 = self.sh(["cc", "-std=c11", "-fsyntax-only", *inc, str(src)], d)
        if p2.returncode == 0:
            self.add(b, "checked", "compiled (statements)")
        else:
            self.outcome(b, p2, "checked")

    def python_block(self, b: Block) -> None:
        d = self.work(b)
        prelude = (self.root / "tests/docs/prelude.py").read_text()
        code = prelude + "\n# ---- the block ----\n" + self.abs_paths(b.code)
        f = d / "block.py"
        f.write_text(code)
        pys = [("", str(self.root / ".venv/bin/python"))]
        if os.environ.get("ACP_DOC_PY39"):
            pys.append((" (3.9)", os.environ["ACP_DOC_PY39"]))
        notes = []
        for label, py in pys:
            # A block that iterates the prelude's session events needs that stream to end.
            env = dict(self.env, ACP_DOC_SESSION_ENDS="1" if "session.events()" in b.code else "")
            # 60 s as for node: with pages side by side, the Ray block's local cluster can take
            # more than 30 s to start on 2 busy cores (a hang still fails).
            p = self.sh([py, str(self.root / "tests/docs/pyrun.py"), str(f)], d, timeout=60, env=env)
            missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", p.stderr)
            if p.returncode != 0 and label and missing and missing.group(1).split(".")[0] != "acp_host":
                # The 3.9 venv holds the wheel alone; an optional third-party module is not there.
                notes.append(f"not on 3.9: no module {missing.group(1)} in that venv")
                continue
            if p.returncode != 0:
                r = self.outcome(b, p, "ran")
                r.note = f"python{label}: " + r.note
                return
            notes.append("python" + label)
        self.add(b, "ran", " + ".join(notes))

    def ts_block(self, b: Block) -> None:
        d = self.work(b)
        code = self.abs_paths(b.code)
        imports = [l for l in code.splitlines() if l.startswith("import ")]
        rest = "\n".join(l for l in code.splitlines() if not l.startswith("import "))
        # What a reader imports from acp-host in the block before, unless this block does.
        own = {w for l in imports for w in re.findall(r"\b(\w+)\b", l.split(" from ")[0])}
        names = [n for n in ("Host", "Registry", "AcpError") if n not in own]
        prelude = (f"import {{ {', '.join(names)} }} from 'acp-host';\n" if names else "")
        for name, line in (("net", "import net from 'node:net';"), ("once", "import { once } from 'node:events';")):
            if name not in own:
                prelude += line + "\n"
        prelude += (self.root / "tests/docs/prelude.mts").read_text()
        (d / "block.mts").write_text("\n".join(imports) + "\n" + prelude + "\n{\n" + rest + "\n}\nawait __done();\n")
        nm = d / "node_modules"
        nm.mkdir(exist_ok=True)
        link = nm / "acp-host"
        if not link.exists():
            link.symlink_to(self.root / "bindings/node")
        tsc = self.root / "bindings/node/node_modules/typescript/bin/tsc"
        p = self.sh(["node", str(tsc), "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
                     "--strict", "--skipLibCheck", "--lib", "es2022,esnext.disposable,dom", "--types", "node",
                     "--typeRoots", str(self.root / "bindings/node/node_modules/@types"), "block.mts"], d)
        if p.returncode != 0 or b.marker == "compile":
            self.outcome(b, p, "checked")
            return
        self.outcome(b, self.sh(["node", "block.mjs"], d, timeout=60), "ran")

    def lua_block(self, b: Block) -> None:
        d = self.work(b)
        (d / "block.lua").write_text(b.code)
        (d / "check.lua").write_text("local f, e = loadfile('block.lua')\n"
                                     "if not f then io.stderr:write(e, '\\n'); os.exit(1) end\nos.exit(0)\n")
        p = self.sh(["nvim", "--clean", "--headless", "-u", "NONE", "-c", "luafile check.lua"], d, timeout=20)
        r = self.outcome(b, p, "checked")
        if p.returncode == 0:
            r.note = "LuaJIT syntax (nvim luafile); examples/neovim/test runs the plugin"

    def kotlin_block(self, b: Block) -> None:
        self.kotlin.append(b)  # compiled together by finish_kotlin

    def finish_kotlin(self) -> None:
        if not self.kotlin:
            return
        import kotlin
        work = self.scratch / "kotlin"
        work.mkdir()
        try:
            got = kotlin.compile_blocks(self.root, work, self.kotlin)
        except RuntimeError as e:  # scripts/test runs scripts/test-kotlin (Maven) first
            for b in self.kotlin:
                self.add(b, "gap", str(e))
            return
        for b in self.kotlin:
            err = got[b.where]
            if err is None:
                self.add(b, "checked", "compiled against the Kotlin face's sources (not run: no native "
                         "library staged here; scripts/test-kotlin runs the face)")
            else:
                self.add(b, "fail", err)


def serve_agents(mock: Path, env: dict[str, str]) -> int:
    """An agent on a loopback TCP port for the blocks that `connect` (their `port`): each
    connection gets its own mock agent, its stdio bridged to the socket. Returns the port."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))

    def pump(src, dst) -> None:
        try:
            while chunk := src.read1(65536) if hasattr(src, "read1") else src.recv(65536):
                dst.write(chunk) if hasattr(dst, "write") else dst.sendall(chunk)
                if hasattr(dst, "flush"):
                    dst.flush()
        except OSError:
            pass
        finally:
            try:
                dst.close() if hasattr(dst, "write") else dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def accept() -> None:
        while True:
            conn, _ = server.accept()
            agent = subprocess.Popen([str(mock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
            threading.Thread(target=pump, args=(conn, agent.stdin), daemon=True).start()
            threading.Thread(target=pump, args=(agent.stdout, conn), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


def setup_scratch(root: Path, scratch: Path, target: Path) -> None:
    """The agent names the docs use are the mock agent; /abs/... exist; registry.json has a binary
    agent (`gemini`, `my-agent`) whose archive (the mock agent) is `file://$SCRATCH/agent.tar.gz`."""
    import hashlib
    import io
    import tarfile

    mock = target / "debug" / "acp-mock-agent"
    (scratch / "bin").mkdir(parents=True)
    # The debug library's SONAME is libacp_host.so.<ACPH_ABI_VERSION> (ffi/build.rs reads it from
    # ffi/src/lib.rs; scripts/install-c makes the link in a prefix).
    abi = re.search(r"^pub const ACPH_ABI_VERSION: u32 = (\d+);", (root / "ffi/src/lib.rs").read_text(), re.M)
    assert abi, "ACPH_ABI_VERSION not found in ffi/src/lib.rs"
    (scratch / "lib").mkdir()
    (scratch / "lib" / f"libacp_host.so.{abi.group(1)}").symlink_to(target / "debug" / "libacp_host.so")
    for name in ("claude-agent-acp", "codex-acp", "gemini", "my-agent", "my-acp-agent"):
        # The real agents' arguments (`--acp`, ...) mean nothing to the mock: dropped.
        (scratch / "bin" / name).write_text(f"#!/bin/sh\nexec '{mock}'\n")
        (scratch / "bin" / name).chmod(0o755)
    for d in ("abs/project", "abs/shared-libs", "abs/cache", "project", "cache", "state"):
        (scratch / d).mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(mock, arcname="agent")
    (scratch / "agent.tar.gz").write_bytes(buf.getvalue())
    sha = hashlib.sha256(buf.getvalue()).hexdigest()
    plat = {"x86_64": "linux-x86_64", "aarch64": "linux-aarch64"}[os.uname().machine]
    # file://: what the faces install without a fetch hook (the Rust blocks' fetcher maps any URL
    # to the scratch file of the same name).
    binary = {plat: {"archive": (scratch / "agent.tar.gz").as_uri(), "cmd": "./agent", "sha256": sha}}
    reg = {"version": "1.0.0", "agents": [
        {"id": i, "name": i, "version": "1.0.0", "description": "the mock agent",
         "distribution": {"binary": binary}} for i in ("gemini", "my-agent")]}
    (scratch / "registry.json").write_text(json.dumps(reg, indent=2))
    (scratch / "abs/registry.json").write_text(json.dumps(reg, indent=2))
    (scratch / "policy.json").write_text('{"preset": "read-only"}\n')
    (scratch / "README.md").write_text("# a project\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--only", default="")
    ap.add_argument("--no-listing-check", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = a.root.resolve()
    t0 = time.monotonic()
    listed = [l.strip() for l in (root / "tests/docs/files.txt").read_text().splitlines()
              if l.strip() and not l.startswith("#")]
    failures: list[str] = []
    if not a.files and not a.no_listing_check:
        tracked = subprocess.run(["git", "ls-files", "*README.md", "docs/*.md"], cwd=root, text=True,
                                 capture_output=True, check=True).stdout.split()
        for t in tracked:
            if t not in listed:
                failures.append(f"{t}: a doc not listed in tests/docs/files.txt")
    files = a.files or listed
    only = set(a.only.split(",")) - {""}
    scratch = Path(tempfile.mkdtemp(prefix="acp-doc-tests-"))
    h = Harness(root, scratch)
    setup_scratch(root, scratch, h.target)
    h.env["ACP_DOC_AGENT_PORT"] = str(serve_agents(h.target / "debug" / "acp-mock-agent", h.env))
    print(f"test-docs: scratch dir {scratch}; `/abs/…` in a block is {scratch}/abs/…; agent names "
          "(claude-agent-acp, codex-acp, gemini, my-agent, my-acp-agent) are the mock agent, their arguments dropped")
    # The docs side by side (ACP_DOC_JOBS, default 3): most blocks wait on an agent, node or a
    # compiler. One file's blocks run in order, one after another: a block may load the session
    # an earlier block of its page opened (the mock agents share ACP_MOCK_STATE_DIR). The Rust
    # blocks run after all the others, as before, next to the Kotlin compile. Results are printed
    # at the end, sorted by file and line, as before.
    jobs = max(1, int(os.environ.get("ACP_DOC_JOBS", "3")))
    pages = [[b for b in extract(root / f, f) if not only or b.lang in only] for f in files]

    def run_page(blocks: list[Block]) -> None:
        for b in blocks:
            h.run_block(b)

    order = {f: i for i, f in enumerate(files)}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            # Longest pages first, so that no long page starts last.
            for fut in [pool.submit(run_page, p) for p in sorted(pages, key=len, reverse=True)]:
                fut.result()
            # Collected from several threads: back in page order.
            h.rust.sort(key=lambda b: (order.get(b.path, len(order)), b.line))
            h.kotlin.sort(key=lambda b: (order.get(b.path, len(order)), b.line))
            for fut in [pool.submit(h.finish_rust, files), pool.submit(h.finish_kotlin)]:
                fut.result()
        h.finish_policies()
    finally:
        if not os.environ.get("ACP_DOC_KEEP"):
            shutil.rmtree(scratch, ignore_errors=True)
    by_lang: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    # Known failures count only in a full run (the harness's own test names its files).
    known_hit: collections.Counter[str] = collections.Counter()
    known = {} if a.files else known_failures(root, "blocks")
    partial = bool(only)  # a partial run cannot tell a stale entry
    for r in sorted(h.results, key=lambda r: (r.block.path, r.block.line)):
        if r.status == "fail" and r.block.path in known:
            r.status = "known"
            r.note = f"(known: {known[r.block.path]}) {r.note}"
            known_hit[r.block.path] += 1
        by_lang[r.block.lang or "(none)"][r.status] += 1
        if r.status != "ran" or r.note:
            print(f"{r.status:8} {r.block.where} [{r.block.lang or '-'}] {r.note}")
        if r.status == "fail":
            failures.append(r.block.where)
    for path, why in known.items():
        if known_hit[path]:
            print(f"test-docs: KNOWN {known_hit[path]} failing block(s) in {path}: {why}")
        elif not partial:
            failures.append(f"{path}: listed in tests/docs/known-failures.txt but nothing fails: remove it")
    print("test-docs: per language (ran / checked / marked / gap / known / fail):")
    for lang, c in sorted(by_lang.items()):
        print(f"  {lang:10} {c['ran']:3} {c['checked']:3} {c['marked']:3} {c['gap']:3} {c['known']:3} {c['fail']:3}")
    print(f"test-docs: {len(h.results)} blocks in {time.monotonic() - t0:.1f}s")
    for f in failures:
        print(f"test-docs: FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""One measurement of the Python faces for ``scripts/bench-compare`` (issue 14).

    .venv/bin/python bindings/python/bench/compare.py <host|sdk> <permission|read|flood|spawn> \\
        --agent PATH --workspace DIR --n N [--file PATH]

``host`` is acp_host; ``sdk`` the official Python SDK (agent-client-protocol, pinned in
fixtures/interop/requirements.txt). For ``host`` both twins are measured, each in a fresh process
of this interpreter (``--variant Host|AsyncHost``, internal): the sync ``Host`` (plain handler
functions, a plain loop over events) and the asyncio ``AsyncHost`` (``async def`` handlers,
``async for``); the better one is printed as ``python:host`` with ``variant`` naming it and the
other under ``other``.

permission  --agent acp-bench-agent: one prompt ``permission N``; the agent sends N sequential
            session/request_permission requests, answered ``allow-once`` at once (host:
            ``on_permission``; sdk: ``Client.request_permission``), and times each round trip
            itself. Its statistics (``_meta.bench`` of the prompt response, else the file
            $ACP_BENCH_OUT it also writes) are printed: p50_us, p90_us, p99_us, mean_us, ...
read        the same with ``read N FILE`` (--file, inside --workspace): N fs/read_text_file
            requests, served by acp_host's built-in sandboxed fs service (host) or
            ``Client.read_text_file`` reading the file (sdk, fs.readTextFile advertised).
flood       --agent acp-mock-agent (run with --flood N): N agent_message_chunk updates of one
            prompt, counted: updates_per_sec, seconds, idle_rss_kib (VmRSS after the imports,
            before spawning), peak_rss_kib (VmHWM at the end). Readers as in bench.py.
spawn       --agent acp-mock-agent: N times (default 50) spawn -> initialize -> session/new
            answered (timed: p50_ms, p99_ms, mean_ms), then the agent is shut down (host: one
            Host for all; sdk: spawn_agent_process each time).

Prints exactly one JSON line on stdout (``{"client": "python:host"|"python:sdk", "workload", ...}``);
diagnostics go to stderr. Exit 1 on a broken run (wrong count, failures, a crash), 2 on usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

import bench  # the flood readers shared with scripts/bench-python (same directory)

DEFAULT_N = {"permission": 2000, "read": 2000, "flood": 200000, "spawn": 50}
VARIANTS = ("Host", "AsyncHost")


class BrokenRun(Exception):
    """The run measured something else than asked (a wrong count, failures, a bad turn)."""


def proc_status_kib(field: str) -> int:
    """``VmRSS`` / ``VmHWM`` (peak) of this process in KiB (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# ------------------------------------------------------------------------- permission / read

def agent_stats(meta: Optional[Dict[str, Any]], out_file: str, workload: str, n: int) -> Dict[str, Any]:
    """The agent's statistics: ``_meta.bench`` of the prompt response, else its $ACP_BENCH_OUT."""
    stats = (meta or {}).get("bench")
    source = "_meta"
    if not stats:
        source = "ACP_BENCH_OUT"
        try:
            with open(out_file) as f:
                stats = json.load(f)
        except (OSError, ValueError) as e:
            raise BrokenRun(f"no statistics: neither _meta.bench in the prompt response nor {out_file} ({e})")
    stats = dict(stats)
    kind = stats.pop("kind", None)
    if kind != workload:
        raise BrokenRun(f"the agent ran {kind}, not {workload}")
    if stats.get("n") != n:
        raise BrokenRun(f"the agent timed {stats.get('n')} round trips, expected {n}")
    if stats.get("failures", 0) > 0:
        raise BrokenRun(f"{stats['failures']} of {n} round trips failed (a wrong or refused answer)")
    stats["stats_from"] = source
    return stats


def round_trips_host(variant: str, agent: str, workspace: str, text: str, out_file: str) -> Dict[str, Any]:
    import acp_host

    env = {"ACP_BENCH_OUT": out_file}
    if variant == "Host":
        def decide(req: acp_host.PermissionRequest) -> str:
            return "allow-once"

        # Used through return values: events off, as the Rust host client runs it.
        with acp_host.Host(on_permission=decide, events=False) as host:
            a = host.spawn([agent], env=env)
            s = a.new_session(workspace)
            t = s.prompt(text)
        return {"stop_reason": t.stop_reason, "meta": t.raw.get("_meta")}

    async def adecide(req: acp_host.PermissionRequest) -> str:
        return "allow-once"

    async def main() -> Dict[str, Any]:
        async with acp_host.AsyncHost(on_permission=adecide, events=False) as host:
            a = await host.spawn([agent], env=env)
            s = await a.new_session(workspace)
            t = await s.prompt(text)
        return {"stop_reason": t.stop_reason, "meta": t.raw.get("_meta")}

    return asyncio.run(main())


def round_trips_sdk(agent: str, workspace: str, text: str, out_file: str) -> Dict[str, Any]:
    import acp
    from acp.schema import (AllowedOutcome, ClientCapabilities, FileSystemCapabilities, ReadTextFileResponse,
                            RequestPermissionResponse, TextContentBlock)
    from acp.stdio import spawn_agent_process

    class Client:
        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            pass

        async def request_permission(self, session_id: str, tool_call: Any, options: Any,
                                     **kw: Any) -> RequestPermissionResponse:
            return RequestPermissionResponse(outcome=AllowedOutcome(option_id="allow-once", outcome="selected"))

        async def read_text_file(self, session_id: str, path: str, line: Optional[int] = None,
                                 limit: Optional[int] = None, **kw: Any) -> ReadTextFileResponse:
            with open(path, encoding="utf-8") as f:
                return ReadTextFileResponse(content=f.read())

        def on_connect(self, conn: Any) -> None:
            pass

    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=False), terminal=False)

    async def main() -> Dict[str, Any]:
        client: Any = Client()  # only what the agent calls (the SDK's type is its whole Client protocol)
        async with spawn_agent_process(client, agent, env={"ACP_BENCH_OUT": out_file}) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps)
            sess = await conn.new_session(cwd=workspace, mcp_servers=[])
            r = await conn.prompt(session_id=sess.session_id, prompt=[TextContentBlock(type="text", text=text)])
        return {"stop_reason": r.stop_reason, "meta": r.field_meta}

    return asyncio.run(main())


def round_trips(mode: str, variant: str, workload: str, a: argparse.Namespace) -> Dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="acp-bench-compare-")
    out_file = os.path.join(tmp, "stats.json")
    text = f"permission {a.n}" if workload == "permission" else f"read {a.n} {a.file}"
    t0 = time.perf_counter()
    try:
        if mode == "host":
            r = round_trips_host(variant, a.agent, a.workspace, text, out_file)
        else:
            r = round_trips_sdk(a.agent, a.workspace, text, out_file)
        wall = time.perf_counter() - t0
        if r["stop_reason"] != "end_turn":
            raise BrokenRun(f"the turn ended {r['stop_reason']}, not end_turn")
        return {**agent_stats(r["meta"], out_file, workload, a.n), "wall_seconds": round(wall, 3)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------- flood

def flood(mode: str, variant: str, a: argparse.Namespace) -> Dict[str, Any]:
    # The runtime's idle RSS: the module (or the SDK) imported, nothing spawned yet.
    if mode == "host":
        import acp_host  # noqa: F401

        reader: Callable[..., Dict[str, Any]] = bench.flood_host_sync if variant == "Host" else bench.flood_host_async
    else:
        import acp  # noqa: F401
        import acp.schema  # noqa: F401
        import acp.stdio  # noqa: F401

        reader = bench.flood_sdk
    idle = proc_status_kib("VmRSS")
    r = reader(a.agent, a.n, a.workspace)
    if r["updates"] != a.n:
        raise BrokenRun(f"counted {r['updates']} updates, expected {a.n}")
    return {"n": a.n, "updates": r["updates"], "seconds": r["seconds"],
            "updates_per_sec": r["updates"] / r["seconds"], "idle_rss_kib": idle,
            "peak_rss_kib": proc_status_kib("VmHWM")}


# ------------------------------------------------------------------------------------- spawn

def spawn_times_host(variant: str, agent: str, workspace: str, n: int) -> List[float]:
    import acp_host

    ms: List[float] = []
    if variant == "Host":
        with acp_host.Host() as host:
            for _ in range(n):
                t0 = time.perf_counter()
                ag = host.spawn([agent])
                ag.new_session(workspace)
                ms.append((time.perf_counter() - t0) * 1e3)
                ag.shutdown()
        return ms

    async def main() -> None:
        async with acp_host.AsyncHost() as host:
            for _ in range(n):
                t0 = time.perf_counter()
                ag = await host.spawn([agent])
                await ag.new_session(workspace)
                ms.append((time.perf_counter() - t0) * 1e3)
                await ag.shutdown()

    asyncio.run(main())
    return ms


def spawn_times_sdk(agent: str, workspace: str, n: int) -> List[float]:
    import acp
    from acp.schema import ClientCapabilities
    from acp.stdio import spawn_agent_process

    class Client:
        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            pass

        def on_connect(self, conn: Any) -> None:
            pass

    ms: List[float] = []

    async def main() -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            client: Any = Client()
            async with spawn_agent_process(client, agent) as (conn, _proc):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
                await conn.new_session(cwd=workspace, mcp_servers=[])
                ms.append((time.perf_counter() - t0) * 1e3)
            # leaving the context closed stdin and waited for the process (terminate/kill after a grace)

    asyncio.run(main())
    return ms


def spawn(mode: str, variant: str, a: argparse.Namespace) -> Dict[str, Any]:
    ms = spawn_times_host(variant, a.agent, a.workspace, a.n) if mode == "host" else \
        spawn_times_sdk(a.agent, a.workspace, a.n)
    if len(ms) != a.n:
        raise BrokenRun(f"timed {len(ms)} opens, expected {a.n}")
    ms.sort()

    def q(p: float) -> float:
        return round(ms[round((len(ms) - 1) * p)], 3)

    return {"n": a.n, "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99),
            "mean_ms": round(sum(ms) / len(ms), 3), "min_ms": q(0.0), "max_ms": q(1.0)}


# -------------------------------------------------------------------------------------- main

def measure(mode: str, variant: str, workload: str, a: argparse.Namespace) -> Dict[str, Any]:
    if workload in ("permission", "read"):
        return round_trips(mode, variant, workload, a)
    if workload == "flood":
        return flood(mode, variant, a)
    return spawn(mode, variant, a)


def better(workload: str, x: Dict[str, Any], y: Dict[str, Any]) -> bool:
    """Whether run ``x`` beat run ``y`` on the workload's headline number."""
    if workload == "flood":
        return bool(x["updates_per_sec"] > y["updates_per_sec"])
    key = "p50_ms" if workload == "spawn" else "p50_us"
    return bool(x[key] < y[key])


def host_both(argv: List[str], workload: str) -> Dict[str, Any]:
    """Each twin in a fresh process of this interpreter; the better one with the other beside it."""
    runs: Dict[str, Dict[str, Any]] = {}
    for variant in VARIANTS:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), *argv, "--variant", variant],
                           stdout=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise BrokenRun(f"the {variant} run failed (exit {p.returncode})")
        lines = p.stdout.strip().splitlines()
        if len(lines) != 1:
            raise BrokenRun(f"the {variant} run printed {len(lines)} lines on stdout")
        r = json.loads(lines[0])
        for k in ("client", "workload", "runtime"):
            r.pop(k, None)
        runs[variant] = r
    a, b = runs["Host"], runs["AsyncHost"]
    best, other = (a, b) if not better(workload, b, a) else (b, a)
    return {**best, "other": other}


def main() -> int:
    ap = argparse.ArgumentParser(prog="compare.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("host", "sdk"))
    ap.add_argument("workload", choices=tuple(DEFAULT_N))
    ap.add_argument("--agent", required=True)
    ap.add_argument("--workspace", default=tempfile.gettempdir())
    ap.add_argument("--n", type=lambda s: int(s.replace("_", "")))
    ap.add_argument("--file")
    ap.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.n is None:
        a.n = DEFAULT_N[a.workload]
    if a.n <= 0:
        ap.error("--n must be positive")
    if a.workload == "read" and not a.file:
        ap.error("read needs --file")
    a.agent = os.path.abspath(a.agent)
    a.workspace = os.path.abspath(a.workspace)
    if a.file:
        a.file = os.path.abspath(a.file)
    if a.variant and a.mode != "host":
        ap.error("--variant is for host runs")

    try:
        if a.mode == "host" and a.variant is None:
            out = host_both(sys.argv[1:], a.workload)
        else:
            out = measure(a.mode, a.variant or "", a.workload, a)
            if a.variant:
                out = {"variant": a.variant, **out}
    except BrokenRun as e:
        print(f"compare.py {a.mode} {a.workload}{' ' + a.variant if a.variant else ''}: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"client": f"python:{a.mode}", "workload": a.workload, **out,
                      "runtime": f"python {sys.version.split()[0]}"}))
    return 0


if __name__ == "__main__":
    # An uncaught exception exits 1 with its traceback on stderr, as a broken run should.
    sys.exit(main())

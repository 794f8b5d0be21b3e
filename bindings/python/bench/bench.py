"""Benchmarks of the Python face against the official Python SDK (driven by scripts/bench-python).

Each measurement runs in a fresh process of this interpreter (``python bench.py run MODE ...``)
and prints one JSON line; ``python bench.py all`` runs them interleaved and prints a table.

flood modes (N small ``agent_message_chunk`` updates from ``acp-mock-agent --flood N``, consumer
counting updates, timed from prompt send to the end of the turn):
  host-sync   acp_host.Host, ``for ev in session.events()``
  host-async  acp_host.AsyncHost, ``async for ev in session.events()``
  sdk         agent-client-protocol's ClientSideConnection (spawn_agent_process), counting in
              Client.session_update
permission modes (one turn with K sequential session/request_permission requests; the handler
answers at once; a round trip = the interval between consecutive handler calls, i.e. answer
written → agent reads it → next request → host parses it → handler called):
  perm-host   acp_host.Host(on_permission=plain function)
  perm-sdk    the SDK's Client.request_permission
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List


def _rss_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def flood_host_sync(agent: str, n: int, cwd: str = "/tmp") -> Dict[str, Any]:
    import acp_host

    with acp_host.Host() as host:
        a = host.spawn([agent, "--flood", str(n)])
        s = a.new_session(cwd)
        events = s.events()
        t0 = time.perf_counter()
        th = threading.Thread(target=s.prompt, args=("flood",))
        th.start()
        count = 0
        for ev in events:
            kind = ev.kind
            if kind == "session_update":
                count += 1
            elif kind == "turn_ended":
                break
        dt = time.perf_counter() - t0
        th.join()
    return {"updates": count, "seconds": dt}


def flood_host_async(agent: str, n: int, cwd: str = "/tmp") -> Dict[str, Any]:
    import acp_host

    async def main() -> Dict[str, Any]:
        async with acp_host.AsyncHost() as host:
            a = await host.spawn([agent, "--flood", str(n)])
            s = await a.new_session(cwd)
            events = s.events()
            t0 = time.perf_counter()
            task = asyncio.ensure_future(s.prompt("flood"))
            count = 0
            async for ev in events:
                kind = ev.kind
                if kind == "session_update":
                    count += 1
                elif kind == "turn_ended":
                    break
            await task
            return {"updates": count, "seconds": time.perf_counter() - t0}

    return asyncio.run(main())


def flood_sdk(agent: str, n: int, cwd: str = "/tmp") -> Dict[str, Any]:
    import acp
    from acp.schema import ClientCapabilities, TextContentBlock
    from acp.stdio import spawn_agent_process

    class Counter:
        def __init__(self) -> None:
            self.count = 0

        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                self.count += 1

        async def request_permission(self, *a: Any, **kw: Any) -> Any:  # pragma: no cover
            raise NotImplementedError

        def on_connect(self, conn: Any) -> None:
            pass

    async def main() -> Dict[str, Any]:
        client = Counter()
        async with spawn_agent_process(client, agent, "--flood", str(n),
                                       transport_kwargs={"limit": 64 * 1024 * 1024}) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            sess = await conn.new_session(cwd=cwd, mcp_servers=[])
            t0 = time.perf_counter()
            await conn.prompt(session_id=sess.session_id, prompt=[TextContentBlock(type="text", text="flood")])
            dt = time.perf_counter() - t0
        return {"updates": client.count, "seconds": dt}

    return asyncio.run(main())


def _perm_scenario(k: int, path: str) -> None:
    steps = [
        {"request": {"method": "session/request_permission", "params": {
            "sessionId": "$SESSION",
            "toolCall": {"toolCallId": f"call_{i}", "title": "Read", "kind": "read"},
            "options": [
                {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
            ]}}}
        for i in range(k)
    ]
    with open(path, "w") as f:
        json.dump({"description": "bench: sequential permission requests", "prompts": [steps]}, f)


def _percentiles(times: List[float]) -> Dict[str, Any]:
    gaps = sorted((b - a) * 1e6 for a, b in zip(times, times[1:]))
    if not gaps:
        return {"round_trips": 0}
    return {
        "round_trips": len(gaps),
        "p50_us": gaps[len(gaps) // 2],
        "p99_us": gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))],
        "mean_us": statistics.fmean(gaps),
    }


def perm_host(agent: str, k: int, scenario: str) -> Dict[str, Any]:
    import acp_host

    times: List[float] = []

    def decide(req: "acp_host.PermissionRequest") -> str:
        times.append(time.perf_counter())
        return "allow-once"

    with acp_host.Host(on_permission=decide) as host:
        a = host.spawn([agent, "--scenario", scenario])
        s = a.new_session("/tmp")
        s.prompt("go")
    return _percentiles(times)


def perm_sdk(agent: str, k: int, scenario: str) -> Dict[str, Any]:
    import acp
    from acp.schema import AllowedOutcome, ClientCapabilities, RequestPermissionResponse, TextContentBlock
    from acp.stdio import spawn_agent_process

    times: List[float] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            pass

        async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kw: Any) -> Any:
            times.append(time.perf_counter())
            return RequestPermissionResponse(outcome=AllowedOutcome(option_id="allow-once", outcome="selected"))

        def on_connect(self, conn: Any) -> None:
            pass

    async def main() -> None:
        async with spawn_agent_process(Client(), agent, "--scenario", scenario) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            sess = await conn.new_session(cwd="/tmp", mcp_servers=[])
            await conn.prompt(session_id=sess.session_id, prompt=[TextContentBlock(type="text", text="go")])

    asyncio.run(main())
    return _percentiles(times)


def run(mode: str, agent: str, n: int, scenario: str) -> Dict[str, Any]:
    if mode == "host-sync":
        out = flood_host_sync(agent, n)
    elif mode == "host-async":
        out = flood_host_async(agent, n)
    elif mode == "sdk":
        out = flood_sdk(agent, n)
    elif mode == "perm-host":
        out = perm_host(agent, n, scenario)
    elif mode == "perm-sdk":
        out = perm_sdk(agent, n, scenario)
    else:
        raise SystemExit(f"unknown mode {mode}")
    if "seconds" in out:
        out["updates_per_sec"] = out["updates"] / out["seconds"]
        if out["updates"] != n:
            raise SystemExit(f"{mode}: expected {n} updates, got {out['updates']}")
    out["mode"] = mode
    out["peak_rss_mib"] = _rss_peak_mib()
    return out


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "run":
        mode, agent, n = args[1], args[2], int(args[3])
        scenario = args[4] if len(args) > 4 else ""
        print(json.dumps(run(mode, agent, n, scenario)))
        return
    agent = os.environ.get("BENCH_AGENT", "target/release/acp-mock-agent")
    n = int(os.environ.get("BENCH_UPDATES", "200000"))
    runs = int(os.environ.get("BENCH_RUNS", "3"))
    k = int(os.environ.get("BENCH_PERMISSIONS", "2000"))

    def child(mode: str, count: int, scenario: str = "") -> Dict[str, Any]:
        out = subprocess.run([sys.executable, __file__, "run", mode, agent, str(count), scenario],
                             check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    best: Dict[str, Dict[str, Any]] = {}
    print(f"running {runs}x {n} updates per mode...", file=sys.stderr)
    for _ in range(runs):
        for mode in ("sdk", "host-sync", "host-async"):
            r = child(mode, n)
            if mode not in best or r["updates_per_sec"] > best[mode]["updates_per_sec"]:
                best[mode] = r
    sdk = best["sdk"]["updates_per_sec"]
    print()
    print(f"flood: {n} agent_message_chunk updates (~180 B lines), best of {runs}, {sys.executable} "
          f"(Python {sys.version.split()[0]}), {os.cpu_count()} CPUs")
    print(f"  {'reader':<52} {'updates/s':>12} {'seconds':>8} {'peak RSS':>9} {'ratio':>7}")
    labels = {
        "sdk": "official Python SDK (agent-client-protocol " + _sdk_version() + ")",
        "host-sync": "acp_host.Host (for ev in session.events())",
        "host-async": "acp_host.AsyncHost (async for ev in ...)",
    }
    for mode in ("sdk", "host-sync", "host-async"):
        r = best[mode]
        print(f"  {labels[mode]:<52} {r['updates_per_sec']:>12,.0f} {r['seconds']:>8.3f} "
              f"{r['peak_rss_mib']:>7.1f}Mi {r['updates_per_sec'] / sdk:>6.2f}x")

    with tempfile.TemporaryDirectory() as tmp:
        scenario = os.path.join(tmp, "perm-bench.json")
        _perm_scenario(k, scenario)
        print(f"running permission round trips ({k} per run)...", file=sys.stderr)
        perm: Dict[str, Dict[str, Any]] = {}
        for _ in range(runs):
            for mode in ("perm-sdk", "perm-host"):
                r = child(mode, k, scenario)
                if mode not in perm or r["p50_us"] < perm[mode]["p50_us"]:
                    perm[mode] = r
    print()
    print(f"permission round trip: {k} sequential session/request_permission, handler answers at once, "
          f"best p50 of {runs}")
    print(f"  {'host':<52} {'p50 us':>8} {'p99 us':>8} {'mean us':>8}")
    for mode, label in (("perm-sdk", labels["sdk"]), ("perm-host", "acp_host.Host(on_permission=function)")):
        r = perm[mode]
        print(f"  {label:<52} {r['p50_us']:>8.1f} {r['p99_us']:>8.1f} {r['mean_us']:>8.1f}")


def _sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("agent-client-protocol")
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    main()

"""The Ray side of test_ray.py, run in a child interpreter (a local Ray cluster starts processes
of its own; they must not be children of pytest). Prints one JSON document on stdout."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading

import ray

from acp_host.ray import AgentTask, Fanout

MOCK, SCENARIOS = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="acph-ray-")
# Every agent runs through this wrapper, so leftovers are found by the path in their argv.
wrapper = os.path.join(work, "agent")
with open(wrapper, "w") as f:
    f.write(f'#!/bin/sh\nexec "{MOCK}" "$@"\n')
os.chmod(wrapper, 0o755)
slow = os.path.join(work, "slow.json")
with open(slow, "w") as f:
    json.dump({"description": "a slow turn", "prompts": [[
        {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "working"}}},
        {"sleepMs": 3000},
        {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": " done"}}},
    ]]}, f)

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
out: dict = {}


def summary(r):
    return {"task_id": r.task_id, "ok": r.ok, "stop_reason": r.stop_reason, "text": r.text,
            "attempts": r.attempts, "worker": r.worker, "kinds": [e["kind"] for e in r.events],
            "seqs": [e["seq"] for e in r.events], "agents": sorted({e["agent"] for e in r.events}),
            "error": None if r.error is None else {"type": type(r.error).__name__, "code": r.error.code,
                                                    "data": r.error.data}}


with Fanout(workers=2) as fanout:
    seen: dict = {}
    tasks = [AgentTask(command=[wrapper], workspace=work, prompt=f"task {i}", task_id=f"t{i}") for i in range(6)]
    tasks.append(AgentTask(command=[os.path.join(work, "missing")], workspace=work, prompt="x", task_id="nospawn"))
    tasks.append(AgentTask(command=[wrapper, "--scenario", os.path.join(SCENARIOS, "crash-mid-turn.json")],
                           workspace=work, prompt="x", task_id="crash"))
    results = fanout.run(tasks, on_event=lambda tid, ev: seen.setdefault(tid, []).append(ev["seq"]))
    out["results"] = [summary(r) for r in results]
    out["streamed"] = seen
    out["workers"] = fanout.workers()

# A worker killed mid-task: the task fails with WorkerDiedError, an idempotent one runs again.
with Fanout(workers=1) as fanout:
    pid = fanout.workers()[0]["pid"]
    killed = threading.Event()

    def kill_on_turn(tid, ev):
        if ev["kind"] == "turn_started" and not killed.is_set():
            killed.set()
            os.kill(pid, signal.SIGKILL)

    cmd = [wrapper, "--scenario", slow]
    r = fanout.run([AgentTask(command=cmd, workspace=work, prompt="x", task_id="fragile")], on_event=kill_on_turn)
    out["fragile"] = summary(r[0])
    killed.clear()
    pid = fanout.workers()[0]["pid"]
    r = fanout.run([AgentTask(command=cmd, workspace=work, prompt="x", task_id="retry", idempotent=True)],
                   on_event=kill_on_turn)
    out["retry"] = summary(r[0])
    out["killed_pid"] = pid
ray.shutdown()
out["work"] = work
print(json.dumps(out))

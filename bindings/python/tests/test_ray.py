"""acp_host.ray on a local Ray cluster with the mock agent: results and per-task event order,
typed failures, a killed worker (failed, or retried when idempotent), no agent left behind.
The cluster runs in a child interpreter (tests/ray_driver.py)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time

import pytest

from conftest import MOCK, SCENARIOS

ray = pytest.importorskip("ray", reason="the ray extra (bindings/python/requirements-dev.txt)")


@pytest.fixture(scope="module")
def run():
    driver = os.path.join(os.path.dirname(__file__), "ray_driver.py")
    proc = subprocess.run([sys.executable, driver, MOCK, str(SCENARIOS)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, RAY_DEDUP_LOGS="0"))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_task_runs_with_its_events_in_order(run):
    results = {r["task_id"]: r for r in run["results"]}
    assert [r["task_id"] for r in run["results"]] == [f"t{i}" for i in range(6)] + ["nospawn", "crash"]
    for i in range(6):
        r = results[f"t{i}"]
        assert r["ok"] and r["stop_reason"] == "end_turn" and r["text"], r
        assert r["seqs"] == sorted(r["seqs"]) and len(set(r["seqs"])) == len(r["seqs"])
        assert len(r["agents"]) == 1
        k = r["kinds"]
        assert k[0] == "agent_ready" and k.index("session_opened") < k.index("turn_started") < k.index("turn_ended")
        # What on_event saw, as it arrived, is the result's event list.
        assert run["streamed"][f"t{i}"] == r["seqs"]
    # Both workers took tasks.
    assert len({results[f"t{i}"]["worker"]["pid"] for i in range(6)}) == 2
    assert {w["pid"] for w in run["workers"]} == {results[f"t{i}"]["worker"]["pid"] for i in range(6)}


def test_failures_are_typed(run):
    results = {r["task_id"]: r for r in run["results"]}
    assert results["nospawn"]["error"]["type"] == "SpawnError"
    assert results["nospawn"]["error"]["code"] == "spawn_failed"
    crash = results["crash"]
    assert crash["error"]["type"] == "AgentExitedError"
    assert crash["error"]["data"]["exitCode"] == 3
    assert "turn_started" in crash["kinds"]


def test_a_killed_worker_fails_its_task_or_retries_an_idempotent_one(run):
    fragile = run["fragile"]
    assert fragile["error"]["type"] == "WorkerDiedError" and fragile["error"]["code"] == "worker_died"
    assert fragile["error"]["data"]["attempts"] == 1
    assert "turn_started" in fragile["kinds"] and "turn_ended" not in fragile["kinds"]
    retry = run["retry"]
    assert retry["ok"] and retry["stop_reason"] == "end_turn" and retry["attempts"] == 2, retry
    assert retry["text"] == "working done"
    # Ray restarted the worker: the second attempt ran in a new process.
    assert retry["worker"]["pid"] != run["killed_pid"]


def test_no_agent_outlives_its_worker(run):
    # The agents of the killed workers died with them (and the cluster is down).
    deadline = time.monotonic() + 10
    while True:
        left = subprocess.run(["pgrep", "-f", run["work"]], capture_output=True, text=True).stdout.strip()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not left, left


def test_errors_pickle_with_their_code_and_data():
    import acp_host
    from acp_host.ray import WorkerDiedError

    for err in (acp_host.AgentExitedError("gone", code="agent_exited", data={"exitCode": 3}),
                acp_host.ServiceError("no", rpc_code=-32002, data={"x": 1}),
                WorkerDiedError("died", data={"attempts": 2})):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and back.code == err.code and back.data == err.data
        assert str(back) == str(err)
    assert pickle.loads(pickle.dumps(acp_host.ServiceError("no", rpc_code=-32002))).rpc_code == -32002

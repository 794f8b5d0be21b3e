"""Fan agent tasks out over a Ray cluster: ``pip install "acp-host[ray]"``.

For scripts that outgrow one machine (evaluations, batch refactors). Each Ray worker is an actor
that runs hosts: a task (``AgentTask``: the agent's command, a workspace, a prompt, a policy) runs
on one worker in a ``Host`` of its own — the agent is spawned there, a session opened in the
workspace, the prompt sent — and its events stream back to the driver in order while it runs.
Each task ends as a ``TaskResult`` (stop reason, text, usage, its ordered events, or the typed
error that ended it)::

    import ray
    from acp_host.ray import AgentTask, Fanout

    ray.init()                                  # or ray.init(address="ray://head:10001")
    tasks = [AgentTask(command=["claude-agent-acp"], workspace=f"/work/repo-{i}",
                       prompt="Fix the failing test", policy="read-only") for i in range(8)]
    with Fanout(workers=4) as fanout:
        for result in fanout.as_completed(tasks, on_event=lambda task_id, ev: print(task_id, ev["kind"])):
            print(result.task_id, result.stop_reason if result.ok else result.error)

A worker that dies (its process killed, its node lost) fails the task it was running with
``WorkerDiedError`` — or, when the task says ``idempotent=True``, runs it again on a worker (up to
``max_attempts`` times in all); Ray restarts the dead worker. No agent outlives its worker: the
agents a worker started die with its process (the core's parent-death signal and process groups),
and ``Fanout.close()`` kills the workers.

Ray itself opens network listeners (its GCS, raylets, object store); ``acp_host`` opens none.
The workspace paths, the agent's command and its credentials must exist on the worker nodes.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._errors import AcpError, TimeoutError
from ._host import Host
from ._common import ContentLike
from ._types import AgentSpec

try:
    import ray
    from ray.exceptions import ActorUnavailableError, RayActorError, RayError
except ImportError as _no_ray:  # pragma: no cover - exercised only without the extra
    raise ImportError('acp_host.ray needs Ray: pip install "acp-host[ray]"') from _no_ray

__all__ = ["AgentTask", "TaskResult", "Fanout", "WorkerDiedError"]

#: ``(task_id, event)``: an event of a task, as the envelope dict of every face (docs/EVENTS.md).
EventCallback = Callable[[str, Dict[str, Any]], None]


class WorkerDiedError(AcpError):
    """The Ray worker running the task died (its process was killed, its node lost) before the
    task ended. ``data`` is ``{"attempts": n, "ray": "<the Ray error>"}``."""

    code = "worker_died"


@dataclasses.dataclass(frozen=True)
class AgentTask:
    """One unit of work: start ``command`` (``[program, *args]`` or an ``AgentSpec``), open a
    session in ``workspace`` (a path on the worker's machine) and send ``prompt``.

    ``policy`` is the task's host policy (a preset name or a policy document; docs/PERMISSIONS.md):
    no one is there to be asked, so a permission the policy does not allow is denied.
    ``host_options`` are further ``acp_host.Host`` keyword arguments (picklable ones).
    ``idempotent=True`` lets a task whose worker died run again. ``timeout`` bounds the prompt
    (seconds; then it is cancelled and the task fails with ``TimeoutError``).
    """

    command: Union[Sequence[str], AgentSpec]
    workspace: str
    prompt: ContentLike
    policy: Union[str, Mapping[str, Any], None] = "read-only"
    task_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    idempotent: bool = False
    timeout: Optional[float] = None
    env: Optional[Mapping[str, Optional[str]]] = None
    host_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """How a task ended. ``error`` is ``None`` when the turn ended (whatever its stop reason)."""

    task_id: str
    stop_reason: Optional[str]
    text: str
    usage: Optional[Dict[str, Any]]
    #: The task's events of its last attempt, in order (envelope dicts: seq, kind, data, ...).
    events: List[Dict[str, Any]]
    attempts: int
    #: ``{"pid": ..., "node": ...}`` of the worker that ran the last attempt.
    worker: Dict[str, Any]
    error: Optional[AcpError] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> "TaskResult":
        """This result, or raise its error."""
        if self.error is not None:
            raise self.error
        return self


class _Worker:
    """The actor: runs one task at a time, each in a host of its own (so a task's policy and
    options are its own and nothing of one task leaks into the next)."""

    def where(self) -> Dict[str, Any]:
        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()}

    def run(self, task: AgentTask) -> Iterator[Tuple[str, Any]]:
        yield ("worker", self.where())
        box: Dict[str, Any] = {}
        try:
            with Host(policy=task.policy, **dict(task.host_options)) as host:
                stream = host.events()
                try:
                    agent = host.spawn(task.command, env=task.env)
                    session = agent.new_session(cwd=task.workspace)
                except AcpError as exc:
                    box["error"] = exc
                    session = None

                def prompt() -> None:
                    try:
                        assert session is not None
                        box["result"] = session.prompt(task.prompt, timeout=task.timeout)
                    except AcpError as exc:
                        box["error"] = exc

                runner = threading.Thread(target=prompt, name=f"acp-host-task-{task.task_id}", daemon=True)
                if session is not None:
                    runner.start()
                # The events stream while the prompt runs (pulling them is what lets the agent
                # go on: the host's queue is bounded).
                while True:
                    try:
                        ev = stream.next(timeout=0.05)
                    except TimeoutError:
                        ev = None
                    if ev is not None:
                        yield ("event", ev.to_dict())
                    elif not runner.is_alive():
                        break
                while True:
                    try:
                        ev = stream.next(timeout=0)
                    except TimeoutError:
                        break
                    if ev is None:
                        break
                    yield ("event", ev.to_dict())
        except AcpError as exc:
            box.setdefault("error", exc)
        result = box.get("result")
        yield ("result", {
            "stop_reason": None if result is None else result.stop_reason,
            "text": "" if result is None else result.text,
            "usage": None if result is None else result.usage,
            "error": box.get("error"),
        })


#: Seconds a worker may take to come (back) up before a task on it counts as failed.
READY_TIMEOUT = 120.0


def _where(actor: Any, timeout: float) -> Dict[str, Any]:
    """The worker's ``{"pid", "node"}`` once it is up: asking a worker Ray is restarting raises
    ``ActorUnavailableError`` at once, so ask again until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return dict(ray.get(actor.where.remote(), timeout=max(deadline - time.monotonic(), 0.1)))
        except ActorUnavailableError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


class Fanout:
    """``workers`` Ray actors running agent tasks. Call ``ray.init(...)`` first to choose the
    cluster (without it, Ray starts a local one on first use).

    ``actor_options`` go to each actor's ``.options(...)`` (``num_cpus``, ``resources``,
    ``runtime_env``, ``scheduling_strategy``, ...). ``max_attempts`` bounds the runs of an
    idempotent task whose worker died (default 3).
    """

    def __init__(self, workers: int = 2, *, actor_options: Optional[Mapping[str, Any]] = None,
                 max_attempts: int = 3) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        options: Dict[str, Any] = {"num_cpus": 0}
        options.update(actor_options or {})
        # Ray restarts a dead worker; retrying a task is this class's decision (idempotent only).
        options.update(max_restarts=-1, max_task_retries=0)
        remote: Any = ray.remote(_Worker)
        self._actors: List[Any] = [remote.options(**options).remote() for _ in range(workers)]
        self._max_attempts = max_attempts
        self._closed = False

    def workers(self, timeout: float = READY_TIMEOUT) -> List[Dict[str, Any]]:
        """``{"pid", "node"}`` of each worker (waits up to ``timeout`` seconds for them to be up,
        also through a restart: a worker whose process failed to start is restarted by Ray, and
        asking it meanwhile raises ``ActorUnavailableError``)."""
        return [_where(a, timeout) for a in self._actors]

    def run(self, tasks: Iterable[AgentTask], *, on_event: Optional[EventCallback] = None) -> List[TaskResult]:
        """Run every task; the results in the tasks' order."""
        tasks = list(tasks)
        by_id = {r.task_id: r for r in self.as_completed(tasks, on_event=on_event)}
        return [by_id[t.task_id] for t in tasks]

    def as_completed(self, tasks: Iterable[AgentTask], *,
                     on_event: Optional[EventCallback] = None) -> Iterator[TaskResult]:
        """Run every task, yielding each result as it ends. ``on_event(task_id, event)`` sees every
        event of every attempt as it arrives, in order per task (calls are never concurrent)."""
        if self._closed:
            raise RuntimeError("the Fanout is closed")
        pending: "queue.Queue[Optional[Tuple[AgentTask, int]]]" = queue.Queue()
        tasks = list(tasks)
        ids = [t.task_id for t in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be unique")
        for t in tasks:
            pending.put((t, 1))
        done: "queue.Queue[TaskResult]" = queue.Queue()
        lock = threading.Lock()

        def emit(task_id: str, ev: Dict[str, Any]) -> None:
            if on_event is not None:
                with lock:
                    on_event(task_id, ev)

        def serve(actor: Any) -> None:
            while True:
                item = pending.get()
                if item is None:
                    return
                task, attempt = item
                try:
                    # A worker restarting (after a crash, or a failed start) is waited for.
                    _where(actor, READY_TIMEOUT)
                except RayError:
                    pass  # still down: the attempt fails it as a dead worker
                result = self._attempt(actor, task, attempt, emit)
                if result is None:  # the worker died; run the idempotent task again
                    pending.put((task, attempt + 1))
                else:
                    done.put(result)

        threads = [threading.Thread(target=serve, args=(a,), daemon=True, name="acp-host-fanout")
                   for a in self._actors]
        for th in threads:
            th.start()
        try:
            for _ in tasks:
                yield done.get()
        finally:
            for _ in threads:
                pending.put(None)

    def _attempt(self, actor: Any, task: AgentTask, attempt: int,
                 emit: EventCallback) -> Optional[TaskResult]:
        events: List[Dict[str, Any]] = []
        worker: Dict[str, Any] = {}
        try:
            for ref in actor.run.options(num_returns="streaming").remote(task):
                kind, payload = ray.get(ref)
                if kind == "worker":
                    worker = payload
                elif kind == "event":
                    events.append(payload)
                    emit(task.task_id, payload)
                else:
                    return TaskResult(task.task_id, payload["stop_reason"], payload["text"], payload["usage"],
                                      events, attempt, worker, payload["error"])
            raise RayActorError("the worker's stream ended without a result")
        except RayError as exc:
            # The worker died (RayActorError), or its task was lost with its node.
            if task.idempotent and attempt < self._max_attempts:
                return None
            err = WorkerDiedError(f"the worker running task {task.task_id} died (attempt {attempt})",
                                  data={"attempts": attempt, "ray": str(exc).splitlines()[0] if str(exc) else ""})
            return TaskResult(task.task_id, None, "", None, events, attempt, worker, err)

    def close(self) -> None:
        """Kill the workers (and with them any agent they still run)."""
        if self._closed:
            return
        self._closed = True
        for a in self._actors:
            ray.kill(a, no_restart=True)

    def __enter__(self) -> "Fanout":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Permission-handler bridge (called by the native module from a worker thread, never the loop).

``dispatch`` runs the user's handler and reports its answer through ``reply``:

- sync ``Host``: the handler is called right here (a blocking-pool thread of the host); a
  coroutine it returns runs on a private event loop (one daemon thread per process);
- ``AsyncHost``: the handler is called on the host's asyncio loop (``call_soon_threadsafe``), and a
  coroutine it returns runs there as a task.

Any exception, any answer that is not ``str``/``None``, or a closed loop answers an error, which
the core turns into a deny (``decidedBy: "invalid_answer"``). The returned callable (or ``None``)
cancels a still-pending coroutine when the core no longer wants the answer (timeout, cancel).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Awaitable, Callable, Dict, Optional

from ._types import PermissionRequest

_private_loop: Optional[asyncio.AbstractEventLoop] = None
_private_lock = threading.Lock()


def private_loop() -> asyncio.AbstractEventLoop:
    """The process-wide loop that runs coroutine handlers of sync hosts (a daemon thread)."""
    global _private_loop
    with _private_lock:
        if _private_loop is None or _private_loop.is_closed():
            loop = asyncio.new_event_loop()
            t = threading.Thread(target=loop.run_forever, name="acp-host-permissions", daemon=True)
            t.start()
            _private_loop = loop
        return _private_loop


def _check(value: Any) -> "tuple[Optional[str], Optional[str]]":
    if value is None or isinstance(value, str):
        return value, None
    return None, f"permission handler returned {type(value).__name__}, expected an option id or None"


async def _await(aw: Awaitable[Any]) -> Any:
    return await aw


def _finish(reply: Callable[..., Any], fut: "Any") -> None:
    if fut.cancelled():
        reply(None, "permission handler was cancelled")
        return
    exc = fut.exception()
    if exc is not None:
        reply(None, f"permission handler raised {type(exc).__name__}: {exc}")
        return
    reply(*_check(fut.result()))


def _call(handler: Callable[[PermissionRequest], Any], request: PermissionRequest,
          reply: Callable[..., Any]) -> Optional[Awaitable[Any]]:
    try:
        result = handler(request)
    except BaseException as exc:  # noqa: BLE001 - a failing handler denies, whatever it raised
        reply(None, f"permission handler raised {type(exc).__name__}: {exc}")
        return None
    if inspect.isawaitable(result):
        return result
    reply(*_check(result))
    return None


def dispatch(handler: Callable[[PermissionRequest], Any], raw: str, settled: Any,
             loop: Optional[asyncio.AbstractEventLoop], reply: Callable[..., Any]) -> Optional[Callable[[], Any]]:
    request = PermissionRequest._from_json(raw, settled)
    if loop is None:
        aw = _call(handler, request, reply)
        if aw is None:
            return None
        try:
            cf = asyncio.run_coroutine_threadsafe(_await(aw), private_loop())
        except BaseException as exc:  # noqa: BLE001
            reply(None, f"permission handler could not be scheduled: {exc}")
            return None
        cf.add_done_callback(lambda f: _finish(reply, f))
        return cf.cancel

    holder: Dict[str, "asyncio.Future[Any]"] = {}

    def on_loop() -> None:
        aw = _call(handler, request, reply)
        if aw is None:
            return
        task = asyncio.ensure_future(aw)
        holder["task"] = task
        task.add_done_callback(lambda f: _finish(reply, f))

    def cancel() -> None:
        def do() -> None:
            task = holder.get("task")
            if task is not None:
                task.cancel()
        try:
            loop.call_soon_threadsafe(do)
        except RuntimeError:
            pass  # the loop is closed: nothing left to cancel

    try:
        loop.call_soon_threadsafe(on_loop)
    except RuntimeError as exc:
        reply(None, f"the host's event loop is not running: {exc}")
        return None
    return cancel

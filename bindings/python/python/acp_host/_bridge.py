"""Handler bridge (called by the native module from a worker thread, never the loop).

``dispatch`` runs a permission handler, ``dispatch_elicitation`` an elicitation handler,
``call_service`` an ``fs``/``terminal``/``on_ext_request`` handler; each reports the outcome through ``reply``:

- sync ``Host``: the handler is called right here (a blocking-pool thread of the host); a
  coroutine it returns runs on a private event loop (one daemon thread per process);
- ``AsyncHost``: the handler is called on the host's asyncio loop (``call_soon_threadsafe``), and a
  coroutine it returns runs there as a task.

Any exception, a wrong answer, or a closed loop answers an error: for permissions the core turns
it into a deny (``decidedBy: "invalid_answer"``), for elicitations into ``cancel`` (the same
``decidedBy``), whose ``reason`` carries the exception's type, message and traceback; for
services into a JSON-RPC error. The returned callable (or ``None``) cancels a
still-pending coroutine when the core no longer wants the answer (timeout, cancel).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import traceback
from typing import Any, Awaitable, Callable, Dict, Optional

from ._errors import ServiceError, _loads
from ._common import answer_json
from ._types import ElicitationRequest, PermissionRequest

_private_loop: Optional[asyncio.AbstractEventLoop] = None
_private_lock = threading.Lock()

Ok = Callable[[Any], None]
Fail = Callable[[BaseException], None]


def private_loop() -> asyncio.AbstractEventLoop:
    """The process-wide loop that runs coroutine handlers of sync hosts (a daemon thread)."""
    global _private_loop
    with _private_lock:
        if _private_loop is None or _private_loop.is_closed():
            loop = asyncio.new_event_loop()
            t = threading.Thread(target=loop.run_forever, name="acp-host-handlers", daemon=True)
            t.start()
            _private_loop = loop
        return _private_loop


async def _await(aw: Awaitable[Any]) -> Any:
    return await aw


def _settle(fut: Any, ok: Ok, fail: Fail) -> None:
    if fut.cancelled():
        fail(asyncio.CancelledError("handler was cancelled"))
        return
    exc = fut.exception()
    if exc is not None:
        fail(exc)
    else:
        ok(fut.result())


def _call(call: Callable[[], Any], ok: Ok, fail: Fail) -> Optional[Awaitable[Any]]:
    try:
        result = call()
    except BaseException as exc:  # noqa: BLE001 - a failing handler fails closed, whatever it raised
        fail(exc)
        return None
    if inspect.isawaitable(result):
        return result
    ok(result)
    return None


def _run(call: Callable[[], Any], ok: Ok, fail: Fail,
         loop: Optional[asyncio.AbstractEventLoop]) -> Optional[Callable[[], Any]]:
    if loop is None:
        aw = _call(call, ok, fail)
        if aw is None:
            return None
        try:
            cf = asyncio.run_coroutine_threadsafe(_await(aw), private_loop())
        except BaseException as exc:  # noqa: BLE001
            fail(exc)
            return None
        cf.add_done_callback(lambda f: _settle(f, ok, fail))
        return cf.cancel

    holder: Dict[str, "asyncio.Future[Any]"] = {}

    def on_loop() -> None:
        aw = _call(call, ok, fail)
        if aw is None:
            return
        task = asyncio.ensure_future(aw)
        holder["task"] = task
        task.add_done_callback(lambda f: _settle(f, ok, fail))

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
        fail(RuntimeError(f"the host's event loop is not running: {exc}"))
        return None
    return cancel


def failure(what: str, exc: BaseException) -> str:
    """The reason a failed handler gives the core (``permission_resolved``/``elicitation_resolved``
    ``reason``, and the log): the exception's type and message, then its traceback."""
    tb = exc.__traceback__
    # The handler's own frames: the bridge's (calling it) are noise to whoever reads the reason.
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    trace = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()
    return f"{what} handler raised {type(exc).__name__}: {exc}\n{trace}"


def dispatch(handler: Callable[[PermissionRequest], Any], raw: str, settled: Any,
             loop: Optional[asyncio.AbstractEventLoop], reply: Callable[..., Any]) -> Optional[Callable[[], Any]]:
    """Ask a permission handler: ``reply(option_id_or_None, error_or_None)``."""
    request = PermissionRequest._from_json(raw, settled)

    def ok(value: Any) -> None:
        if value is None or isinstance(value, str):
            reply(value, None)
        else:
            reply(None, f"permission handler returned {type(value).__name__}, expected an option id or None")

    def fail(exc: BaseException) -> None:
        reply(None, failure("permission", exc))

    return _run(lambda: handler(request), ok, fail, loop)


def dispatch_elicitation(handler: Callable[[ElicitationRequest], Any], raw: str, settled: Any,
                         loop: Optional[asyncio.AbstractEventLoop],
                         reply: Callable[..., Any]) -> Optional[Callable[[], Any]]:
    """Ask an elicitation handler: ``reply(answer_json, None)`` or ``reply(None, error)``."""
    request = ElicitationRequest._from_json(raw, settled)

    def ok(value: Any) -> None:
        text, problem = answer_json(value)
        if problem is not None:
            reply(None, f"elicitation handler: {problem}")
        else:
            reply(text, None)

    def fail(exc: BaseException) -> None:
        reply(None, failure("elicitation", exc))

    return _run(lambda: handler(request), ok, fail, loop)


def call_service(target: Any, name: Optional[str], args_json: str,
                 loop: Optional[asyncio.AbstractEventLoop], reply: Callable[..., Any]) -> Optional[Callable[[], Any]]:
    """Call an fs/terminal/extension-request handler: ``reply(result_json, None)`` or ``reply(None, error_json)``."""
    args = _loads(args_json, "the request's params")

    def ok(value: Any) -> None:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError, RecursionError) as exc:
            fail(exc)
            return
        reply(text, None)

    def fail(exc: BaseException) -> None:
        if isinstance(exc, ServiceError):
            err = {"code": exc.rpc_code, "message": exc.message, "data": exc.data}
        else:
            err = {"code": -32603, "message": f"{type(exc).__name__}: {exc}", "data": None}
        try:
            reply(None, json.dumps(err))
        except (TypeError, ValueError, RecursionError):
            reply(None, json.dumps({"code": err["code"], "message": err["message"]}))

    def call() -> Any:
        fn = getattr(target, name) if name else target
        return fn(*args)

    return _run(call, ok, fail, loop)


def resolve(fut: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    """Settle an awaitable of the native module on its loop (unless it was cancelled meanwhile)."""
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)

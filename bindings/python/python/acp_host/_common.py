"""Argument normalisation shared by the sync and asyncio twins."""

from __future__ import annotations

import atexit
import json
# Before `atexit.register(_close_all)`: atexit runs last-in first-out, so logging's own hook
# (`logging.shutdown`, flushing handlers) runs after the hosts closed and their records arrived.
import logging  # noqa: F401
import os
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from . import _native
from ._errors import InvalidArgumentError, _dumps
from ._schema import ContentBlock
from ._types import ElicitationMode, Replay, RestartPolicy

#: A policy: a preset name, a policy document (dict or JSON text), or an absolute path of a JSON
#: policy file (docs/OPTIONS.md).
PolicyLike = Union[str, Mapping[str, Any], "os.PathLike[str]", None]
#: A prompt: text, one ACP content block, or a list of blocks / texts.
ContentLike = Union[str, ContentBlock, Sequence[Union[str, ContentBlock]]]
PathLike = Union[str, "os.PathLike[str]"]
#: ``elicitation_modes``: one mode or several (``("form", "url")``).
ElicitationModes = Union[ElicitationMode, Iterable[ElicitationMode]]


class FsHandler(Protocol):
    """Serves the agents' ``fs/*`` requests instead of the built-in sandbox (``Host(fs=...)``).

    Called only after the path was confined to the session's roots and passed the policy's
    hard-deny rules. Methods may be coroutine functions. Raise ``acp_host.ServiceError`` to answer
    with a JSON-RPC error (e.g. ``rpc_code=-32002`` for a missing file).
    """

    def read_text_file(self, session_id: str, path: str, line: Optional[int], limit: Optional[int]) -> Any: ...

    def write_text_file(self, session_id: str, path: str, content: str) -> Any: ...


#: Serves every ``terminal/*`` request (``Host(terminal=...)``): ``(method, params) -> result dict``
#: (``terminal/create`` reaches it only after its command and cwd passed the roots and the policy).
TerminalHandler = Callable[[str, Dict[str, Any]], Any]

#: Serves the agent's extension requests (``_``-prefixed methods, e.g. ``_zed.dev/workspace/buffers``;
#: ``Host(on_ext_request=...)``): ``(method, params) -> result``, any JSON-serialisable value
#: (``params`` is ``None`` when the request has none). May be a coroutine function.
ExtRequestHandler = Callable[[str, Any], Any]
# ``(command) -> exit code``: runs a terminal login where the user sees it (plain or coroutine
# function). ``command``: ``{"methodId", "label", "command", "args", "env", "cwd"}``.
TerminalAuthHandler = Callable[[Dict[str, Any]], Any]


def seconds(name: str, value: Optional[float], *, none_means_forever: bool) -> Optional[float]:
    if value is None:
        return float("inf") if none_means_forever else None
    v = float(value)
    if v != v or v < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative number of seconds, got {value!r}")
    return v


#: ``spawn(restart=...)``: a ``RestartPolicy``, its JSON form (``{"maxRestarts", "backoffMs",
#: "maxBackoffMs", "resetAfterMs"}``, or in snake_case; ``backoff=`` etc. in seconds), or ``None``
#: (not supervised).
RestartLike = Union[RestartPolicy, Mapping[str, Any], None]
#: ``spawn(replay=...)``: a ``Replay``, its JSON form (``{"file", "pace", "waitMs", "report",
#: "ignore"}``, or in snake_case; ``wait=`` in seconds), the recording's path (played at the
#: recorded pace, no report), or ``None`` (start ``command``).
ReplayLike = Union[Replay, Mapping[str, Any], str, "os.PathLike[str]", None]


def timeout_arg(timeout: Optional[float]) -> Optional[float]:
    """A call's ``timeout`` (seconds; ``None`` or ``inf``: none)."""
    return seconds("timeout", timeout, none_means_forever=False)


def answer_json(answer: Any) -> Tuple[Optional[str], Optional[str]]:
    """An elicitation answer as JSON text, or why it is not one (the core checks the rest)."""
    if not isinstance(answer, Mapping):
        return None, (
            f"an elicitation answer must be a dict like {{\"action\": \"accept\", \"content\": {{...}}}}, "
            f"got {type(answer).__name__}"
        )
    try:
        return json.dumps(dict(answer), allow_nan=False), None
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"the elicitation answer is not JSON: {exc}"


def params_json(params: Any) -> str:
    """An extension request's params as JSON text (``None``: ``{}``)."""
    return _dumps({} if params is None else params, "params", allow_nan=False)


def content_json(content: ContentLike) -> str:
    if isinstance(content, str):
        blocks: List[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, Mapping):
        blocks = [dict(content)]
    else:
        blocks = []
        for item in content:
            if isinstance(item, str):
                blocks.append({"type": "text", "text": item})
            elif isinstance(item, Mapping):
                blocks.append(dict(item))
            else:
                raise InvalidArgumentError(
                    f"prompt items must be text or content blocks (dicts), got {type(item).__name__}"
                )
    return _dumps(blocks, "the prompt content")


# ------------------------------------------------------------------ interpreter exit
_live: "weakref.WeakSet[Any]" = weakref.WeakSet()
_live_lock = threading.Lock()


def register(host: Any) -> None:
    with _live_lock:
        _live.add(host)


#: How long interpreter exit waits for threads still inside acp_host calls to come back.
EXIT_GRACE = 1.0


def _close_all() -> None:
    with _live_lock:
        hosts = list(_live)
    for h in hosts:
        try:
            h._close_at_exit()
        except BaseException:  # noqa: BLE001 - best effort at exit; the core also kills on drop
            pass
    # Then no native thread may enter the interpreter again: one that does while it finalizes
    # aborts the process (CPython < 3.14 ends it with pthread_exit through Rust frames).
    try:
        _native._at_exit(EXIT_GRACE)
    except BaseException:  # noqa: BLE001
        pass


atexit.register(_close_all)

Handler = Callable[..., Any]

"""Argument normalisation shared by the sync and asyncio twins."""

from __future__ import annotations

import atexit
import json
import os
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from . import _native
from ._errors import ConfigError, InvalidArgumentError, _dumps
from ._schema import ContentBlock
from ._types import AgentSpec, ElicitationMode, RestartPolicy

PRESETS = ("deny-all", "read-only", "ask")

#: A policy: a preset name, a policy document (dict or JSON text), or a path to a JSON file.
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


def policy_args(policy: PolicyLike) -> Dict[str, Any]:
    if policy is None:
        return {}
    if isinstance(policy, Mapping):
        return {"policy_kind": "json", "policy_value": json.dumps(dict(policy))}
    if isinstance(policy, os.PathLike):
        return {"policy_kind": "file", "policy_value": os.fspath(policy)}
    if isinstance(policy, str):
        if policy in PRESETS:
            return {"policy_kind": "preset", "policy_value": policy}
        if policy.lstrip().startswith("{"):
            return {"policy_kind": "json", "policy_value": policy}
        if policy.endswith(".json") or os.path.sep in policy:
            return {"policy_kind": "file", "policy_value": policy}
        # Let the core name the presets in its error.
        return {"policy_kind": "preset", "policy_value": policy}
    raise _config(
        "policy", f"policy must be a preset name, a policy document (dict or JSON) or a path, got {type(policy).__name__}"
    )


def _config(path: str, message: str) -> ConfigError:
    """A ``Host(...)`` argument that cannot be used: ``invalid_config`` with ``data["path"]``."""
    return ConfigError(f"invalid config: {path}: {message}", code="invalid_config", data={"path": path})


def _config_seconds(name: str, value: Optional[float], *, none_means_forever: bool) -> Optional[float]:
    try:
        return seconds(name, value, none_means_forever=none_means_forever)
    except InvalidArgumentError as e:
        raise _config(name, e.message) from None


def seconds(name: str, value: Optional[float], *, none_means_forever: bool) -> Optional[float]:
    if value is None:
        return float("inf") if none_means_forever else None
    v = float(value)
    if v != v or v < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative number of seconds, got {value!r}")
    return v


def host_args(
    *,
    policy: PolicyLike,
    roots: Iterable[PathLike],
    permission_timeout: float,
    on_permission: Any,
    on_elicitation: Any,
    elicitation_modes: Optional[ElicitationModes],
    elicitation_timeout: float,
    request_timeout: Optional[float],
    prompt_timeout: Optional[float],
    shutdown_grace: float,
    cancel_grace: float,
    max_line_bytes: Optional[int],
    event_capacity: Optional[int],
    wire_events: bool,
    fs: Union[bool, FsHandler],
    terminal: Union[bool, TerminalHandler],
    on_ext_request: Optional[ExtRequestHandler],
    client_name: Optional[str],
    client_version: Optional[str],
    stderr_tail_bytes: Optional[int] = None,
    unstable: Iterable[str] = (),
    coalesce_tool_call_updates: bool = False,
    on_terminal_auth: Optional[TerminalAuthHandler] = None,
    events: bool = True,
) -> Dict[str, Any]:
    args: Dict[str, Any] = policy_args(policy)
    args["roots"] = [os.path.abspath(os.fspath(r)) for r in roots]
    args["permission_timeout"] = _config_seconds("permission_timeout", permission_timeout, none_means_forever=False)
    args["request_timeout"] = _config_seconds("request_timeout", request_timeout, none_means_forever=True)
    args["prompt_timeout"] = _config_seconds("prompt_timeout", prompt_timeout, none_means_forever=False)
    args["shutdown_grace"] = _config_seconds("shutdown_grace", shutdown_grace, none_means_forever=False)
    args["cancel_grace"] = _config_seconds("cancel_grace", cancel_grace, none_means_forever=False)
    args["max_line_bytes"] = max_line_bytes
    args["event_capacity"] = event_capacity
    args["wire_events"] = bool(wire_events)
    if isinstance(fs, bool):
        args["fs"] = fs
    elif callable(getattr(fs, "read_text_file", None)) and callable(getattr(fs, "write_text_file", None)):
        args["fs"], args["fs_handler"] = True, fs
    else:
        raise _config("fs", "fs must be True, False or an object with read_text_file and write_text_file")
    if isinstance(terminal, bool):
        args["terminal"] = terminal
    elif callable(terminal):
        args["terminal"], args["terminal_handler"] = True, terminal
    else:
        raise _config("terminal", "terminal must be True, False or a function (method, params) -> dict")
    if on_ext_request is not None:
        if not callable(on_ext_request):
            raise _config(
                "on_ext_request", "on_ext_request must be a function or coroutine function (method, params) -> result, or None"
            )
        args["on_ext_request"] = on_ext_request
    args["client_name"] = client_name
    args["client_version"] = client_version
    if stderr_tail_bytes is not None:
        if not isinstance(stderr_tail_bytes, int) or stderr_tail_bytes < 0:
            raise _config("stderr_tail_bytes", f"stderr_tail_bytes must be a non-negative int, got {stderr_tail_bytes!r}")
        args["stderr_tail_bytes"] = stderr_tail_bytes
    args["unstable"] = list(unstable)
    if on_terminal_auth is not None:
        if not callable(on_terminal_auth):
            raise _config("on_terminal_auth", "on_terminal_auth must be a function (command) -> exit code, or None")
        args["on_terminal_auth"] = on_terminal_auth
    args["coalesce_tool_call_updates"] = bool(coalesce_tool_call_updates)
    args["events_enabled"] = bool(events)
    if on_permission is None:
        pass
    elif on_permission == "manual":
        args["manual_permissions"] = True
    elif callable(on_permission):
        args["on_permission"] = on_permission
    else:
        raise _config(
            "on_permission", "on_permission must be a function, a coroutine function, \"manual\" or None"
        )
    if on_elicitation is None:
        if elicitation_modes is not None:
            raise _config("elicitation_modes", "elicitation_modes needs on_elicitation (a function or \"manual\")")
    elif on_elicitation == "manual":
        args["manual_elicitations"] = True
    elif callable(on_elicitation):
        args["on_elicitation"] = on_elicitation
    else:
        raise _config(
            "on_elicitation", "on_elicitation must be a function, a coroutine function, \"manual\" or None"
        )
    if elicitation_modes is not None:
        args["elicitation_modes"] = modes_arg(elicitation_modes)
    args["elicitation_timeout"] = seconds("elicitation_timeout", elicitation_timeout, none_means_forever=False)
    return args


def timeout_arg(timeout: Optional[float]) -> Optional[float]:
    """A call's ``timeout`` (seconds; ``None`` or ``inf``: none)."""
    return seconds("timeout", timeout, none_means_forever=False)


def modes_arg(modes: ElicitationModes) -> List[str]:
    names: List[str] = [modes] if isinstance(modes, str) else list(modes)
    for m in names:
        if m not in ("form", "url"):
            raise _config("elicitation_modes", f"unknown elicitation mode {m!r} (\"form\", \"url\")")
    if not names:
        raise InvalidArgumentError("elicitation_modes must name at least one mode (\"form\", \"url\")")
    return names


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


def command_args(command: Union[str, Sequence[str]]) -> "tuple[str, List[str]]":
    if isinstance(command, (str, os.PathLike)):
        return os.fspath(command), []
    parts = [os.fspath(c) for c in command]
    if not parts:
        raise InvalidArgumentError("spawn needs a command")
    return parts[0], parts[1:]


def env_args(env: Optional[Mapping[str, Optional[str]]]) -> Optional[Dict[str, Optional[str]]]:
    if env is None:
        return None
    return {str(k): (None if v is None else str(v)) for k, v in env.items()}


#: ``spawn(restart=...)``: a ``RestartPolicy``, its JSON form (``{"maxRestarts", "backoffMs",
#: "maxBackoffMs", "resetAfterMs"}``, every key optional), or ``None`` (not supervised).
RestartLike = Union[RestartPolicy, Mapping[str, Any], None]


def restart_arg(restart: Any) -> Optional[str]:
    """The restart policy as the JSON text the native spawn takes (the core checks a mapping's
    keys and values: ``ConfigError``, ``data["path"] == "restart"``)."""
    if restart is None:
        return None
    if isinstance(restart, RestartPolicy):
        return json.dumps(restart.to_json())
    if isinstance(restart, Mapping):
        try:
            return json.dumps(dict(restart), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise _config("restart", f"the restart policy is not JSON: {exc}") from None
    raise _config(
        "restart", f"restart must be a RestartPolicy, a mapping (its JSON form) or None, got {type(restart).__name__}"
    )


def spawn_args(
    command: Union[str, Sequence[str], AgentSpec], env: Optional[Mapping[str, Optional[str]]],
    restart: RestartLike = None,
) -> "tuple[str, List[str], Optional[Dict[str, Optional[str]]], Optional[str]]":
    """``spawn``'s command, env and restart policy (JSON): an ``AgentSpec`` brings its own env,
    which ``env`` overlays, and its own restart policy, which ``restart`` replaces."""
    if isinstance(command, AgentSpec):
        merged: Dict[str, Optional[str]] = dict(command.env)
        merged.update(env or {})
        policy = command.restart if restart is None else restart
        return command.program, list(command.args), env_args(merged), restart_arg(policy)
    prog, args = command_args(command)
    return prog, args, env_args(env), restart_arg(restart)


def _pool_count(name: str, value: Any, *, optional: bool = False) -> Optional[int]:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _config(f"pool.{name}", f"{name} must be a non-negative int, got {value!r}")
    return value


def pool_config_json(
    mode: Any, max_sessions_per_agent: Any, warm_spares: Any, max_agents: Any, idle_timeout: Any,
) -> str:
    """``host.pool(...)``'s settings as the pool's JSON form (``{"mode", "maxSessionsPerAgent",
    "warmSpares", "maxAgents", "idleTimeoutMs"}``). A value of the wrong type raises
    ``ConfigError`` with ``data["path"] == "pool.<argument>"``; the core checks how they fit
    together (``data["path"] == "pool"``)."""
    if mode not in ("process-per-session", "shared"):
        raise _config("pool.mode", f"mode must be \"process-per-session\" or \"shared\", got {mode!r}")
    config: Dict[str, Any] = {
        "mode": mode,
        "warmSpares": _pool_count("warm_spares", warm_spares),
        "maxAgents": _pool_count("max_agents", max_agents),
    }
    per_agent = _pool_count("max_sessions_per_agent", max_sessions_per_agent, optional=True)
    if per_agent is not None:
        config["maxSessionsPerAgent"] = per_agent
    if idle_timeout is None or idle_timeout == float("inf"):
        config["idleTimeoutMs"] = None
    else:
        ok = not isinstance(idle_timeout, bool) and isinstance(idle_timeout, (int, float))
        if not ok or not 0 <= idle_timeout < 2**53 / 1000:  # NaN fails the comparison too
            raise _config(
                "pool.idle_timeout",
                f"idle_timeout must be a non-negative number of seconds or None (never), got {idle_timeout!r}",
            )
        config["idleTimeoutMs"] = round(idle_timeout * 1000)
    return json.dumps(config)


def cwd_arg(cwd: Optional[PathLike]) -> str:
    return os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()


def dirs_arg(dirs: Iterable[PathLike]) -> List[str]:
    return [os.path.abspath(os.fspath(d)) for d in dirs]


def params_json(params: Any) -> str:
    """An extension request's params as JSON text (``None``: ``{}``)."""
    return _dumps({} if params is None else params, "params", allow_nan=False)


def mcp_arg(servers: Optional[Sequence[Mapping[str, Any]]]) -> Optional[str]:
    return None if servers is None else _dumps([dict(s) for s in servers], "mcp_servers")


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

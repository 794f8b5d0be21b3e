"""Keyword arguments → the core's option documents (docs/OPTIONS.md).

The face only translates: snake_case names become the canonical camelCase ones (in the nested
option objects too: ``fs_limits={"max_read_bytes": ...}``), a ``…Ms`` option is also taken in
seconds under the name without the suffix (``request_timeout=120.0``), paths are handed over as
given (``os.fspath``, never resolved), and the Pythonic spellings of a few options (``fs=False``,
``on_permission="manual"``, ``client_name=``) become their canonical values. Validation, ranges,
defaults and error paths are the core's (``acp_host::options``): a value the core refuses raises
``ConfigError`` whose ``path`` is the canonical field path, whichever spelling was used.
"""

from __future__ import annotations

import json
import math
import os
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, FrozenSet, Mapping, Tuple

from . import _native
from ._errors import ConfigError
from ._types import AgentSpec, Replay, RestartPolicy

__all__ = ["UNSET", "NotGiven", "given", "host_document", "agent_document", "session_document", "pool_document", "camel",
           "seconds_to_ms"]


def camel(name: str) -> str:
    """``max_line_bytes`` → ``maxLineBytes``; a camelCase name is returned unchanged."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _table() -> Tuple[Dict[str, bool], FrozenSet[str]]:
    """From the core's option table: every ``…Ms`` path → whether it takes ``null`` (none), and
    the paths of nested option objects whose keys are option names."""
    rows = json.loads(_native.options_table_json())
    ms: Dict[str, bool] = {}
    objects = set()
    for row in rows:
        path: str = row["path"]
        if path.endswith("Ms"):
            ms[path] = "null" in row["type"]
        if "." in path:
            objects.add(path.rsplit(".", 1)[0])
    return ms, frozenset(objects - {"pool"})


_MS, _OBJECTS = _table()
#: The keywords whose ``None`` is a value ("none"): the nullable ``…Ms`` options, both spellings.
_NULLABLE = frozenset(
    n for path, nullable in _MS.items() if nullable
    for n in (_snake(path.rsplit(".", 1)[-1]), _snake(path.rsplit(".", 1)[-1])[:-3])
)


def _config(path: str, message: str) -> ConfigError:
    return ConfigError(f"invalid config: {path}: {message}", code="invalid_config", data={"path": path})


def seconds_to_ms(value: Any, nullable: bool) -> Any:
    """Seconds → milliseconds, exactly (``1.1`` → ``1100``: decimal, not binary, arithmetic).
    ``inf`` is "none" where the option takes ``null``; anything that is not a number is handed
    over as it is, for the core to name."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, float) and value != value:
        return "NaN"
    if value == float("inf"):
        # Where "none" is not a value, a number past every range: the core refuses it.
        return None if nullable else 2**64
    try:
        ms = Decimal(repr(value)) * 1000
    except InvalidOperation:
        return repr(value)
    return int(ms) if ms == ms.to_integral_value() else float(ms)


def _jsonable(value: Any) -> Any:
    """Paths as text; anything else JSON cannot carry as its type's name, so that the core
    refuses it with the option's path (a face that guessed would re-decide)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN: handed over as text, which the core refuses
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return f"<{type(value).__name__}>"


def _names(options: Mapping[str, Any], prefix: str) -> Dict[str, Any]:
    """One level of keyword arguments under canonical names; seconds spellings converted."""
    out: Dict[str, Any] = {}
    spelled: Dict[str, str] = {}
    for key, value in options.items():
        name = camel(key)
        path = prefix + name
        if path + "Ms" in _MS:
            name, path = name + "Ms", path + "Ms"
            value = seconds_to_ms(value, _MS[path])
        if name in out:
            raise _config(path, f"given twice (`{spelled[name]}` and `{key}`): give one")
        spelled[name] = key
        if path in _OBJECTS and isinstance(value, Mapping):
            value = _names(value, path + ".")
        out[name] = value
    return out


def _drop_none(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in doc.items() if v is not None}


class NotGiven:
    """The type of ``UNSET``."""

    def __repr__(self) -> str:
        return "UNSET"


#: The default of the time limits that take ``None`` for "none" (``request_timeout``,
#: ``prompt_timeout``, ``event_stall_timeout``, a pool's ``idle_timeout``): not given, the
#: core's default applies. Every other option's default is ``None``, "not given" too.
UNSET: Any = NotGiven()


def given(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The keyword arguments actually given (of a ``locals()``: ``self`` and ``**options`` left
    out): ``UNSET`` never, ``None`` only where it means "none"."""
    return {k: v for k, v in options.items()
            if v is not UNSET and k not in ("self", "options") and (v is not None or k in _NULLABLE)}


def _text(doc: Mapping[str, Any]) -> str:
    return json.dumps(_jsonable(doc), allow_nan=False)


_HOOKS = ("on_permission", "on_elicitation", "fs_handler", "terminal_handler", "on_ext_request", "on_terminal_auth")


def host_document(options: Mapping[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """``Host(**options)`` → (the host document as JSON text, the callables for the native host)."""
    opts = dict(options)
    hooks: Dict[str, Any] = {}
    doc: Dict[str, Any] = {}

    def alias(canonical: str, value: Any) -> None:
        if opts.get(canonical) is not None and opts[canonical] != value:
            raise _config(camel(canonical), f"given twice (`{canonical}` and its Pythonic spelling): give one")
        opts[canonical] = value

    for slot, canonical in (("on_permission", "permission"), ("on_elicitation", "elicitation")):
        value = opts.pop(slot, None)
        if value == "manual":
            alias(canonical, "manual")
        elif callable(value):
            hooks[slot] = value
        elif value is not None:
            raise _config(canonical, f"{slot} must be a function, a coroutine function, \"manual\" or None")
    for slot, canonical in (("on_ext_request", "ext"), ("on_terminal_auth", "terminal_auth")):
        value = opts.pop(slot, None)
        if callable(value):
            hooks[slot] = value
        elif value is not None:
            raise _config(camel(canonical), f"{slot} must be a function, a coroutine function or None")
    fs = opts.pop("fs", None)
    if fs is False:
        doc["fs"] = "disabled"
    elif fs is True or fs is None:
        pass
    elif callable(getattr(fs, "read_text_file", None)) and callable(getattr(fs, "write_text_file", None)):
        hooks["fs_handler"] = fs
    else:
        doc["fs"] = fs
    terminal = opts.pop("terminal", None)
    if terminal is False:
        doc["terminal"] = "disabled"
    elif terminal is True or terminal is None:
        pass
    elif callable(terminal):
        hooks["terminal_handler"] = terminal
    else:
        doc["terminal"] = terminal
    name, version = opts.pop("client_name", None), opts.pop("client_version", None)
    if name is not None or version is not None:
        info = dict(opts.pop("client_info", None) or {})
        info.update(_drop_none({"name": name, "version": version}))
        opts["client_info"] = info
    modes = opts.get("elicitation_modes")
    if isinstance(modes, str):
        opts["elicitation_modes"] = [modes]
    elif modes is not None and not isinstance(modes, (list, tuple, Mapping)):
        opts["elicitation_modes"] = list(modes)
    for key in ("roots", "unstable"):
        if opts.get(key) is not None and not isinstance(opts[key], (str, list, tuple, Mapping)):
            opts[key] = list(opts[key])
    policy = opts.get("policy")
    if isinstance(policy, str) and policy.lstrip().startswith("{"):
        try:
            opts["policy"] = json.loads(policy)
        except ValueError:
            pass  # handed over as text: the core names it
    # `None` is handed over as null: "not given", or "none" for the time limits that take it.
    doc.update(_names(opts, ""))
    return _text(doc), hooks


def agent_document(command: Any, args: Any, env: Any, cwd: Any, restart: Any, replay: Any = None) -> str:
    """``spawn``'s arguments → the agent spec document. ``replay``: a ``Replay``, its JSON form
    (snake_case keys and ``wait`` in seconds taken too) or the recording's path; given together
    with a command, both go to the core, which refuses the pair (path ``command``)."""
    doc: Dict[str, Any] = {}
    if isinstance(replay, Replay):
        doc["replay"] = replay.to_json()
    elif isinstance(replay, (str, os.PathLike)):
        doc["replay"] = {"file": replay}
    elif isinstance(replay, Mapping) and all(isinstance(k, str) for k in replay):
        doc["replay"] = _names(replay, "replay.")
    elif replay is not None:
        doc["replay"] = replay  # not an object (or odd keys): the core names it at its path
    if isinstance(command, AgentSpec):
        doc["command"] = command.program
        doc["args"] = list(command.args)
        merged: Dict[str, Any] = dict(command.env)
        merged.update(env or {})
        env = merged
        restart = command.restart if restart is None else restart
    elif isinstance(command, (str, os.PathLike)):
        doc["command"] = command
    elif command is not None:
        parts = list(command)
        if parts:
            doc["command"] = parts[0]
        doc["args"] = parts[1:]
    if args is not None:
        doc["args"] = list(doc.get("args", [])) + list(args)
    if env is not None:
        doc["env"] = dict(env)
    doc["cwd"] = cwd
    if isinstance(restart, RestartPolicy):
        restart = restart.to_json()
    if isinstance(restart, Mapping):
        restart = _names(restart, "restart.")
    doc["restart"] = restart
    return _text(_drop_none(doc))


def session_document(cwd: Any, additional_directories: Any, mcp_servers: Any) -> str:
    """A session's arguments → the session options document."""
    doc: Dict[str, Any] = {"cwd": cwd}
    if additional_directories is not None:
        doc["additionalDirectories"] = (
            additional_directories if isinstance(additional_directories, (str, Mapping))
            else list(additional_directories)
        )
    if mcp_servers is not None:
        doc["mcpServers"] = mcp_servers if isinstance(mcp_servers, (str, Mapping)) else list(mcp_servers)
    return _text(_drop_none(doc))


def pool_document(settings: Mapping[str, Any]) -> str:
    """``host.pool(...)``'s settings → the pool document (``pool.*``)."""
    return _text(_names(settings, "pool."))


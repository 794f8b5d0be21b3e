"""The typed shapes of events and their ACP payloads, generated from ``schema/events.schema.json``.

``AnyEvent`` is what every event stream yields: a ``Union`` of one ``Protocol`` per event kind
(``SessionUpdateEvent``, ``PermissionRequestedEvent``, ...) whose ``data`` type follows ``kind``.
Narrow on ``ev.kind``, then on the payload's tag::

    for ev in session.events():
        if ev.kind == "session_update" and ev.data["sessionUpdate"] == "tool_call":
            print(ev.data["toolCallId"], ev.data["title"])

The payloads are ``TypedDict``s (``SessionUpdate``, ``ToolCall``, ``ContentBlock``, ...): plain
dicts at runtime, checked by mypy/pyright only. Optional keys may be absent (use ``.get``). Agents
may send kinds, tags and fields this schema does not know: they arrive as they are.
"""

from ._schema import *  # noqa: F401,F403 (the generated module's __all__)
from ._schema import __all__ as __all__

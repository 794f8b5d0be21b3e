"""The host's log records as standard ``logging`` records (the native side is ``src/log.rs``).

Records go to the logger ``acp_host.<target>`` (``acp_host.spawn``, ``acp_host.handshake``,
``acp_host.permission``, ``acp_host.elicitation``, ``acp_host.transport``, ``acp_host.protocol``,
``acp_host.pool``, ``acp_host.auth``; ``acp_host.log`` for the notice of dropped records), only
from a host given ``log_level``, on its ``acp-host-log`` thread, in order. ``record.acp_agent``,
``record.acp_session`` and ``record.acp_target`` carry the record's fields; ``record.created`` is
when the host made it. The package adds a ``NullHandler`` to ``acp_host``, as a library should,
so nothing is printed until the application configures logging.
"""

from __future__ import annotations

import logging
import threading
from typing import Dict, Optional

__all__ = ["TRACE", "logger"]

#: The level of ``log_level="trace"`` records (below ``logging.DEBUG``).
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

#: The parent of every logger the host writes to.
logger = logging.getLogger("acp_host")
logger.addHandler(logging.NullHandler())

_loggers: Dict[str, logging.Logger] = {}


def _emit(levelno: int, target: str, message: str, agent: Optional[int], session: Optional[str],
          created: float, thread_name: str) -> None:
    """One record from the native log thread. What a handler or filter raises loses this record
    only, and is not printed here (a handler's ``emit`` failing goes through its own
    ``handleError``, as with any logging call)."""
    try:
        log = _loggers.get(target)
        if log is None:
            log = _loggers[target] = logging.getLogger(f"acp_host.{target}")
        if not log.isEnabledFor(levelno):
            return
        thread = threading.current_thread()
        if thread.name != thread_name:
            thread.name = thread_name
        record = log.makeRecord(log.name, levelno, "acp_host", 0, message, (), None,
                                extra={"acp_agent": agent, "acp_session": session, "acp_target": target})
        record.created = created
        record.msecs = (created - int(created)) * 1000
        start = getattr(logging, "_startTime", None)
        if isinstance(start, float):
            record.relativeCreated = (created - start) * 1000
        log.handle(record)
    except Exception:  # noqa: BLE001 - a failing handler loses its record, nothing else
        pass

"""``connect``: ACP over a stream the embedder already has — a socket, a pair of binary file
objects (an SSH channel, a container's stdio), or asyncio streams.

The host reads and writes one end of an in-memory pipe (``_native.Bridge``, 64 KiB each way);
two threads (or, for asyncio streams, two tasks) move the bytes between its other end and the
embedder's stream. The agent's stream is read only as fast as the host takes its messages, and
the host's writes wait while the stream is not taking them: backpressure both ways, no
unbounded buffer. When either side ends — the peer closes or fails, or the agent is shut down or
the host closes — the other learns at once: a pending call fails with ``AgentExitedError``, the
stream is shut down and closed. A socket is used through a duplicate of its descriptor (its
SOCKET handle on Windows), so the caller's socket object stays theirs to close.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any, Callable, Optional, Set

from . import _native
from ._errors import InvalidArgumentError

#: Bytes moved per read.
CHUNK = 64 * 1024

#: The bridging tasks of asyncio connections (kept referenced while they run).
_tasks: Set["asyncio.Task[None]"] = set()


def _quiet(f: Callable[[], Any]) -> None:
    try:
        f()
    except Exception:  # noqa: BLE001 - closing what may already be closed
        pass


def _threads(bridge: _native.Bridge, read: Callable[[int], bytes], write: Callable[[bytes], Any],
             end_writing: Callable[[], None], end_reading: Callable[[], None]) -> None:
    def inbound() -> None:
        try:
            while True:
                data = read(CHUNK)
                if not data:
                    break
                bridge.feed(bytes(data))
        except Exception:  # noqa: BLE001 - a failing stream is a peer gone: the host sees EOF
            pass
        finally:
            _quiet(bridge.feed_eof)
            _quiet(end_reading)

    def outbound() -> None:
        try:
            while True:
                data = bridge.drain(CHUNK)
                if not data:
                    break
                write(data)
        except Exception:  # noqa: BLE001
            pass
        finally:
            # The host is done with the agent (or the stream failed): end both directions, so
            # that a peer that never closes does not keep `inbound` reading for ever.
            _quiet(bridge.feed_eof)
            _quiet(end_writing)

    for target, name in ((inbound, "acp-host-connect-in"), (outbound, "acp-host-connect-out")):
        threading.Thread(target=target, name=name, daemon=True).start()


def _socket(bridge: _native.Bridge, sock: socket.socket) -> None:
    own = sock.dup()
    own.setblocking(True)

    def end_writing() -> None:
        # Unblocks `recv` in the other thread too; that thread closes the socket.
        _quiet(lambda: own.shutdown(socket.SHUT_RDWR))

    _threads(bridge, own.recv, own.sendall, end_writing, own.close)


def _write_all(writer: Any) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = writer.write(view)
            # A raw stream may take part of it; a file object that returns nothing took it all.
            view = view[len(view) if n is None else n:]
        flush = getattr(writer, "flush", None)
        if callable(flush):
            flush()

    return write


def _files(bridge: _native.Bridge, reader: Any, writer: Any) -> None:
    read = getattr(reader, "read1", None) or getattr(reader, "recv", None) or getattr(reader, "read", None)
    if not callable(read) or not callable(getattr(writer, "write", None)):
        raise InvalidArgumentError(
            "connect(reader, writer) takes binary file objects: reader.read1/recv/read(n), writer.write(bytes)"
        )
    _threads(bridge, read, _write_all(writer), lambda: _quiet(writer.close),
             lambda: _quiet(reader.close))


def bridge_sync(stream: Any, writer: Optional[Any]) -> _native.Bridge:
    """The bridge for ``Host.connect``'s arguments, its threads started."""
    bridge = _native.Bridge()
    if writer is None:
        if not isinstance(stream, socket.socket):
            raise InvalidArgumentError(
                f"connect(sock) takes a socket.socket (or connect(reader, writer)), got {type(stream).__name__}"
            )
        _socket(bridge, stream)
    else:
        _files(bridge, stream, writer)
    return bridge


async def bridge_async(stream: Any, writer: Optional[Any]) -> _native.Bridge:
    """The bridge for ``AsyncHost.connect``'s arguments: a socket and asyncio streams through
    tasks on the running loop, binary file objects through threads."""
    if writer is None:
        if not isinstance(stream, socket.socket):
            raise InvalidArgumentError(
                f"connect(sock) takes a socket.socket (or connect(reader, writer)), got {type(stream).__name__}"
            )
        own: Optional[socket.socket] = stream.dup()
        stream, writer = await asyncio.open_connection(sock=own, limit=CHUNK)
    else:
        own = None
    if not isinstance(stream, asyncio.StreamReader):
        return bridge_sync(stream, writer)
    bridge = _native.Bridge()
    reader: asyncio.StreamReader = stream
    out: asyncio.StreamWriter = writer

    async def inbound() -> None:
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                await bridge.feed(data, aio=True)
        except Exception:  # noqa: BLE001 - a failing stream is a peer gone
            pass
        finally:
            try:
                await bridge.feed_eof(aio=True)
            except Exception:  # noqa: BLE001
                pass

    async def outbound() -> None:
        try:
            while True:
                data = await bridge.drain(CHUNK, aio=True)
                if not data:
                    break
                out.write(data)
                await out.drain()
        except Exception:  # noqa: BLE001
            pass
        finally:
            try:
                await bridge.feed_eof(aio=True)
            except Exception:  # noqa: BLE001
                pass
            # The peer learns at once (a FIN, even while another descriptor of the connection,
            # e.g. the caller's socket, stays open), then our side is closed.
            if own is not None:
                mine = own
                _quiet(lambda: mine.shutdown(socket.SHUT_RDWR))
            elif out.can_write_eof():
                _quiet(out.write_eof)
            out.close()

    for coro in (inbound(), outbound()):
        task = asyncio.ensure_future(coro)
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)
    return bridge

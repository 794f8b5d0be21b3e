"""The event streams: ``EventStream`` (``for``) and ``AsyncEventStream`` (``async for``).

Written by hand, both: the sync stream iterates the native subscription itself, the asyncio one
takes batches into a buffer and shields its pull so that a caller who stops waiting loses no
event. ``_host.py`` is generated from ``_aio.py`` (scripts/unasync.py), which names
``AsyncEventStream``; the generated module names ``EventStream`` in its place.
"""

from __future__ import annotations

import asyncio
import collections
from typing import AsyncIterator, Callable, Deque, Iterator, List, Optional

from . import _native
from ._base import StreamBase
from ._schema import AnyEvent

__all__ = ["EventStream", "AsyncEventStream"]


class EventStream(StreamBase):
    """A reader of the host's events: ``for ev in stream`` (or ``stream.next(timeout)``).
    Where it starts and when it ends is the core's one rule (docs/EVENTS.md, "Readers"): a
    session's stream starts at the oldest event of the session the host holds (``missed`` counts
    what it left out) and ends after the session's last event; an agent's ends after the agent's
    last event; all end when the host closes. Pull it continuously or close it: while it is open
    and full, the host stops reading the agents (backpressure; nothing is dropped).
    """

    __slots__ = ()

    def __iter__(self) -> Iterator[AnyEvent]:
        return self._sub

    def __next__(self) -> AnyEvent:
        ev = self._sub.next(None)
        if ev is None:
            raise StopIteration
        return ev

    def next(self, timeout: Optional[float] = None) -> Optional[AnyEvent]:
        """The next event, ``None`` if the stream ended; raises ``acp_host.TimeoutError``."""
        return self._sub.next(timeout)

    def batches(self, limit: int = 1024) -> Iterator[List[AnyEvent]]:
        """Iterate in lists of up to ``limit`` ready events (the fastest way to consume)."""
        while True:
            batch = self._sub.next_batch(limit)
            if batch is None:
                return
            yield batch

    def collect_until(self, stop: Callable[[AnyEvent], bool], timeout: Optional[float] = None) -> List[AnyEvent]:
        """Events up to and including the first one ``stop`` accepts (or the end of the stream).

        ``timeout`` bounds the wait for each event (``acp_host.TimeoutError``).
        """
        out: List[AnyEvent] = []
        while True:
            ev = self._sub.next(timeout)
            if ev is None:
                return out
            out.append(ev)
            if stop(ev):
                return out

    def close(self) -> None:
        """Stop receiving (the host no longer waits for this stream)."""
        self._sub.close()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncEventStream(StreamBase):
    """``async for ev in stream``: a reader of the host's events (see ``EventStream``)."""

    __slots__ = ("_buf", "_limit", "_ready_runs", "_pending")

    #: Batches taken without suspending before the stream yields to the loop anyway.
    _MAX_READY_RUNS = 8

    def __init__(self, sub: _native.Subscription, limit: int = 1024) -> None:
        super().__init__(sub)
        self._buf: Deque[AnyEvent] = collections.deque()
        self._limit = limit
        self._ready_runs = 0
        #: The pull in flight. A caller that stops waiting (``next(timeout)``, a cancelled task)
        #: leaves it running, and the next call takes its batch: cancelling it would lose the
        #: events the host had already handed over.
        self._pending: "Optional[asyncio.Future[Optional[List[AnyEvent]]]]" = None

    async def _pull(self) -> Optional[List[AnyEvent]]:
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._sub.next_batch_async(self._limit))
        batch = await asyncio.shield(self._pending)
        self._pending = None
        return batch

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> AnyEvent:
        buf = self._buf
        if buf:
            return buf.popleft()
        if self._ready_runs < self._MAX_READY_RUNS and self._pending is None:
            # Events already waiting are taken without a round trip through the loop...
            ready = self._sub.try_next_batch(self._limit)
            if ready is None:
                raise StopAsyncIteration
            if ready:
                self._ready_runs += 1
                buf.extend(ready)
                return buf.popleft()
        # ...but every few batches (and whenever nothing is ready) the stream really awaits, so
        # other tasks (permission handlers, the prompt itself) keep running during a flood.
        self._ready_runs = 0
        batch = await self._pull()
        if batch is None:
            raise StopAsyncIteration
        buf.extend(batch)
        return buf.popleft()

    async def next(self, timeout: Optional[float] = None) -> Optional[AnyEvent]:
        """The next event, ``None`` if the stream ended; raises ``acp_host.TimeoutError``."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except StopAsyncIteration:
            return None
        except asyncio.TimeoutError:
            from ._errors import TimeoutError as AcpTimeout

            raise AcpTimeout(f"no event within {timeout} s", data=None) from None

    async def batches(self) -> AsyncIterator[List[AnyEvent]]:
        """``async for batch in stream.batches()``: lists of ready events (the fastest way)."""
        while True:
            batch = await self.next_batch()
            if batch is None:
                return
            yield batch

    async def next_batch(self) -> Optional[List[AnyEvent]]:
        """Up to ``limit`` ready events (waits for one), or ``None`` at the end."""
        if self._buf:
            out = list(self._buf)
            self._buf.clear()
            return out
        return await self._pull()

    async def collect_until(self, stop: Callable[[AnyEvent], bool], timeout: Optional[float] = None) -> List[AnyEvent]:
        """Events up to and including the first one ``stop`` accepts (or the end)."""
        out: List[AnyEvent] = []
        while True:
            ev = await self.next(timeout)
            if ev is None:
                return out
            out.append(ev)
            if stop(ev):
                return out

    def close(self) -> None:
        self._buf.clear()
        self._sub.close()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

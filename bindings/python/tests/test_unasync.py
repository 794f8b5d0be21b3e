"""The sync API is generated from the asyncio API (scripts/unasync.py, the httpcore model): the
committed ``_host.py`` is what the script writes from ``_aio.py``, the two keep one signature per
call, and the asyncio calls take ``timeout=`` as the sync ones do."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import time
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import acp_host
from conftest import T, mock
from test_twins import TWINS

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "unasync.py"
_spec = importlib.util.spec_from_file_location("unasync", SCRIPT)
assert _spec is not None and _spec.loader is not None
unasync: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(unasync)

#: Every twin but the event streams (hand-written in _streams.py).
GENERATED = [(sync, aio) for sync, aio in TWINS if sync is not acp_host.EventStream]
#: Keywords only the blocking call has (a ``# unasync: sync-only`` line in _aio.py): how long a
#: Ctrl-C waits for the cancelled turn; a cancelled task does not wait.
SYNC_ONLY = {("Session", "prompt"): {"cancel_grace"}}
#: Calls only the asyncio classes have (``# unasync: async-only``): ``aclose`` aliases.
ASYNC_ONLY = {"aclose"}


def test_host_py_is_what_unasync_writes_from_aio_py() -> None:
    source = unasync.SOURCE.read_text(encoding="utf-8")
    assert unasync.OUT.read_text(encoding="utf-8") == unasync.generate(source), (
        f"_host.py is stale or was edited by hand: edit _aio.py, then run {unasync.REGENERATE}")
    assert unasync.main(["--check"]) == 0


def test_a_reworded_docstring_phrase_fails_the_generation() -> None:
    source = unasync.SOURCE.read_text(encoding="utf-8")
    with pytest.raises(unasync.StaleTable):
        unasync.generate(source.replace("(from another task)", "(from another coroutine)"))


def test_the_rewrite_rules() -> None:
    source = '''"""doc"""
import asyncio  # unasync: async-only


class AsyncThing(Base):
    """``async with await make() as thing:`` (see ``__aexit__``)."""

    def _bind(self) -> None:  # unasync: async-only
        pass

    async def call(self, a: int, *,
                   # unasync: sync-only: grace: float = 0,
                   timeout: float = 0) -> "AsyncThing":
        n = await self._n.call(a,
                               aio=True)
        return AsyncThing(n)

    aclose = call  # unasync: async-only

    async def __aexit__(self) -> AsyncIterator[int]:
        await self.call(1)
'''
    out = unasync.generate(source, phrases=[("``__aexit__``", "``__exit__``")])
    assert out.startswith(unasync.HEADER + unasync.SYNC_DOC + "\n")
    assert out[len(unasync.HEADER + unasync.SYNC_DOC):] == '''


class Thing(Base):
    """``with make() as thing:`` (see ``__exit__``)."""

    def call(self, a: int, *,
             grace: float = 0,
             timeout: float = 0) -> "Thing":
        n = self._n.call(a,
                         aio=False)
        return Thing(n)

    def __exit__(self) -> Iterator[int]:
        self.call(1)
'''


def params(fn: Any) -> List[Tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_every_call_has_one_signature_in_both_apis() -> None:
    for sync, aio in GENERATED:
        calls = [n for n, m in vars(aio).items() if inspect.iscoroutinefunction(m) and n not in ASYNC_ONLY]
        assert calls, aio.__name__
        for name in calls:
            twin = vars(sync)[unasync._rewrite(name)]  # __aenter__ -> __enter__
            extra = SYNC_ONLY.get((sync.__name__, name), set())
            blocking = [p for p in params(twin) if p[0] not in extra]
            assert blocking == params(vars(aio)[name]), f"{sync.__name__}.{name}"
            assert not inspect.iscoroutinefunction(twin)
        assert set(vars(sync)) - set(vars(aio)) <= {"__enter__", "__exit__"}, sync.__name__


def test_async_calls_take_timeout_like_the_sync_ones(tmp_path: Path) -> None:
    hangs = tmp_path / "new-hangs.json"
    hangs.write_text('{"description": "session/new is never answered", "newSession": {"before": [{"hang": true}]}}')

    async def main() -> None:
        async with acp_host.AsyncHost(cancel_grace=0.3) as host:
            with pytest.raises(acp_host.TimeoutError) as ei:
                await host.spawn(["sleep", "30"], timeout=0.3)  # never answers initialize
            assert ei.value.data["what"] == "spawn"

            agent = await host.spawn(mock(str(hangs)))
            started = time.monotonic()
            with pytest.raises(acp_host.TimeoutError) as ei:
                await agent.new_session("/tmp", timeout=0.3)
            assert time.monotonic() - started < 2.0
            assert ei.value.data == {"what": "session/new", "afterMs": 300}
            assert isinstance((await agent.list_sessions(timeout=5))["sessions"], list)  # still answering

            session = await (await host.spawn(mock("hang"))).new_session("/tmp", timeout=T)
            started = time.monotonic()
            with pytest.raises(acp_host.TimeoutError) as ei:
                await session.prompt("go", timeout=0.4)  # cancelled, then settled within the grace
            assert 0.65 <= time.monotonic() - started < 0.4 + 0.3 + 1.0
            assert ei.value.data == {"what": "session/prompt", "afterMs": 400}

            with pytest.raises(acp_host.InvalidArgumentError):
                await session.set_mode("code", timeout=-1)

    asyncio.run(asyncio.wait_for(main(), T))

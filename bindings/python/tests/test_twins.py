"""The sync classes and their asyncio twins are written once: what does not wait for the agent
(properties, lookups, ``__repr__``, ``Host``'s options) lives in ``acp_host/_base.py``; each twin
defines only its calls, written as awaitables in ``_aio.py`` and generated from there into
``_host.py`` (tests/test_unasync.py checks the generated file); the event streams are written by
hand in ``_streams.py``."""

from __future__ import annotations

import inspect
from typing import Any, Set

import acp_host

TWINS = [
    (acp_host.Host, acp_host.AsyncHost),
    (acp_host.Agent, acp_host.AsyncAgent),
    (acp_host.Session, acp_host.AsyncSession),
    (acp_host.Pool, acp_host.AsyncPool),
    (acp_host.PooledSession, acp_host.AsyncPooledSession),
    (acp_host.EventStream, acp_host.AsyncEventStream),
]
#: Not awaitable on either side and defined in both, because they differ: ``events`` returns the
#: twin's stream class and ``pool`` binds the loop in ``AsyncHost`` (both generated in
#: ``_host.py``); the async stream's ``close`` also drops its buffer.
HAND_WRITTEN = {"events", "pool", "close"}
#: Class plumbing: the twin's related classes (``_Agent``, ``_Session``) and what Python adds.
PLUMBING = {"_Agent", "_Session", "__doc__", "__module__", "__orig_bases__", "__parameters__", "__slots__"}


def public(cls: type) -> Set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def is_async(member: Any) -> bool:
    return inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)


def test_twins_have_the_same_public_names() -> None:
    for sync, aio in TWINS:
        assert public(sync) <= public(aio), sync.__name__
        assert public(aio) - public(sync) <= {"aclose", "next_batch"}, aio.__name__


def test_only_calls_are_written_in_both_twins() -> None:
    for sync, aio in TWINS:
        both = (set(vars(sync)) & set(vars(aio))) - PLUMBING - HAND_WRITTEN
        mirrored = sorted(n for n in both if not is_async(vars(aio)[n]))
        assert not mirrored, f"{sync.__name__} and {aio.__name__} both define {mirrored}: move them to _base.py"


def test_shared_members_keep_each_twins_types() -> None:
    assert inspect.signature(acp_host.Host) == inspect.signature(acp_host.AsyncHost)
    assert acp_host.Host.__init__ is acp_host.AsyncHost.__init__
    assert acp_host.Agent._Session is acp_host.Session
    assert acp_host.AsyncAgent._Session is acp_host.AsyncSession
    assert acp_host.AsyncPooledSession._Agent is acp_host.AsyncAgent
    assert acp_host.AsyncHost._Agent is acp_host.AsyncAgent

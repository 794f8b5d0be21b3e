"""Launch agents listed in the ACP registry (docs/REGISTRY.md).

A ``Registry`` is read from a document *you* supply (a file or text: acp_host never fetches the
registry). ``resolve`` turns an agent id into an ``AgentSpec`` for ``Host.spawn`` (``npx``,
``uvx``, or an installed binary) and never downloads anything; ``install`` installs a binary
distribution, only when asked, and only with a sha256: from a ``file://`` URL or a local path, or
from any other URL through a ``fetch`` callable you supply (your HTTP client; acp_host itself
never opens a connection)::

    from acp_host.registry import Registry

    registry = Registry.from_file("registry.json")
    resolved = registry.resolve("my-agent", cache_dir=cache)
    if resolved.needs_install:
        registry.install("my-agent", cache)          # blocking
        resolved = registry.resolve("my-agent", cache_dir=cache)
    with acp_host.Host() as host:
        agent = host.spawn(resolved.spec, cwd=project)

Parsing, resolution and installs are the Rust core's (``acp_host::registry``): the same rules and
errors in every face. A document that cannot be used raises ``ConfigError`` with
``data["path"]`` naming the field (``agents[3].distribution.npx.package``); an unknown id
``NotFoundError``; a missing file ``IoError``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Literal, Optional, Sequence, Union

from . import _native
from ._common import PathLike
from ._errors import InvalidArgumentError
from ._types import AgentSpec, Progress

__all__ = [
    "Registry",
    "RegistryAgent",
    "ResolvedAgent",
    "InstalledAgent",
    "AgentSpec",
    "DistributionKind",
    "Fetch",
    "Progress",
]

#: A distribution of an agent, as the registry names it.
DistributionKind = Union[Literal["binary"], Literal["npx"], Literal["uvx"]]

#: ``Registry.install``'s ``fetch=``: given an archive URL, its bytes, all at once or as an
#: iterable of chunks (streamed to disk as they come). Synchronous; called on the install thread.
Fetch = Callable[[str], Union[bytes, bytearray, memoryview, Iterable[Union[bytes, bytearray, memoryview]]]]


@dataclasses.dataclass(frozen=True)
class RegistryAgent:
    """One agent entry of the registry (fields the format adds later are not kept)."""

    id: str
    name: str
    version: str
    description: str
    #: ``{"npx": {...}, "uvx": {...}, "binary": {"linux-x86_64": {...}, ...}}`` as in the document
    distribution: Dict[str, Any]
    repository: Optional[str] = None
    website: Optional[str] = None
    authors: List[str] = dataclasses.field(default_factory=list)
    license: Optional[str] = None
    icon: Optional[str] = None

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "RegistryAgent":
        return cls(
            id=d["id"],
            name=d["name"],
            version=d["version"],
            description=d["description"],
            distribution=d.get("distribution", {}),
            repository=d.get("repository"),
            website=d.get("website"),
            authors=list(d.get("authors", [])),
            license=d.get("license"),
            icon=d.get("icon"),
        )


@dataclasses.dataclass(frozen=True)
class ResolvedAgent:
    """What ``Registry.resolve`` chose: pass ``spec`` to ``Host.spawn`` / ``AsyncHost.spawn``."""

    agent_id: str
    agent_version: str
    kind: DistributionKind
    #: what to spawn; for a binary that ``needs_install``, it names the file the install creates
    spec: AgentSpec
    #: for a binary: the platform chosen (``linux-x86_64``, ...)
    platform: Optional[str]
    #: for a binary: ``<cache_dir>/<id>/<version>/<platform>``
    install_dir: Optional[str]
    #: a binary that is not installed yet: ``Registry.install`` it first (nothing was downloaded)
    needs_install: bool


@dataclasses.dataclass(frozen=True)
class InstalledAgent:
    """The result of ``Registry.install``."""

    #: ``<cache_dir>/<id>/<version>/<platform>``
    dir: str
    #: the entry's ``cmd`` inside it
    cmd: str
    #: it was installed already: nothing was fetched
    already_installed: bool


def _path(p: PathLike) -> str:
    return os.fspath(p)


class Registry:
    """A parsed ACP registry (``{"version", "agents": [...]}``) or one agent manifest
    (``agent.json``, as a registry of one). Build it with ``from_file`` or ``from_json``."""

    __slots__ = ("_n",)

    def __init__(self, native: _native.NativeRegistry) -> None:
        self._n = native

    @classmethod
    def from_json(cls, text: str) -> "Registry":
        """Parse a registry document or one agent manifest (``ConfigError`` with
        ``data["path"]`` when it cannot be used)."""
        return cls(_native.NativeRegistry.from_json(text))

    @classmethod
    def from_file(cls, path: PathLike) -> "Registry":
        """Read and parse a registry file (at most 16 MiB; ``IoError`` when it cannot be read)."""
        return cls(_native.NativeRegistry.from_file(_path(path)))

    @property
    def version(self) -> Optional[str]:
        """The document's ``version``, when it has one."""
        return self._n.version

    def agents(self) -> List[RegistryAgent]:
        """Every agent, in document order."""
        return [RegistryAgent._from_json(d) for d in json.loads(self._n.agents_json())]

    def agent(self, agent_id: str) -> RegistryAgent:
        """The entry of ``agent_id`` (``NotFoundError`` when the registry does not list it)."""
        return RegistryAgent._from_json(json.loads(self._n.agent_json(agent_id)))

    def resolve(
        self,
        agent_id: str,
        *,
        prefer: Optional[Union[DistributionKind, Sequence[DistributionKind]]] = None,
        platform: Optional[str] = None,
        cache_dir: Optional[PathLike] = None,
        npx_command: Optional[str] = None,
        uvx_command: Optional[str] = None,
    ) -> ResolvedAgent:
        """Choose a distribution of ``agent_id`` and build its spec. Never downloads or installs.

        The default order: a binary for ``platform`` (default: this machine's) that is already
        installed under ``cache_dir``, else ``npx``, else ``uvx``, else a binary that still needs
        installing (``needs_install``). ``prefer`` gives an order of its own (a binary listed there
        is chosen whether installed or not). ``npx_command`` / ``uvx_command`` replace the program
        (``npx.cmd`` on Windows, a pinned path). Nothing usable raises ``NotFoundError``; a binary
        without ``cache_dir`` ``InvalidArgumentError``.
        """
        kinds: Optional[List[str]]
        if prefer is None:
            kinds = None
        elif isinstance(prefer, str):
            kinds = [prefer]
        else:
            kinds = [str(k) for k in prefer]
        d = json.loads(self._n.resolve(
            agent_id, prefer=kinds, platform=platform,
            cache_dir=None if cache_dir is None else os.path.abspath(_path(cache_dir)),
            npx_command=npx_command, uvx_command=uvx_command,
        ))
        env = {k: v for k, v in d["env"].items() if v is not None}
        return ResolvedAgent(
            agent_id=d["agentId"],
            agent_version=d["agentVersion"],
            kind=d["kind"],
            spec=AgentSpec(d["command"], tuple(d["args"]), env),
            platform=d["platform"],
            install_dir=d["installDir"],
            needs_install=d["needsInstall"],
        )

    def install(
        self,
        agent_id: str,
        cache_dir: PathLike,
        *,
        platform: Optional[str] = None,
        fetch: Optional[Fetch] = None,
        progress: Optional[Callable[[Progress], None]] = None,
    ) -> InstalledAgent:
        """Install ``agent_id``'s binary for ``platform`` (default: this machine's) under
        ``cache_dir``: the archive's sha256 is checked, it is extracted safely (no links, nothing
        outside the install directory, bounded) and renamed into place. Already installed: nothing
        is fetched.

        Blocks (the GIL is released); from asyncio, ``await asyncio.to_thread(registry.install,
        ...)`` (there is no async variant). Archives at ``file://`` URLs and local paths are read
        directly. Any other URL (``https://...``) needs ``fetch``: a synchronous callable
        ``fetch(url)`` that downloads it with your own HTTP client and returns ``bytes``,
        ``bytearray`` or ``memoryview``, or an iterable of them (streamed in chunks); it is called
        on the install thread, the GIL taken for the call and for each chunk. Without ``fetch``,
        such a URL raises ``UnsupportedError``. For example::

            def fetch(url):
                with urllib.request.urlopen(url, timeout=60) as r:
                    while chunk := r.read(1 << 16):
                        yield chunk

            registry.install("my-agent", cache, fetch=fetch)

        An exception raised by ``fetch`` (or while iterating what it returned) raises ``IoError``
        naming the URL and the exception (it is the ``__cause__``); a return value or chunk of
        another type raises ``InvalidArgumentError`` naming the type (an ``async def`` is refused
        so). An entry without ``sha256``, a digest mismatch (whatever ``fetch`` returned), an
        archive over the size limit (1 GiB) or a refused archive raise ``ConfigError``
        (``data["path"]`` names the entry's field). In every failure nothing is installed.

        ``progress``: called with a ``Progress`` for the download (``phase="download"``: ``started``
        with the URL as ``message``, then ``done`` with the archive's size in ``bytes``, or
        ``failed`` with why) and the extraction (``extract``: ``started``, ``done`` or
        ``failed``), on the install thread, in order; nothing when the binary was installed
        already. What it raises is ignored (the install goes on).
        """
        report: Optional[Callable[[str], None]] = None
        if progress is not None:
            if not callable(progress):
                raise InvalidArgumentError(
                    f"progress must be a callable (Progress) -> None, not `{type(progress).__name__}`",
                    code="invalid_argument")
            on_progress = progress

            def report(text: str) -> None:
                on_progress(Progress.from_dict(json.loads(text)))

        d = json.loads(self._n.install(agent_id, os.path.abspath(_path(cache_dir)), platform=platform,
                                       fetch=fetch, progress=report))
        return InstalledAgent(dir=d["dir"], cmd=d["cmd"], already_installed=d["alreadyInstalled"])

    def __len__(self) -> int:
        return len(self._n)

    def __repr__(self) -> str:
        return f"Registry(version={self.version!r}, agents={len(self)})"

"""Extracts the fenced code blocks of the docs a user reads, with language, location and marker.

A marker is an HTML comment on the line right before the fence (blank lines between allowed):
  <!-- doc-test: output -->            the block is what a command prints; shown, not run
  <!-- doc-test: skip REASON -->       not run; REASON is printed on every run
  <!-- doc-test: syntax REASON -->     (sh) syntax-checked only; REASON printed
  <!-- doc-test: as LANG -->           run as LANG (for a block whose fence has no language)
"""
from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<kind>[a-z-]+)\s*(?P<arg>.*?)\s*-->\s*$")


@dataclasses.dataclass
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None  # kind of the marker, if any
    marker_arg: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def extract(path: Path, display: str | None = None) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        lang = m["info"].strip().split()[0] if m["info"].strip() else ""
        marker, arg = None, ""
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            mm = MARKER.match(lines[j])
            if mm:
                marker, arg = mm["kind"], mm["arg"]
        body: list[str] = []
        k = i + 1
        while k < len(lines):
            c = lines[k]
            if c.strip().startswith(fence[0] * len(fence)) and not c.strip().strip(fence[0]):
                break
            body.append(c[indent:] if c[:indent].strip() == "" else c)
            k += 1
        else:
            raise SystemExit(f"{display or path}:{i + 1}: unterminated code fence")
        blocks.append(Block(display or str(path), i + 1, lang, "\n".join(body) + "\n", marker, arg))
        i = k + 1
    return blocks


def known_failures(root: Path, check: str) -> dict[str, str]:
    """tests/docs/known-failures.txt: PATH -> why its failures of CHECK are only reported."""
    known = {}
    for line in (root / "tests/docs/known-failures.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, kind, why = line.split(None, 2)
            if kind == check:
                known[path] = why.strip()
    return known


if __name__ == "__main__":
    for p in sys.argv[1:]:
        for b in extract(Path(p)):
            print(f"===== {b.where} lang={b.lang!r} marker={b.marker} {b.marker_arg}")
            print(b.code, end="")

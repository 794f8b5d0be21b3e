"""Facts the docs must state the way the code behaves (issue 26's doc findings), checked over the
docs of tests/docs/files.txt. Run by scripts/test-docs.

- Restart attempts are counted since the agent was last healthy (`resetAfterMs`), not as
  consecutive failures (core/src/orchestration/supervisor.rs): no doc says "consecutive".
- Every face README names `events_stalled` (the event queue's stall, docs/ERRORS.md).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import known_failures  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FACE_READMES = ["bindings/node/README.md", "bindings/python/README.md", "bindings/uniffi/README.md",
                "docs/FFI.md"]
STALLED = re.compile(r"events_stalled|EventsStalled|ACPH_EVENTS_STALLED|ACPH_STATUS_EVENTS_STALLED", re.I)


def check(files: list[str]) -> list[str]:
    found = []
    for rel in files:
        path = ROOT / rel
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for i, line in enumerate(text.splitlines()):
            if re.search(r"\bconsecutive\b", line, re.I) and re.search(r"attempt|restart|failure", line, re.I):
                found.append(f"{rel}:{i + 1}: restart attempts are counted since the agent was last healthy "
                             "(resetAfterMs), not as consecutive failures")
        if rel in FACE_READMES and not STALLED.search(text):
            found.append(f"{rel}: does not name events_stalled")
    return found


def main() -> int:
    args = sys.argv[1:]
    listed = [l.strip() for l in (ROOT / "tests/docs/files.txt").read_text().splitlines()
              if l.strip() and not l.startswith("#")]
    problems = check(args or listed)
    known = {} if args else known_failures(ROOT, "facts")
    for path, why in known.items():
        hits = [p for p in problems if p.startswith(f"{path}:")]
        for p in hits:
            print(f"facts: KNOWN ({why}) {p}")
        if not hits:
            problems.append(f"{path}: listed for facts in tests/docs/known-failures.txt but has none: remove it")
        problems = [p for p in problems if p not in hits]
    for p in problems:
        print(f"facts: {p}", file=sys.stderr)
    if not problems:
        print("facts: restart counting and events_stalled stated as the code behaves (but the known ones)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

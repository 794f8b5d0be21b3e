"""The harness's own test: every block of tests/docs/fixtures/broken.md (a broken block of each
language, a block without a marker, a skip without a reason) must fail, and a correct file must
pass. Run by scripts/test-docs before the docs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from blocks import extract  # noqa: E402


def run(files: list[str], only: str = "") -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(HERE / "run.py"), *(["--only", only] if only else []), *files]
    return subprocess.run(args, cwd=ROOT, text=True, capture_output=True, timeout=900)


def main() -> int:
    problems = []
    out = ""
    failed: set[str] = set()
    # A Rust block that does not compile is its own file: it fails every Rust block with it.
    for fixture in ("tests/docs/fixtures/broken.md", "tests/docs/fixtures/broken_compile.md"):
        p = run([fixture])
        out += p.stdout + p.stderr
        failed |= set(re.findall(r"^test-docs: FAIL (\S+)$", p.stderr, re.M))
        if p.returncode == 0:
            problems.append(f"run.py passed {fixture}")
        for b in extract(ROOT / fixture, fixture):
            if b.lang == "kotlin" and "no Kotlin compiler from Maven" in p.stdout:
                print(f"test_harness: {b.where} not compiled: no Kotlin compiler (scripts/test-kotlin first)")
                continue
            if "str | None" in b.code and not os.environ.get("ACP_DOC_PY39"):
                print(f"test_harness: {b.where} fails on Python 3.9 only, and there is none (ACP_DOC_PY39)")
                continue
            if b.where not in failed:
                problems.append(f"{b.where} [{b.lang or '-'}] did not fail")
    good = HERE / "fixtures" / "good.md"
    q = run([str(good.relative_to(ROOT))])
    if q.returncode != 0:
        problems.append("run.py failed a file of correct blocks:\n" + q.stdout + q.stderr)
    # The size check: a hand-written package size in a fixture is found; the correct file has none.
    sys.argv = [sys.argv[0]]
    import sizes
    if not sizes.check(["tests/docs/fixtures/broken.md"]):
        problems.append("sizes.py found no hand-written size in tests/docs/fixtures/broken.md")
    if sizes.check(["tests/docs/fixtures/good.md"]):
        problems.append("sizes.py found a size in tests/docs/fixtures/good.md")
    import facts
    if not facts.check(["tests/docs/fixtures/broken.md"]):
        problems.append("facts.py found no wrong restart wording in tests/docs/fixtures/broken.md")
    if facts.check(["tests/docs/fixtures/good.md"]):
        problems.append("facts.py found a wrong fact in tests/docs/fixtures/good.md")
    for line in problems:
        print(f"test_harness: {line}", file=sys.stderr)
    if problems:
        print(out, file=sys.stderr)
        return 1
    print(f"test_harness: all {len(failed)} broken blocks failed; the correct ones passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

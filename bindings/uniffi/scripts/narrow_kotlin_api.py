#!/usr/bin/env python3
"""Make uniffi's plumbing in the generated Kotlin `internal`, so the public top-level declarations
of dev.acphost are the API (scripts/gen-uniffi runs this on acp_host.kt before comparing or
copying it).

    python3 bindings/uniffi/scripts/narrow_kotlin_api.py FILE     # rewrite FILE in place
    python3 bindings/uniffi/scripts/narrow_kotlin_api.py --count FILE   # print the public count

Why a rewrite: uniffi 0.32 has no visibility option for Kotlin (mozilla/uniffi-rs#2030, #1425);
its converters are public only so that other crates' bindings can use them (external types), which
this library has none of. Each rule names the lines it changes and how many it expects at least
one of, so a new uniffi template that renames them fails here instead of silently leaving the
plumbing public. Kept public: `Disposable`, `use`, `NoHandle` and the `NoHandle` constructors (how
a test makes a fake of an object), `InternalException` (it can reach callers).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import List, Tuple

# (pattern, replacement, what): every pattern must match at least once.
RULES: List[Tuple[str, str, str]] = [
    (r"^public object (FfiConverter\w*)", r"internal object \1", "converter objects"),
    (r"^public interface (FfiConverter\w*)", r"internal interface \1", "converter interfaces"),
    (r"^public abstract class (FfiConverterCallbackInterface)", r"internal abstract class \1",
     "the callback converter base"),
    (r"^open class (RustBuffer)\b", r"internal open class \1", "RustBuffer"),
    (r"^interface (UniffiRustCallStatusErrorHandler)\b", r"internal interface \1", "the error handler interface"),
    (r"^object (UniffiNullRustCallStatusErrorHandler)\b", r"internal object \1", "the null error handler"),
    (r"^(    )companion object (ErrorHandler)\b", r"\1internal companion object \2",
     "the exceptions' error handlers"),
    (r"^public fun (uniffiEnsureInitialized|uniffiForeignFutureHandleCount)\b", r"internal fun \1",
     "uniffi's functions"),
    (r"^object (UniffiWithHandle)\b", r"internal object \1", "the handle marker"),
    (r"^(    )constructor\(withHandle: UniffiWithHandle", r"\1internal constructor(withHandle: UniffiWithHandle",
     "the handle constructors"),
    (r"^interface (UniffiCleaner)\b", r"internal interface \1", "the cleaner"),
    (r"^(    )protected val cleanable: UniffiCleaner", r"\1internal val cleanable: UniffiCleaner",
     "the objects' cleaner handles"),
    (r"^open class (\w+Impl): Disposable", r"internal open class \1: Disposable",
     "the proxies of Rust-implemented foreign traits"),
]

DECL = re.compile(r"^((?:public|open|sealed|data|enum|abstract|annotation|inline|value|suspend|operator|infix|const)\s+)*"
                  r"(class|object|interface|fun|val|var|typealias)\b")


def narrow(text: str) -> str:
    lines = text.split("\n")
    for pattern, repl, what in RULES:
        rx = re.compile(pattern)
        hits = 0
        for i, ln in enumerate(lines):
            new = rx.sub(repl, ln)
            if new != ln:
                lines[i] = new
                hits += 1
        if hits == 0:
            raise SystemExit(f"narrow_kotlin_api: no match for {what} ({pattern}): the uniffi template changed")
    return "\n".join(lines)


def public_declarations(text: str) -> List[str]:
    """The top-level declarations without `private`/`internal` (column 0, not a comment)."""
    out = []
    for ln in text.split("\n"):
        if ln[:1] in ("", " ", "\t", "}", "/", "@", "*") or ln.startswith(("private", "internal")):
            continue
        if DECL.match(ln):
            out.append(ln)
    return out


def main(argv: List[str]) -> int:
    if len(argv) == 2 and argv[0] == "--count":
        print(len(public_declarations(Path(argv[1]).read_text(encoding="utf-8"))))
        return 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    path.write_text(narrow(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

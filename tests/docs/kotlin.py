"""The docs' Kotlin blocks, compiled (not run) against the Kotlin face's sources with the Kotlin
compiler Maven fetched for bindings/uniffi/kotlin (~/.m2; scripts/test-kotlin runs Maven first).
Each block is the body of a suspend function in one file, after tests/docs/Prelude.kt (the names
the docs use: `host`, `cache`, `project`, `scope`, `render`, `myHttpClient`); its imports go to the
top. A compile error is reported on the block whose lines it names."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

M2 = Path.home() / ".m2/repository"


def _jar(group: str, artifact: str, version: str) -> Path:
    return M2 / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.jar"


def _pom_versions(root: Path) -> dict[str, str]:
    pom = (root / "bindings/uniffi/kotlin/pom.xml").read_text()
    return dict(re.findall(r"<(kotlin\.version|coroutines\.version|jna\.version|serialization\.version)>([^<]+)<", pom))


def _jars(root: Path) -> tuple[list[Path], list[Path]]:
    """(the classpath the blocks compile against, the compiler's own classpath), from ~/.m2."""
    v = _pom_versions(root)
    kv, cv, jv, sv = v["kotlin.version"], v["coroutines.version"], v["jna.version"], v["serialization.version"]
    stdlib = _jar("org.jetbrains.kotlin", "kotlin-stdlib", kv)
    libs = [stdlib, _jar("org.jetbrains.kotlinx", "kotlinx-coroutines-core-jvm", cv), _jar("net.java.dev.jna", "jna", jv),
            # The typed event payloads (dev.acphost.payloads) decode with kotlinx.serialization's JSON tree.
            _jar("org.jetbrains.kotlinx", "kotlinx-serialization-json-jvm", sv),
            _jar("org.jetbrains.kotlinx", "kotlinx-serialization-core-jvm", sv)]
    compiler = [_jar("org.jetbrains.kotlin", "kotlin-compiler-embeddable", kv), stdlib,
                _jar("org.jetbrains.kotlin", "kotlin-script-runtime", kv),
                _jar("org.jetbrains.kotlin", "kotlin-daemon-embeddable", kv),
                _jar("org.jetbrains", "annotations", "13.0"), libs[1]]
    reflect = sorted((M2 / "org/jetbrains/kotlin/kotlin-reflect").glob("*/kotlin-reflect-*[0-9].jar"))
    compiler += reflect[-1:] if reflect else [M2 / "org/jetbrains/kotlin/kotlin-reflect/kotlin-reflect.jar"]
    return libs, compiler


def missing_jars(root: Path) -> list[str]:
    libs, compiler = _jars(root)
    return [str(j) for j in libs + compiler if not j.exists()]


def compile_blocks(root: Path, work: Path, blocks: list) -> dict[str, str | None]:
    """where -> None (compiled) or the compiler's errors for that block. Raises RuntimeError when
    the compiler is not there."""
    libs, compiler = _jars(root)
    missing = missing_jars(root)
    if missing:
        raise RuntimeError("no Kotlin compiler from Maven (run scripts/test-kotlin once): " + ", ".join(missing))
    imports: set[str] = set()
    body: list[str] = []
    ranges: list[tuple[int, int, str]] = []
    prelude = (root / "tests/docs/Prelude.kt").read_text().splitlines()
    header = [l for l in prelude if l.startswith(("package ", "import "))]
    rest = [l for l in prelude if not l.startswith(("package ", "import "))]
    for i, b in enumerate(blocks):
        lines = b.code.splitlines()
        imports |= {l for l in lines if l.startswith("import ")}
        code = [l for l in lines if not l.startswith("import ")]
        body.append(f"@Suppress(\"UNUSED_VARIABLE\", \"UNUSED_EXPRESSION\")\nsuspend fun block{i}() {{")
        ranges.append((0, 0, b.where))
        start = len(body)
        body.extend(code)
        ranges[-1] = (start, len(body), b.where)
        body.append("}")
    top = header + sorted(imports - set(header)) + rest
    offset = len(top) + 1
    src = work / "DocBlocks.kt"
    src.write_text("\n".join(top + ["\n".join(body).replace("\n@Suppress", "\n@Suppress")]) + "\n")
    sources = [str(p) for p in (root / "bindings/uniffi/kotlin/src/main/kotlin").rglob("*.kt")]
    p = subprocess.run(["java", "-cp", ":".join(map(str, compiler)), "org.jetbrains.kotlin.cli.jvm.K2JVMCompiler",
                        "-no-stdlib", "-no-reflect", "-nowarn", "-cp", ":".join(map(str, libs)),
                        "-d", str(work / "classes"), str(src), *sources],
                       text=True, capture_output=True, timeout=600)
    result: dict[str, str | None] = {b.where: None for b in blocks}
    if p.returncode == 0:
        return result
    unplaced = []
    for m in re.finditer(r"^(\S*DocBlocks\.kt):(\d+):\d+: error: (.*)$", p.stderr, re.M):
        line = int(m.group(2)) - offset
        for s, e, where in ranges:
            if s <= line < e:
                result[where] = ((result[where] or "") + f"\n    {where.split(':')[0]}:"
                                 f"{int(where.split(':')[1]) + 1 + line - s}: {m.group(3)}").lstrip("\n")
                break
        else:
            unplaced.append(m.group(0))
    if unplaced or all(v is None for v in result.values()):
        msg = "\n".join(unplaced) or p.stderr[-2000:]
        for w in result:
            result[w] = result[w] or f"the Kotlin blocks do not compile:\n{msg}"
    return result


if __name__ == "__main__":
    # `kotlin.py --missing`: the jars Maven has not fetched yet, one a line; exits 1 while any is
    # missing (scripts/test starts the docs' blocks once they are all there).
    import sys
    if sys.argv[1:] != ["--missing"]:
        sys.exit("usage: kotlin.py --missing")
    gone = missing_jars(Path(__file__).resolve().parents[2])
    print("\n".join(gone))
    sys.exit(1 if gone else 0)

#!/usr/bin/env python3
"""Runs the libtest binaries `cargo test --no-run --message-format=json` built, as `cargo test`
would run them (cwd and CARGO_MANIFEST_DIR of their package), a few at a time, each one's output
printed whole when it ends, then one line per binary and the totals; exits 1 if any failed.

Why not `cargo test`: it holds cargo's lock on target/ until the last test ends, and scripts/test
runs the faces beside the core's tests; their builds (napi's, maturin's, `cargo install`) would
wait for every core test. Usage: run-test-binaries.py ARTIFACTS.json [JOBS]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path


def binaries(artifacts: Path) -> list[tuple[str, Path, Path]]:
    seen: dict[str, tuple[str, Path, Path]] = {}
    for line in artifacts.read_text().splitlines():
        if not line.startswith("{"):
            continue
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("profile", {}).get("test"):
            continue
        exe = msg.get("executable")
        if not exe:
            continue
        manifest = Path(msg["manifest_path"])
        label = f"{manifest.parent.name}: {msg['target']['kind'][0]} {msg['target']['name']}"
        seen[exe] = (label, Path(exe), manifest.parent)
    return list(seen.values())


def run(item: tuple[str, Path, Path]) -> tuple[str, int, str, float]:
    label, exe, pkg = item
    deps = exe.parent  # target/debug/deps: cargo puts it and target/debug on the library path too
    path = os.pathsep.join(filter(None, [str(deps), str(deps.parent), os.environ.get("LD_LIBRARY_PATH", "")]))
    env = dict(os.environ, CARGO_MANIFEST_DIR=str(pkg), CARGO=shutil.which("cargo") or "cargo",
               LD_LIBRARY_PATH=path)
    # libtest runs as many tests at a time as there are cores (2 here); these wait on agents,
    # timers and child processes far more than they compute. RUST_TEST_THREADS overrides.
    env.setdefault("RUST_TEST_THREADS", "8")
    t0 = time.monotonic()
    p = subprocess.run([str(exe)], cwd=pkg, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    return label, p.returncode, p.stdout, time.monotonic() - t0


def main() -> int:
    items = binaries(Path(sys.argv[1]))
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if not items:
        print("run-test-binaries: no test binary in the artifacts", file=sys.stderr)
        return 1
    totals = {"passed": 0, "failed": 0, "ignored": 0}
    rows, failed = [], []
    # The longest first (the integration binaries), so the short ones fill in beside them.
    items.sort(key=lambda i: -i[1].stat().st_size)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for done in as_completed([pool.submit(run, i) for i in items]):
            label, rc, out, secs = done.result()
            print(f"\n     Running {label}\n{out}", end="", flush=True)
            counts = {k: 0 for k in totals}
            for m in re.finditer(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", out, re.M):
                for k, v in zip(("passed", "failed", "ignored"), m.groups()):
                    counts[k] += int(v)
            for k in totals:
                totals[k] += counts[k]
            rows.append(f"  {label:60} {counts['passed']:4} passed {counts['ignored']:3} ignored  {secs:6.1f}s"
                        + ("" if rc == 0 else f"  FAILED (exit {rc})"))
            if rc != 0:
                failed.append(label)
    print("\nrun-test-binaries: per binary:")
    print("\n".join(rows))
    print(f"run-test-binaries: {len(items)} binaries, {totals['passed']} passed, {totals['failed']} failed, "
          f"{totals['ignored']} ignored")
    if failed:
        print("run-test-binaries: failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

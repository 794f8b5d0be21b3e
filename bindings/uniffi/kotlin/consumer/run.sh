#!/usr/bin/env bash
# The Kotlin face as a consumer gets it. Installs the built jar and its pom into a FRESH local
# Maven repository, builds the one-file consumer (Main.kt, depending on dev.acphost:acp-host alone)
# in a temp dir outside the repository against that repository, and runs it with plain `java -cp`,
# a clean environment and no cargo/rustc on PATH. Also checks the jar: linux-x86-64/
# libacp_host_uniffi.so inside, no other native binary.
#
# Usage: run.sh KOTLIN_PROJECT_DIR MOCK_AGENT
#   KOTLIN_PROJECT_DIR  bindings/uniffi/kotlin after `mvn package` (target/acp-host-<version>.jar;
#                       <version> is read from its pom.xml)
#   MOCK_AGENT          the acp-mock-agent binary (the consumer passes it `--scenario default`, the
#                       scenario embedded in the binary, so nothing of the repository is read)
# Environment: MVN (default `mvn`; may carry options, e.g. "mvn -o"), ACP_CONSUMER_KEEP=1 keeps the
# temp dir. Progress goes to stderr; exit 0 when every check passed.
#
# The consumer's build uses your usual local repository for plugins and third-party artifacts
# (fast when warm). So that acp-host really comes from the fresh repository, the build first
# purges dev.acphost:acp-host:<version> from that local repository (a copy `mvn install` put
# there included: Maven would otherwise reuse it) and the script removes what it downloaded there
# at exit; it also checks that the jar on the consumer's classpath is byte-identical to the one
# under test. Runs are serialized by a lock file (${TMPDIR:-/tmp}/acp-host-consumer.lock).
set -euo pipefail

log() { printf 'consumer: %s\n' "$*" >&2; }
fail() { printf 'consumer: FAIL: %s\n' "$*" >&2; exit 1; }

[ $# -eq 2 ] || { sed -n '/^# Usage/,/^# Environment/p' "$0" >&2; exit 2; }
proj=$(cd "$1" && pwd) || fail "no such directory: $1"
mock=$2
[ -x "$mock" ] || fail "not an executable: $mock"
mock=$(cd "$(dirname "$mock")" && pwd)/$(basename "$mock")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -r -a mvn <<< "${MVN:-mvn}"
# The compiler in Maven's JVM: a Kotlin daemon (Maven's default since Kotlin 2.2.20) would outlive
# the run.
mvn+=(-B -q -Dkotlin.compiler.daemon=false)
# Maven's output to stderr, without the colour resets Maven 3.8 prints even in batch mode.
mvn_q() { "${mvn[@]}" "$@" 2>&1 | sed $'s/\e\\[[0-9;]*m//g' >&2; }
start=$SECONDS

# The project's own version: the first <version> of its pom (the project's; it has no parent).
version=$(grep -m1 -o '<version>[^<]*</version>' "$proj/pom.xml" | sed 's:</*version>::g')
[ -n "$version" ] || fail "no <version> in $proj/pom.xml"
jar=$proj/target/acp-host-$version.jar
[ -f "$jar" ] || fail "$jar is missing: run \`mvn package\` in $proj first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/acp-consumer.XXXXXX")
resolved=
cleanup() {
    # What the consumer's build downloaded into the local repository (see the header).
    case $resolved in
    */dev/acphost/acp-host/"$version"/acp-host-"$version".jar) rm -rf "$(dirname "$resolved")" ;;
    esac
    [ "${ACP_CONSUMER_KEEP:-}" = 1 ] && log "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# --- The jar: the one native library, nothing else native.
lib=linux-x86-64/libacp_host_uniffi.so
unzip -Z1 "$jar" > "$tmp/entries.txt"
grep -qx "$lib" "$tmp/entries.txt" || fail "$lib is not in the jar"
others=$(grep -E '\.(so|dylib|dll|jnilib|a)$|\.so\.[0-9]' "$tmp/entries.txt" | grep -vx "$lib" || true)
[ -z "$others" ] || fail "other native binaries in the jar: $others"
unzip -q -p "$jar" "$lib" > "$tmp/lib.so"
[ "$(od -An -N4 -c "$tmp/lib.so" | tr -d ' ')" = '177ELF' ] || fail "$lib is not an ELF file"
jar_bytes=$(stat -c %s "$jar")
log "jar: $jar, $jar_bytes bytes ($(awk -v b="$jar_bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }')), $(grep -c . "$tmp/entries.txt") entries; $lib $(stat -c %s "$tmp/lib.so") bytes, the only native binary"

# --- Install into a fresh, empty local repository.
repo=$tmp/repo
mkdir "$repo"
log "installing dev.acphost:acp-host:$version into $repo"
(cd "$tmp" && mvn_q org.apache.maven.plugins:maven-install-plugin:3.1.4:install-file \
    -Dfile="$jar" -DpomFile="$proj/pom.xml" -DlocalRepositoryPath="$repo")
dir=$repo/dev/acphost/acp-host/$version
cmp -s "$jar" "$dir/acp-host-$version.jar" || fail "the installed jar differs from $jar"
cmp -s "$proj/pom.xml" "$dir/acp-host-$version.pom" || fail "the installed pom differs from $proj/pom.xml"
# Read as a remote repository, it is checked like one (checksumPolicy fail in the consumer pom).
for f in "$dir/acp-host-$version.jar" "$dir/acp-host-$version.pom"; do
    sha1sum "$f" | cut -d' ' -f1 > "$f.sha1"
done

# --- Build the consumer outside the repository.
repo_id=acp-host-under-test-${tmp##*.}
mkdir "$tmp/consumer"
cp -R "$here/src" "$tmp/consumer/"
sed -e "s|@ACP_VERSION@|$version|g" -e "s|@ACP_REPO_ID@|$repo_id|g" -e "s|@ACP_REPO_URL@|file://$repo|g" \
    "$here/pom.xml" > "$tmp/consumer/pom.xml"
! grep -q '@ACP_' "$tmp/consumer/pom.xml" || fail "unfilled placeholder in the consumer pom"
exec 9> "${TMPDIR:-/tmp}/acp-host-consumer.lock"
flock -w 600 9 || fail "another run holds ${TMPDIR:-/tmp}/acp-host-consumer.lock"
log "building the consumer in $tmp/consumer"
(cd "$tmp/consumer" && mvn_q \
    dependency:purge-local-repository -DmanualInclude="dev.acphost:acp-host:$version" -DreResolve=false \
    compile dependency:build-classpath -Dmdep.outputFile="$tmp/classpath.txt" -Dmdep.includeScope=runtime)
classpath=$(cat "$tmp/classpath.txt")
tr ':' '\n' <<< "$classpath" > "$tmp/classpath-entries.txt"
resolved=$(grep -m1 "/acp-host-$version\.jar$" "$tmp/classpath-entries.txt" || true)
[ -n "$resolved" ] || fail "acp-host is not on the consumer's classpath: $classpath"
cmp -s "$jar" "$resolved" || fail "the classpath's $resolved is not the jar under test"
for dep in kotlin-stdlib kotlinx-coroutines-core-jvm jna kotlinx-serialization-json-jvm; do
    grep -q "/$dep-[0-9][^/]*\.jar$" "$tmp/classpath-entries.txt" || fail "$dep did not come with acp-host's pom"
done
! grep -q "^$proj/" "$tmp/classpath-entries.txt" || fail "the classpath reaches into $proj"

# --- Run it: clean environment, no Rust toolchain on PATH, cwd outside the repository.
clean_path=
IFS=: read -r -a path_dirs <<< "$PATH"
for d in "${path_dirs[@]}"; do
    [ -n "$d" ] || continue
    case $d in "$HOME/.cargo/bin" | "$HOME/.cargo/bin/") continue ;; esac
    [ -e "$d/cargo" ] || [ -e "$d/rustc" ] && continue
    clean_path=${clean_path:+$clean_path:}$d
done
! PATH=$clean_path command -v cargo > /dev/null 2>&1 || fail "cargo is still on the clean PATH"
! PATH=$clean_path command -v rustc > /dev/null 2>&1 || fail "rustc is still on the clean PATH"
java_bin=${JAVA_HOME:+$JAVA_HOME/bin/java}
[ -n "$java_bin" ] && [ -x "$java_bin" ] || java_bin=$(command -v java) || fail "no java"
mkdir "$tmp/run" "$tmp/home" "$tmp/jtmp"
log "running the consumer (PATH=$clean_path)"
set +e
(cd "$tmp/run" && env -i PATH="$clean_path" HOME="$tmp/home" LANG=C.UTF-8 \
    "$java_bin" -Djava.io.tmpdir="$tmp/jtmp" -Djna.tmpdir="$tmp/jtmp" -Djna.debug_load=true \
    -cp "$tmp/consumer/target/classes:$classpath" MainKt "$mock" > "$tmp/out.txt" 2> "$tmp/err.txt")
rc=$?
set -e
sed 's/^/consumer: | /' "$tmp/out.txt" >&2
[ $rc -eq 0 ] || { sed 's/^/consumer: ! /' "$tmp/err.txt" >&2; fail "the consumer exited $rc"; }
grep -qx 'stopReason=end_turn' "$tmp/out.txt" || fail "no stopReason=end_turn in its output"
grep -qx 'typedStopReason=end_turn' "$tmp/out.txt" || fail "no typedStopReason=end_turn (the typed turn_ended payload) in its output"
events=$(sed -n 's/^events=\([0-9][0-9]*\)$/\1/p' "$tmp/out.txt")
[ -n "$events" ] && [ "$events" -ge 5 ] || fail "expected events=N with N >= 5"
# JNA says where it found the library: in the jar under test, extracted (nothing else had it).
grep -qF "Found library resource at jar:file:$resolved!/$lib" "$tmp/err.txt" ||
    { sed 's/^/consumer: ! /' "$tmp/err.txt" >&2; fail "the native library was not loaded from the jar"; }

log "OK: $events events, stopReason end_turn, in $((SECONDS - start)) s"

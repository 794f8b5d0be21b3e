# Sourced by scripts/release-artifacts: checks every artifact under $OUT for the targets in
# ${targets[@]} (`file` format and architecture, nothing left of debug info, glibc floor, wheel
# tags, jar entries, npm os/cpu/libc) and prints the size table. Needs `log`, `die` and
# scripts/lib/release-tools.sh.
CHECKS=0
check_fail() { die "check failed: $*"; }
ok() { CHECKS=$((CHECKS + 1)); }

# The words `file` uses for a target's format and architecture.
file_arch() { case $1 in *-x64*) echo 'x86[-_]64' ;; *-arm64*) echo '(aarch64|arm64)' ;; esac; }
file_format() { case $1 in linux-*) echo 'ELF 64-bit LSB' ;; darwin-*) echo 'Mach-O 64-bit' ;; win32-*) echo 'PE32\+' ;; esac; }
# What `file` calls a shared library / an executable of each format.
file_kind() {
    case $1:$2 in
        linux-*:shared) echo 'shared object' ;;
        linux-*:exe) echo '(pie executable|executable)' ;;
        darwin-*:shared) echo '(dynamically linked shared library|bundle)' ;;
        darwin-*:exe) echo 'executable' ;;
        win32-*:shared) echo 'executable \(DLL\)' ;;
        win32-*:exe) echo 'executable \(console\)' ;;
    esac
}
# llvm-objdump's name for the objects of a static library.
objdump_format() {
    case $1 in
        linux-x64-gnu) echo elf64-x86-64 ;;
        linux-arm64-gnu) echo elf64-littleaarch64 ;;
        darwin-arm64) echo mach-o.arm64 ;;
        darwin-x64) echo mach-o.64-bit.x86-64 ;;
        win32-x64) echo coff-x86-64 ;;
    esac
}

# check_binary TARGET shared|exe|static FILE
check_binary() {
    local t=$1 kind=$2 f=$3 desc formats debug glibc
    [[ -f $f ]] || check_fail "$t: missing $f"
    if [[ $kind == static ]]; then
        # llvm-objdump cannot parse every object rustc writes for macOS (exit 1, the others listed).
        formats=$({ llvm-objdump -f "$f" 2>/dev/null || true; } | sed -n 's/.*file format //p' | sort -u | tr ' ' . | paste -sd' ')
        [[ $formats == "$(objdump_format "$t")" ]] || check_fail "$t: $f holds objects of format '$formats', expected $(objdump_format "$t")"
    else
        desc=$(file -b "$f")
        [[ $desc =~ ^$(file_format "$t") ]] && [[ $desc =~ $(file_kind "$t" "$kind") ]] && [[ $desc =~ $(file_arch "$t") ]] ||
            check_fail "$t: $f is '$desc', expected $(file_format "$t") $(file_kind "$t" "$kind") $(file_arch "$t")"
    fi
    debug=$(llvm-objdump -h "$f" 2>/dev/null | grep -cE '\s(\.debug_|__debug_|\.zdebug)' || true)
    [[ $debug -eq 0 ]] || check_fail "$t: $f still has $debug debug sections"
    # An arm64 Mac kills a binary whose ad-hoc signature does not match (a strip rewrites the file).
    if [[ $t == darwin-* && $kind != static ]]; then
        python3 "$ROOT/scripts/lib/macho-signature.py" --allow-unsigned "$f" >/dev/null ||
            check_fail "$t: $(python3 "$ROOT/scripts/lib/macho-signature.py" --allow-unsigned "$f")"
    fi
    if [[ $t == linux-* && $kind != static ]]; then
        glibc=$(llvm-objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
        [[ $(printf '%s\n' "${glibc#GLIBC_}" 2.17 | sort -V | tail -1) == 2.17 ]] ||
            check_fail "$t: $f needs $glibc (the floor is glibc 2.17)"
    fi
    ok
}

check_all() {
    local t napi jna ext pre dir tgz meta want whl tag wheel_tag tmp
    tmp=$(mktemp -d)
    for t in "${targets[@]}"; do
        napi=$(target_napi "$t") jna=$(target_jna "$t") ext=$(target_dylib_ext "$t")
        pre=lib; [[ $ext == dll ]] && pre=""
        # C
        dir=$OUT/c/$t
        [[ -f $dir/include/acp_host.h ]] || check_fail "$t: no header in $dir"; ok
        case $t in
            linux-*) check_binary "$t" shared "$dir/lib/libacp_host.so.$version"
                [[ -L $dir/lib/libacp_host.so && -e $dir/lib/libacp_host.so ]] || check_fail "$t: lib/libacp_host.so link" ;;
            darwin-*) check_binary "$t" shared "$(readlink -f "$dir/lib/libacp_host.dylib")" ;;
            win32-*) check_binary "$t" shared "$dir/bin/acp_host.dll"
                [[ $(llvm-objdump -f "$dir/lib/libacp_host.dll.a" | sed -n 's/.*file format //p' | sort -u) == coff-x86-64 ]] ||
                    check_fail "$t: lib/libacp_host.dll.a is no x86-64 import library"; ok ;;
        esac
        check_binary "$t" static "$dir/lib/libacp_host.a"
        grep -q '^prefix=${pcfiledir}/../..$' "$dir/lib/pkgconfig/acp_host.pc" || check_fail "$t: the .pc is not relocatable"; ok
        # CLI (missing when acph did not build for this target: reported by release-artifacts)
        if [[ " ${CLI_FAILED[*]:-} " != *" $t "* ]]; then
            check_binary "$t" exe "$OUT/cli/$t/acph$([[ $ext == dll ]] && echo .exe)"
        fi
        # Node: the platform package's manifest and binary.
        tgz=$OUT/node/acp-host-$napi-$version.tgz
        [[ -f $tgz ]] || check_fail "$t: no $tgz"
        meta=$(tar -xzOf "$tgz" package/package.json)
        want=$(case $t in
            linux-x64-gnu) echo 'linux x64 glibc' ;; linux-arm64-gnu) echo 'linux arm64 glibc' ;;
            darwin-arm64) echo 'darwin arm64 -' ;; darwin-x64) echo 'darwin x64 -' ;; win32-x64) echo 'win32 x64 -' ;;
        esac)
        [[ $(node -e 'const m = JSON.parse(process.argv[1]); console.log(m.os.join(), m.cpu.join(), (m.libc ?? ["-"]).join())' "$meta") == "$want" ]] ||
            check_fail "$t: $tgz os/cpu/libc are not '$want': $meta"
        mkdir -p "$tmp/npm-$t" && tar -xzf "$tgz" -C "$tmp/npm-$t"
        check_binary "$t" shared "$tmp/npm-$t/package/acp-host.$napi.node"
        # Python: the wheel's tags and module.
        case $t in
            linux-x64-gnu) wheel_tag='(manylinux2014_x86_64\.manylinux_2_17_x86_64|manylinux_2_17_x86_64\.manylinux2014_x86_64)' ;;
            linux-arm64-gnu) wheel_tag='(manylinux2014_aarch64\.manylinux_2_17_aarch64|manylinux_2_17_aarch64\.manylinux2014_aarch64)' ;;
            darwin-arm64) wheel_tag='macosx_1[1-9]_[0-9]+_arm64' ;;
            darwin-x64) wheel_tag='macosx_10_[0-9]+_x86_64' ;;
            win32-x64) wheel_tag=win_amd64 ;;
        esac
        whl=$(find "$OUT/python" -name "acp_host-$version-cp39-abi3-*.whl" | grep -E -- "-cp39-abi3-$wheel_tag\.whl$" || true)
        [[ -n $whl && $(wc -l <<<"$whl") -eq 1 ]] || check_fail "$t: no cp39-abi3-$wheel_tag wheel in $OUT/python"
        tag=$(unzip -p "$whl" '*.dist-info/WHEEL' | sed -n 's/^Tag: //p' | paste -sd' ')
        [[ $tag =~ ^cp39-abi3- ]] || check_fail "$t: $whl WHEEL tags are '$tag'"
        mkdir -p "$tmp/whl-$t" && unzip -q -o "$whl" -d "$tmp/whl-$t"
        check_binary "$t" shared "$(find "$tmp/whl-$t/acp_host" -name '_native*' | head -1)"
        # Kotlin: the library in JNA's layout inside the jar.
        # The listing is read whole (grep -q would close the pipe early: unzip's SIGPIPE then
        # fails the check under pipefail, however the jar looks).
        grep -qx "$jna/${pre}acp_host_uniffi.$ext" <<<"$(unzip -Z1 "$OUT/kotlin/acp-host-$version.jar")" ||
            check_fail "$t: the jar has no $jna/${pre}acp_host_uniffi.$ext"
        mkdir -p "$tmp/jar-$t" && unzip -q -o "$OUT/kotlin/acp-host-$version.jar" "$jna/*" -d "$tmp/jar-$t"
        check_binary "$t" shared "$tmp/jar-$t/$jna/${pre}acp_host_uniffi.$ext"
    done
    [[ -f $OUT/python/acp_host-$version.tar.gz ]] || check_fail "no sdist"; ok
    rm -rf "$tmp"
    log "$CHECKS checks passed"
}

mb() { awk -v n="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", n / 1e6 }'; }
size_table() {
    local t napi ext pre exe whl
    printf '\n%-16s %9s %9s %9s %9s %9s %9s %9s\n' target 'C shared' 'C static' acph addon 'npm tgz' wheel 'JNA lib'
    for t in "${targets[@]}"; do
        napi=$(target_napi "$t") ext=$(target_dylib_ext "$t")
        pre=lib exe=acph; [[ $ext == dll ]] && pre="" exe=acph.exe
        local shared
        case $t in
            linux-*) shared=$OUT/c/$t/lib/libacp_host.so.$version ;;
            darwin-*) shared=$(readlink -f "$OUT/c/$t/lib/libacp_host.dylib") ;;
            win32-*) shared=$OUT/c/$t/bin/acp_host.dll ;;
        esac
        whl=$(find "$OUT/python" -name "acp_host-*$(case $t in linux-x64*) echo '*manylinux2014_x86_64*' ;; linux-arm64*) echo '*manylinux2014_aarch64*' ;; darwin-arm64) echo arm64 ;; darwin-x64) echo macosx_*x86_64 ;; win32*) echo win_amd64 ;; esac).whl" | head -1)
        printf '%-16s %9s %9s %9s %9s %9s %9s %9s\n' "$t" "$(mb "$shared")" "$(mb "$OUT/c/$t/lib/libacp_host.a")" \
            "$([[ -f $OUT/cli/$t/$exe ]] && mb "$OUT/cli/$t/$exe" || echo FAILED)" "$(mb "$OUT/node/bin/acp-host.$napi.node")" \
            "$(mb "$OUT/node/acp-host-$napi-$version.tgz")" "$(mb "$whl")" \
            "$(mb "$OUT/kotlin/native/$(target_jna "$t")/${pre}acp_host_uniffi.$ext")"
    done
    printf '%s\n' "(MB, 10^6 bytes) npm main package $(mb "$OUT/node/acp-host-$version.tgz"), sdist $(mb "$OUT/python/acp_host-$version.tar.gz"), jar $(mb "$OUT/kotlin/acp-host-$version.jar"), C tarballs: $(for t in "${targets[@]}"; do printf '%s %s  ' "$t" "$(mb "$OUT/c/acp-host-c-$version-$t.tar.gz")"; done)"
}

# docs/SIZES.md: the same figures as a Markdown table, the one place the docs take package sizes
# from (tests/docs/sizes.py fails on a size figure written anywhere else).
sizes_doc() {
    local t napi ext pre exe whl shared doc=$ROOT/docs/SIZES.md
    {
        printf '%s\n' '# Artifact sizes' '' \
            "<!-- Generated by scripts/release-artifacts (scripts/lib/release-checks.sh sizes_doc); do not edit. -->" '' \
            "The release artifacts of acp-host $version as \`scripts/release-artifacts\` built them last (stripped," \
            'no debug info; MB = 10^6 bytes). Targets built in that run: '"${targets[*]}"'.' '' \
            '| target | C shared | C static | acph | Node addon | npm package | wheel | JNA library | C tarball |' \
            '|---|---|---|---|---|---|---|---|---|'
        for t in "${targets[@]}"; do
            napi=$(target_napi "$t") ext=$(target_dylib_ext "$t")
            pre=lib exe=acph; [[ $ext == dll ]] && pre="" exe=acph.exe
            case $t in
                linux-*) shared=$OUT/c/$t/lib/libacp_host.so.$version ;;
                darwin-*) shared=$(readlink -f "$OUT/c/$t/lib/libacp_host.dylib") ;;
                win32-*) shared=$OUT/c/$t/bin/acp_host.dll ;;
            esac
            whl=$(find "$OUT/python" -name "acp_host-*$(case $t in linux-x64*) echo '*manylinux2014_x86_64*' ;; linux-arm64*) echo '*manylinux2014_aarch64*' ;; darwin-arm64) echo arm64 ;; darwin-x64) echo macosx_*x86_64 ;; win32*) echo win_amd64 ;; esac).whl" | head -1)
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$(mb "$shared")" "$(mb "$OUT/c/$t/lib/libacp_host.a")" \
                "$([[ -f $OUT/cli/$t/$exe ]] && mb "$OUT/cli/$t/$exe" || echo -)" "$(mb "$OUT/node/bin/acp-host.$napi.node")" \
                "$(mb "$OUT/node/acp-host-$napi-$version.tgz")" "$(mb "$whl")" \
                "$(mb "$OUT/kotlin/native/$(target_jna "$t")/${pre}acp_host_uniffi.$ext")" "$(mb "$OUT/c/acp-host-c-$version-$t.tar.gz")"
        done
        printf '%s\n' '' "Target-independent: the npm main package $(mb "$OUT/node/acp-host-$version.tgz") MB, the Python sdist" \
            "$(mb "$OUT/python/acp_host-$version.tar.gz") MB, the jar (every built target's library) $(mb "$OUT/kotlin/acp-host-$version.jar") MB."
    } >"$doc"
    log "wrote docs/SIZES.md"
}

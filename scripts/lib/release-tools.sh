# Sourced by scripts/release-artifacts and scripts/test-macos-link: `release_tools` makes sure the
# tools pinned in scripts/release-tools.txt are installed in target/release-tools/venv and puts its
# bin/ first on PATH. Idempotent and offline when nothing changed: pip runs only when the pin file
# differs from the copy kept in the venv (or the venv is missing). Needs `log` and `die`.
#
# The zig of the ziglang wheel is `python -m ziglang`; cargo-zigbuild and maturin find it through the
# venv's python on PATH (both look for `python3 -m ziglang` when no `zig` is on PATH).
release_tools() {
    local root=$1
    local pins=$root/scripts/release-tools.txt req=$root/bindings/python/requirements-dev.txt
    local venv=${ACP_RELEASE_VENV:-$root/target/release-tools/venv}
    local stamp=$venv/.release-tools.txt name pin dev
    [[ -f $pins ]] || die "missing $pins"
    # One zig and one maturin for the test build and the release build.
    for name in ziglang maturin; do
        pin=$(sed -n "s/^$name==//p" "$pins")
        dev=$(sed -n "s/^$name==//p" "$req")
        [[ -n $pin && $pin == "$dev" ]] ||
            die "$name is pinned to '${pin:-nothing}' in scripts/release-tools.txt but '${dev:-nothing}' in bindings/python/requirements-dev.txt: pin one version in both"
    done
    if [[ ! -x $venv/bin/python ]]; then
        log "python3 -m venv $venv"
        python3 -m venv "$venv" >&2 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
    if ! cmp -s "$pins" "$stamp"; then
        log "pip install -r scripts/release-tools.txt into $venv"
        "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$pins" >&2 ||
            die "pip install of the release tools failed"
        cp "$pins" "$stamp"
    fi
    export PATH=$venv/bin:$PATH VIRTUAL_ENV=$venv
    command -v cargo-zigbuild >/dev/null && command -v maturin >/dev/null ||
        die "cargo-zigbuild or maturin missing from $venv/bin"
    python3 -m ziglang version >/dev/null 2>&1 || die "python3 -m ziglang does not run (venv $venv)"
}

# The release targets: the cargo triple, the napi platform (npm package), JNA's resource folder and
# the shared library's extension of each.
target_triple() {
    case $1 in
        linux-x64-gnu) echo x86_64-unknown-linux-gnu ;;
        linux-arm64-gnu) echo aarch64-unknown-linux-gnu ;;
        darwin-arm64) echo aarch64-apple-darwin ;;
        darwin-x64) echo x86_64-apple-darwin ;;
        win32-x64) echo x86_64-pc-windows-gnu ;;
        *) die "unknown target $1" ;;
    esac
}
# The Windows package keeps the napi name binding.js asks for on the official Node, which is
# MSVC-built: it loads a MinGW-built addon as well (napi-rs resolves Node-API at run time).
target_napi() { case $1 in win32-x64) echo win32-x64-msvc ;; *) echo "$1" ;; esac; }
target_jna() {
    case $1 in
        linux-x64-gnu) echo linux-x86-64 ;;
        linux-arm64-gnu) echo linux-aarch64 ;;
        darwin-arm64) echo darwin-aarch64 ;;
        darwin-x64) echo darwin-x86-64 ;;
        win32-x64) echo win32-x86-64 ;;
    esac
}
target_dylib_ext() { case $1 in linux-*) echo so ;; darwin-*) echo dylib ;; win32-*) echo dll ;; esac; }

# How to build for a target: `cargo zigbuild` for Linux (glibc 2.17 as the target suffix) and
# macOS, plain cargo with MinGW's gcc as the linker for Windows (what the Wine tests use). Sets
# the arrays CARGO (the command) and LINK (rustc arguments for a shared library's final link) and
# CARGO_TRIPLE (the --target value).
# A fresh machine has only the host's std: rustup adds a target's the first time it is needed.
need_rust_target() {
    rustup target list --installed | grep -qx "$1" || { log "rustup target add $1"; rustup target add "$1" >&2; }
}

target_cargo() {
    local triple gcc libgcc
    triple=$(target_triple "$1")
    need_rust_target "$triple"
    LINK=()
    case $1 in
        linux-*)
            CARGO=(cargo-zigbuild) CARGO_TRIPLE=$triple.2.17
            # zig replaces the -lgcc_s of Rust's std with its own static libunwind: a second
            # unwinder in a host process (CPython's exit unwinds our threads with libgcc_s:
            # SIGSEGV, see scripts/setup-python). Linking the target's libgcc_s.so.1 keeps one.
            gcc=cc; [[ $1 == linux-arm64-gnu ]] && gcc=aarch64-linux-gnu-gcc
            libgcc=$($gcc -print-file-name=libgcc_s.so.1)
            [[ $libgcc == /* && -f $libgcc ]] || die "$gcc has no libgcc_s.so.1"
            LINK=(-C "link-arg=$libgcc")
            ;;
        darwin-*)
            CARGO=(cargo-zigbuild) CARGO_TRIPLE=$triple
            # maturin sets these (rustc's defaults); the same value in every build lets the wheel
            # reuse the dependencies built for the other faces (rustc tracks the variable).
            export MACOSX_DEPLOYMENT_TARGET
            [[ $1 == darwin-arm64 ]] && MACOSX_DEPLOYMENT_TARGET=11.0 || MACOSX_DEPLOYMENT_TARGET=10.12
            ;;
        win32-*)
            CARGO=(cargo) CARGO_TRIPLE=$triple
            node_import_lib "${CARGO_TARGET_DIR:-$ROOT/target}/release-tools/libnode"
            export LIBNODE_PATH=${CARGO_TARGET_DIR:-$ROOT/target}/release-tools/libnode
            ;;
    esac
}

# Builds the C library, the Node addon, the JNA library and the CLI of one target (release).
# One cargo invocation per final crate, so the libgcc_s link argument reaches only the shared
# libraries; the dependencies are built once for all of them. The C library's static link
# needs (rustc --print native-static-libs) go to native-static-libs.txt for its .pc.
build_target() {
    local t=$1 built notes
    target_cargo "$t"
    built=${CARGO_TARGET_DIR:-$ROOT/target}/$(target_triple "$t")/release
    notes=$(mktemp)
    log "$t: ${CARGO[*]} rustc --release --target $CARGO_TRIPLE -p acp-host-ffi"
    "${CARGO[@]}" rustc --release --target "$CARGO_TRIPLE" -p acp-host-ffi --lib -- "${LINK[@]}" \
        --print=native-static-libs 2>"$notes" || { cat "$notes" >&2; rm -f "$notes"; die "$t: acp-host-ffi failed"; }
    grep -v '^\s*\(Compiling\|Finished\|Fresh\)' "$notes" | grep -v 'native-static-libs' >&2 || true
    sed -n 's/.*native-static-libs: //p' "$notes" | tail -1 >"$notes.libs"
    [[ -s $notes.libs ]] && mv "$notes.libs" "$built/native-static-libs.txt"
    rm -f "$notes" "$notes.libs"
    log "$t: acp-host-node, acp-host-uniffi"
    "${CARGO[@]}" rustc -q --release --target "$CARGO_TRIPLE" -p acp-host-node --lib -- "${LINK[@]}"
    "${CARGO[@]}" rustc -q --release --target "$CARGO_TRIPLE" -p acp-host-uniffi --lib -- "${LINK[@]}"
    log "$t: acph"
    # A CLI that does not build is reported at the end; the other faces are still built.
    "${CARGO[@]}" build -q --release --target "$CARGO_TRIPLE" -p acp-host-cli || log "$t: acph FAILED to build"
}

# The abi3 wheel of one target into $2 (maturin; zig links Linux against glibc 2.17 and macOS).
build_wheel() {
    local t=$1 out=$2 args=()
    target_cargo "$t"
    case $t in
        linux-*) args=(--zig --compatibility manylinux2014) ;;
        darwin-*) args=(--zig) ;;
        win32-*) args=() ;;
    esac
    log "$t: maturin build --release --target $(target_triple "$t") ${args[*]}"
    (cd bindings/python && maturin build -q --release --target "$(target_triple "$t")" "${args[@]}" \
        --out "$out" -- "${LINK[@]}" >&2)
}

# Strips a shared library of a target down to what loading it needs. Mach-O: llvm-strip -x (local
# symbols; --strip-unneeded is ELF/COFF only); llvm-strip rewrites the ad-hoc code signature of
# an arm64 file (checked by scripts/lib/macho-signature.py).
strip_shared() { case $1 in darwin-*) llvm-strip -x "$2" ;; *) llvm-strip --strip-unneeded "$2" ;; esac; }

# napi-build links a windows-gnu addon with -lnode and wants a libnode.dll to be found
# (LIBNODE_PATH). The official Node exports Node-API from node.exe itself, so the import library
# given here names node.exe: the addon then loads in the Node users have. It lists every Node-API
# function napi-sys declares; the libnode.dll beside it is an empty stand-in for napi-build's
# existence check (ld takes libnode.dll.a first).
node_import_lib() {
    local dir=$1 sys
    sys=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/napi-sys-"$(sed -n '/^name = "napi-sys"$/{n;s/^version = "\(.*\)"/\1/p}' "$ROOT/Cargo.lock")" | head -1)
    [[ -d $sys ]] || die "napi-sys sources not found (cargo fetch)"
    mkdir -p "$dir"
    { echo 'LIBRARY node.exe'; echo 'EXPORTS'
      grep -rhoE '\bfn (napi|node_api)_[a-z0-9_]+' "$sys/src" | sed 's/^fn /    /' | sort -u; } >"$dir/node.def"
    x86_64-w64-mingw32-dlltool -d "$dir/node.def" -l "$dir/libnode.dll.a" -D node.exe
    : >"$dir/libnode.dll"
}

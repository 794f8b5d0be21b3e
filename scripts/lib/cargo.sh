# Sourced by the test and face scripts: the one cargo invocation shape they share.
#
# Why one shape: cargo unifies features per invocation over the packages it selects, so
# `cargo build -p acp-host-ffi` and `cargo build --workspace` compile different variants of
# acp-host, serde, tokio, … (here ~40 variants apart), and each face script building its own
# selection compiled the core again and overwrote the artifacts the previous face had tested.
# Every script asks for the workspace as scripts/test builds it; under scripts/test (which exports
# ACPH_WORKSPACE_BUILT=1 after its build) that is a no-op and is skipped. The selections other
# tools build on their own (napi's, maturin's, `cargo install --path cli`) ask the same features
# of every dependency thanks to tools/workspace-hack (scripts/check-workspace-hack), so they reuse
# what this compiled. The uniffi bindgen apart: it is a tool whose dependencies (cargo_metadata,
# clap, …) would change the features the workspace asks of serde_json and clap.
build_workspace() {
    [[ ${ACPH_WORKSPACE_BUILT:-} == 1 ]] && return 0
    cargo build -q --workspace --exclude acp-host-uniffi-bindgen --all-targets --all-features
}

# The uniffi bindgen (scripts/gen-uniffi, Kotlin/Swift only): apart, and built where it is used,
# not in the build every job waits for (its own large dependency tree, ~80 s cold on 2 cores).
build_bindgen() {
    cargo build -q -p acp-host-uniffi-bindgen
}

# Lints in the one build, not in a check of their own: `cargo clippy` is `cargo check` with
# clippy-driver as the workspace's rustc wrapper, and the same wrapper on the build lints every
# workspace crate as it compiles it (`-D warnings`, the workspace's [lints] and clippy.toml), so the
# dependency tree is not checked a second time (~350 s of a cold run on 2 cores). Every cargo run
# on this target dir (napi's, maturin's, `cargo install`, `cargo test`) inherits it: with another
# wrapper cargo would rebuild the workspace's crates. scripts/test runs the other platforms' builds without it.
if [[ -z ${ACPH_NO_LINT_BUILD:-} ]]; then
    RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
    CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
    export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
fi

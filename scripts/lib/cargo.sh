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
    cargo build -q -p acp-host-uniffi-bindgen
}

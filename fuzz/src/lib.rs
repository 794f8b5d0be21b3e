//! The harnesses of `core/tests/integration/fuzz_support/`, compiled once more for libFuzzer: the property
//! tests and the fuzz targets check the very same invariants.
#![allow(dead_code, clippy::all)]

#[path = "../../core/tests/integration/fuzz_support/wire.rs"]
pub mod wire;

#[path = "../../core/tests/integration/fuzz_support/dispatch.rs"]
pub mod dispatch;

/// One runtime for the whole fuzzing process (building one per input would dominate).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(wire::runtime)
}

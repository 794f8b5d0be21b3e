//! Harnesses shared by the property tests (`fuzz_wire.rs`, `fuzz_dispatch.rs`) and the cargo-fuzz
//! targets in `fuzz/` (which include these files by path). A broken invariant is an `Err` with a
//! description; the callers turn it into a test failure or a fuzzer crash.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod dispatch;
pub mod script;
pub mod wire;

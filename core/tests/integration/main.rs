//! The core's integration tests, one test binary: one link step instead of one per file, and one
//! libtest run whose threads take the next test from any file, so no file's slowest test holds up
//! the ones after it. Each former `tests/<name>.rs` is the module `<name>` here (its tests are
//! `<name>::<test>`: what `--exact`, the filters and the cross runners' skip lists name).
//!
//! Kept apart: `tests/memory.rs`, whose global allocator counts the heap of the whole process (a
//! test of another file running beside it would be counted).
//!
//! Sharing a process: no test here changes the environment, cwd, umask, rlimits or signal
//! dispositions of this process (what must run elsewhere re-runs this binary: `host_death`,
//! `containment`, `git_metadata`, through `common::test_name`); pipes a test makes are
//! close-on-exec, so an agent another test starts inherits none.

mod common;
mod fuzz_support;

mod abort;
mod batch_files;
mod bounds;
mod coalesce;
mod conformance;
mod connect;
mod containment;
mod crlf;
mod cwd;
mod depth;
mod elicitation;
mod error_table;
mod event_schema;
mod ext_requests;
mod fail_closed;
mod faults;
mod fs_links;
mod fs_sandbox;
mod fs_spellings;
mod fuzz_dispatch;
mod fuzz_wire;
mod git_metadata;
mod host_death;
mod interop;
mod interop_replay;
mod liveness;
mod logs_and_progress;
mod method_table;
mod models_and_auth;
mod options_cases;
mod ordering;
mod policy;
mod policy_commands;
mod pool;
mod protocol_v2;
mod receipts;
mod record;
mod registry;
mod replay;
mod services;
mod sessions_and_turns;
mod skipped_off_unix;
mod steer;
mod supervisor;
mod terminal_auth;
mod terminals;
mod unstable_sessions;
mod v2_cancel;

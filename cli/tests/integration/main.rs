//! The CLI's integration tests, one test binary (one link step; libtest's threads take the next
//! test of either file): each former `tests/<name>.rs` is the module `<name>`, its tests named
//! `<name>::<test>`. Neither changes process-wide state; both start `acph` as a child.

mod cli;
mod inspect;
mod options_cases;
mod replay;
mod tty;

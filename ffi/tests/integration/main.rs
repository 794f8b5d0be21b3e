//! The C face's Rust-side checks, one test binary (one link step): each former `tests/<name>.rs`
//! is the module `<name>`, its tests named `<name>::<test>` (what the regenerate commands filter
//! on). Neither changes process-wide state.

mod header;
mod lua_cdef;

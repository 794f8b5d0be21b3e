//! Node addon of acp-host (work in progress).

//! C ABI of acp-host (work in progress).

//! Client-side services the agent calls (`fs/*`, `terminal/*`).
//!
//! Not served yet: the host advertises `fs.readTextFile = fs.writeTextFile = terminal = false` in
//! `initialize` and answers any such request with `-32601` (method not found). The sandboxed fs
//! service and the terminal manager plug in here; [`ClientCapabilities`] is computed from what is
//! actually served so the handshake never over-promises.

pub mod fs;
pub mod terminal;

use serde_json::Value;

/// What the host serves, advertised in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
}

impl ClientCapabilities {
    pub(crate) fn to_json(self) -> Value {
        serde_json::json!({
            "fs": { "readTextFile": self.read_text_file, "writeTextFile": self.write_text_file },
            "terminal": self.terminal,
        })
    }

    /// Whether a request method is served.
    pub(crate) fn serves(self, method: &str) -> bool {
        match method {
            "fs/read_text_file" => self.read_text_file,
            "fs/write_text_file" => self.write_text_file,
            m if m.starts_with("terminal/") => self.terminal,
            _ => false,
        }
    }
}

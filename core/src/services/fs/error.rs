//! Why an `fs/*` request was refused or failed, and how the agent is told.

use serde_json::{Value, json};

/// Why an `fs/*` request was refused or failed. Every variant carries the path as the agent sent
/// it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// The path is not absolute (ACP requires absolute paths).
    #[error("path is not absolute: {0}")]
    NotAbsolute(String),
    /// The path is outside every root of the session, contains a `..` component or a NUL, or a
    /// symlink on it leads outside its root.
    #[error("path is outside the session's roots: {0}")]
    OutsideRoots(String),
    /// The file (or a directory on its path) does not exist.
    #[error("Resource not found: {0}")]
    NotFound(String),
    /// The file (read) or the content (write) is larger than the configured limit; or, with
    /// `encoded_size`, the file is not but what a read would answer with is, as JSON text.
    #[error("{path} is {size} bytes{}, over the {limit}-byte limit", encoded_note(*.encoded_size))]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        /// The size of the read's content as JSON text, when that is what is over the limit.
        encoded_size: Option<u64>,
    },
    /// The file is not valid UTF-8.
    #[error("file is not valid UTF-8: {0}")]
    NotUtf8(String),
    /// The path names a directory.
    #[error("path is a directory: {0}")]
    IsDirectory(String),
    /// Any other I/O failure (permission denied, not a regular file, dangling symlink, ...).
    #[error("I/O error on {path}: {message}")]
    Io { path: String, message: String },
    /// The caller's decision (the host's policy) refused the path once resolved; `rule` names
    /// the rule.
    #[error("denied by the host's policy: {rule}")]
    Denied { path: String, rule: String },
}

impl FsError {
    /// JSON-RPC error for the agent, as `(code, message, data)`.
    ///
    /// - `NotFound` → `-32002` `"Resource not found: <path>"`, data `{"uri": "file://<path>"}`.
    /// - `NotAbsolute`, `OutsideRoots`, `TooLarge`, `NotUtf8`, `IsDirectory` → `-32602` (invalid
    ///   params), data `{"reason": <kind>, "path": <path>}` (plus `size` and `limit` for
    ///   `TooLarge`, and `encodedSize` when the content as JSON text is what is over the limit).
    /// - `Io` → `-32603` (internal error), data `{"reason": "io", "path": <path>}`.
    /// - `Denied` → `-32602`, data `{"reason": "denied", "rule": <rule>}`.
    pub fn to_rpc(&self) -> (i64, String, Option<Value>) {
        let message = self.to_string();
        match self {
            FsError::NotFound(path) => (-32002, message, Some(json!({ "uri": file_uri(path) }))),
            FsError::TooLarge {
                path,
                size,
                limit,
                encoded_size,
            } => {
                let mut data = json!({
                    "reason": self.kind(),
                    "path": path,
                    "size": size,
                    "limit": limit,
                });
                if let Some(encoded) = encoded_size {
                    data["encodedSize"] = json!(encoded);
                }
                (-32602, message, Some(data))
            }
            FsError::NotAbsolute(path)
            | FsError::OutsideRoots(path)
            | FsError::NotUtf8(path)
            | FsError::IsDirectory(path) => (
                -32602,
                message,
                Some(json!({ "reason": self.kind(), "path": path })),
            ),
            FsError::Io { path, .. } => (
                -32603,
                message,
                Some(json!({ "reason": self.kind(), "path": path })),
            ),
            FsError::Denied { rule, .. } => (
                -32602,
                message,
                Some(json!({ "reason": self.kind(), "rule": rule })),
            ),
        }
    }

    /// Stable snake_case kind: `not_absolute`, `outside_roots`, `not_found`, `too_large`,
    /// `not_utf8`, `is_directory`, `io`, `denied`.
    pub fn kind(&self) -> &'static str {
        match self {
            FsError::NotAbsolute(_) => "not_absolute",
            FsError::OutsideRoots(_) => "outside_roots",
            FsError::NotFound(_) => "not_found",
            FsError::TooLarge { .. } => "too_large",
            FsError::NotUtf8(_) => "not_utf8",
            FsError::IsDirectory(_) => "is_directory",
            FsError::Io { .. } => "io",
            FsError::Denied { .. } => "denied",
        }
    }

    /// The path the error is about, as the agent sent it.
    pub fn path(&self) -> &str {
        match self {
            FsError::NotAbsolute(p)
            | FsError::OutsideRoots(p)
            | FsError::NotFound(p)
            | FsError::NotUtf8(p)
            | FsError::IsDirectory(p) => p,
            FsError::TooLarge { path, .. }
            | FsError::Io { path, .. }
            | FsError::Denied { path, .. } => path,
        }
    }
}

fn encoded_note(encoded: Option<u64>) -> String {
    encoded.map_or_else(String::new, |e| format!(" ({e} bytes as JSON text)"))
}

fn file_uri(path: &str) -> String {
    if path.starts_with('/') {
        return format!("file://{path}");
    }
    // Windows: `C:\x` is file:///C:/x, `\\srv\share\x` is file://srv/share/x; a `\\?\` or
    // `\\.\` prefix is not part of the file's name.
    let unified = path.replace('\\', "/");
    let bare = ["//?/UNC/", "//?/unc/"]
        .iter()
        .find_map(|p| unified.strip_prefix(p))
        .map(|rest| format!("//{rest}"))
        .or_else(|| {
            ["//?/", "//./"]
                .iter()
                .find_map(|p| unified.strip_prefix(p))
                .map(str::to_owned)
        })
        .unwrap_or(unified);
    match bare.strip_prefix("//") {
        Some(unc) => format!("file://{unc}"),
        None => format!("file:///{bare}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_of_every_spelling() {
        assert_eq!(file_uri("/p/a b"), "file:///p/a b");
        assert_eq!(file_uri("C:\\p\\a"), "file:///C:/p/a");
        assert_eq!(file_uri("\\\\?\\C:\\p\\a"), "file:///C:/p/a");
        assert_eq!(file_uri("\\\\.\\C:\\p\\a"), "file:///C:/p/a");
        assert_eq!(file_uri("\\\\srv\\share\\a"), "file://srv/share/a");
        assert_eq!(file_uri("\\\\?\\UNC\\srv\\share\\a"), "file://srv/share/a");
    }
}

//! Progress of a registry install (`Registry.install(…, progress = …)`): the core's
//! `acp_host::progress` reports for the download and the extraction, typed. The host's own steps
//! (spawn, handshake, login) are `progress` events instead (`progressEvents`).

use std::sync::Arc;

use crate::handlers::HandlerError;

/// One report of a slow step, as in a `progress` event's data (docs/EVENTS.md).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Progress {
    /// `spawn`, `handshake`, `login`, `download`, `extract`.
    pub phase: String,
    /// `started`, `waiting`, `done`, `failed`.
    pub stage: String,
    /// Since the step started.
    pub elapsed_ms: u64,
    /// Bytes done (a download's size once fetched).
    pub bytes: Option<u64>,
    /// What failed, or what is being waited for.
    pub message: Option<String>,
}

impl From<&acp_host::progress::Progress> for Progress {
    fn from(p: &acp_host::progress::Progress) -> Progress {
        Progress {
            phase: p.phase.as_str().to_owned(),
            stage: p.stage.as_str().to_owned(),
            elapsed_ms: u64::try_from(p.elapsed.as_millis()).unwrap_or(u64::MAX),
            bytes: p.bytes,
            message: p.message.clone(),
        }
    }
}

/// Gets a registry install's progress, on the install's own thread (a slow handler slows only
/// that install). What it throws is ignored.
#[uniffi::export(with_foreign)]
pub trait ProgressHandler: Send + Sync {
    fn progress(&self, progress: Progress) -> Result<(), HandlerError>;
}

/// The core's sink for an optional handler.
pub(crate) struct Sink(pub Option<Arc<dyn ProgressHandler>>);

impl acp_host::progress::ProgressSink for Sink {
    fn progress(&self, p: &acp_host::progress::Progress) {
        if let Some(h) = &self.0 {
            // Its failure is its own: the install goes on.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.progress(p.into())));
        }
    }
}

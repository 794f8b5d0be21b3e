//! Progress of the slow steps a user waits on: spawning an agent, its `initialize` handshake, a
//! terminal login, a registry binary's download and extraction. The host reports its own as
//! `progress` events (so an agent that never answers `initialize` is visible at once and every
//! few seconds, not 120 s of silence); a registry install, which runs without a host, reports to
//! a [`ProgressSink`].

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Which step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Spawn,
    Handshake,
    Login,
    Download,
    Extract,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Spawn => "spawn",
            Phase::Handshake => "handshake",
            Phase::Login => "login",
            Phase::Download => "download",
            Phase::Extract => "extract",
        }
    }
}

/// Where the step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Started,
    /// Still running after a while (repeated every [`WAITING_EVERY`]).
    Waiting,
    Done,
    Failed,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Started => "started",
            Stage::Waiting => "waiting",
            Stage::Done => "done",
            Stage::Failed => "failed",
        }
    }
}

/// How often a step that has not ended says it is still waiting.
pub const WAITING_EVERY: Duration = Duration::from_secs(5);

/// One report.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub phase: Phase,
    pub stage: Stage,
    /// Since the step started.
    pub elapsed: Duration,
    /// Bytes done (a download's size once fetched).
    pub bytes: Option<u64>,
    /// What failed, or what is being waited for.
    pub message: Option<String>,
}

impl Progress {
    /// The `data` of a `progress` event: `{"phase", "stage", "elapsedMs", "bytes", "message"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "phase": self.phase.as_str(),
            "stage": self.stage.as_str(),
            "elapsedMs": self.elapsed.as_millis() as u64,
            "bytes": self.bytes,
            "message": self.message,
        })
    }
}

/// Where a registry install's progress goes (the face's callback).
pub trait ProgressSink: Send + Sync {
    fn progress(&self, p: &Progress);
}

impl<F: Fn(&Progress) + Send + Sync> ProgressSink for F {
    fn progress(&self, p: &Progress) {
        self(p)
    }
}

/// Nobody listens.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn progress(&self, _: &Progress) {}
}

/// One step being timed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    pub phase: Phase,
    pub start: Instant,
}

impl Step {
    pub fn new(phase: Phase) -> Step {
        Step {
            phase,
            start: Instant::now(),
        }
    }

    pub fn report(&self, stage: Stage, bytes: Option<u64>, message: Option<String>) -> Progress {
        Progress {
            phase: self.phase,
            stage,
            elapsed: self.start.elapsed(),
            bytes,
            message,
        }
    }
}

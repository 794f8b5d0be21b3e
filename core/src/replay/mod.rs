//! Replaying a recording (docs/RECORDING.md, "Replaying"): the recorded agent's side of a
//! connection played back to a host, which needs neither the agent nor its runtime nor its API
//! key, and a report of where the host under test diverges from what the recording holds.
//!
//! Two ways in, one behaviour: `acph replay FILE` is a stdio agent any host can spawn; an agent
//! spec with `replay` (every face's `spawn`) runs the same replay inside the host, over in-memory
//! pipes, its readable lines as the agent's stderr either way.

mod diff;
mod engine;
pub mod recording;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

pub use diff::Difference;
pub use engine::serve;
pub use recording::Recording;

use crate::error::Result;

/// How fast the agent's side is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// The recorded delays between the agent's messages (and after the host's).
    #[default]
    Recorded,
    /// Each message as soon as what precedes it in the recording has happened.
    Fast,
}

/// A replay's settings (the agent spec's `replay` object; `acph replay`'s flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOptions {
    /// The recording.
    pub file: PathBuf,
    pub pace: Pace,
    /// How long a recorded host message is waited for before it is reported missing and the
    /// replay goes on; `None`: until the host closes the connection.
    pub wait: Option<Duration>,
    /// Where to write the report (JSON) when the replay ends; replaced if it exists.
    pub report: Option<PathBuf>,
    /// Fields never compared (`params.prompt`, `result.outcome`): paths as in a difference.
    pub ignore: Vec<String>,
}

impl ReplayOptions {
    pub fn new(file: impl Into<PathBuf>) -> Self {
        ReplayOptions {
            file: file.into(),
            pace: Pace::Recorded,
            wait: Some(DEFAULT_WAIT),
            report: None,
            ignore: Vec::new(),
        }
    }
}

/// The default of [`ReplayOptions::wait`].
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// What kind of divergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceKind {
    /// The host sent a request or notification the recording does not have (a request is
    /// answered with JSON-RPC error -32603 carrying the divergence), or answered an id the
    /// agent's side never asked.
    UnexpectedMessage,
    /// The host sent a recorded request or notification with other params.
    ParamsDiffer,
    /// The host answered one of the agent's requests otherwise than recorded.
    AnswerDiffers,
    /// A recorded request or notification of the host's did not come.
    MissingMessage,
    /// The host did not answer one of the agent's requests that the recorded host answered.
    MissingAnswer,
    /// The host sent a line that is not a JSON-RPC message.
    InvalidMessage,
}

impl DivergenceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DivergenceKind::UnexpectedMessage => "unexpected_message",
            DivergenceKind::ParamsDiffer => "params_differ",
            DivergenceKind::AnswerDiffers => "answer_differs",
            DivergenceKind::MissingMessage => "missing_message",
            DivergenceKind::MissingAnswer => "missing_answer",
            DivergenceKind::InvalidMessage => "invalid_message",
        }
    }
}

/// Where the host under test did not do what the recording holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    pub kind: DivergenceKind,
    /// The recording's line of the recorded message concerned (none for an unexpected one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The method (of the request an answer answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What happened, in a sentence.
    pub message: String,
    /// The fields that differ (for `params_differ` and `answer_differs`).
    pub differences: Vec<Difference>,
    /// Differences beyond those listed.
    pub more_differences: usize,
    /// The recorded message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Value>,
    /// What the host sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
}

impl Divergence {
    /// The readable form (`replay: divergence N …` and a line per difference).
    pub fn describe(&self, n: usize) -> String {
        let mut s = format!("replay: divergence {n} ({})", self.kind.as_str());
        if let Some(line) = self.line {
            s.push_str(&format!(" at recording line {line}"));
        }
        if let Some(method) = &self.method {
            s.push_str(&format!(", {method}"));
        }
        s.push_str(&format!(": {}", self.message));
        for d in &self.differences {
            s.push_str("\n  ");
            s.push_str(&d.describe());
        }
        if self.more_differences > 0 {
            s.push_str(&format!("\n  … and {} more", self.more_differences));
        }
        s
    }
}

/// How a replay went (written to [`ReplayOptions::report`] as JSON before the replay's end).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub recording: String,
    pub pace: Pace,
    /// Every recorded host message came and nothing diverged.
    pub complete: bool,
    pub agent_messages_sent: usize,
    pub host_messages_expected: usize,
    pub host_messages_matched: usize,
    pub divergence_count: usize,
    /// The first 1,000 divergences, in the order found.
    pub divergences: Vec<Divergence>,
    /// What the recording lacks (cut short, truncated, lines dropped by the recorder).
    pub notes: Vec<String>,
    /// The recorded agent exited on its own (the replay ended there), with this exit code.
    pub agent_exited: bool,
    pub exit_code: Option<i32>,
}

/// Play `options.file` over the process's stdin/stdout/stderr (`acph replay`). Errors only when
/// the recording cannot be read.
pub async fn run_stdio(options: &ReplayOptions) -> Result<Report> {
    let recording = Recording::open(&options.file)?;
    let report = serve(
        &recording,
        options,
        tokio::io::stdin(),
        tokio::io::stdout(),
        tokio::io::stderr(),
    )
    .await;
    Ok(report)
}

/// The replay as the transport of agent `agent` (an agent spec with `replay`): the recording is
/// read first (a bad one fails the spawn with nothing started), then played by a task of its own
/// over in-memory pipes; its stderr lines reach the connection as the agent's stderr.
pub(crate) fn transport(
    options: &ReplayOptions,
    agent: u64,
    stderr_tail_bytes: usize,
) -> Result<crate::transport::Transport> {
    const PIPE: usize = 256 << 10;
    let recording = Recording::open(&options.file).map_err(|e| crate::Error::InvalidConfig {
        path: "replay.file".into(),
        message: e.to_string(),
    })?;
    let (host_in, agent_stdin) = tokio::io::duplex(PIPE);
    let (agent_stdout, host_out) = tokio::io::duplex(PIPE);
    let (agent_stderr, stderr_read) = tokio::io::duplex(PIPE);
    let options = options.clone();
    tokio::spawn(async move {
        serve(
            &recording,
            &options,
            agent_stdin,
            agent_stdout,
            agent_stderr,
        )
        .await;
    });
    let stderr = crate::transport::stderr_events(stderr_read, agent, stderr_tail_bytes);
    let (reader, writer) = (host_out, host_in);
    Ok(crate::transport::Transport {
        reader: Box::pin(reader),
        writer: Box::pin(writer),
        process: None,
        stderr: Some(stderr),
    })
}

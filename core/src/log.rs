//! The log hook: what the host does and why, handed to the embedder's sink (Node callback,
//! Python `logging` logger `acp_host`, C callback, Kotlin handler). Off by default; the library
//! never prints. Every record also goes to `tracing` for Rust embedders.
//!
//! A sink is called on the host's own tasks: it must return quickly and never block (queue the
//! record to the embedder's thread). A sink that panics loses that record, nothing else.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Value, json};

/// How much a record matters (ordered: `Error` is the most severe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    /// The level named as in the `logLevel` option.
    pub fn parse(s: &str) -> Option<Level> {
        [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Trace,
        ]
        .into_iter()
        .find(|l| l.as_str() == s)
    }
}

/// One log record.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    pub level: Level,
    /// The part of the host it comes from: `spawn`, `handshake`, `permission`, `elicitation`,
    /// `transport`, `protocol`, `pool`, `auth`.
    pub target: &'static str,
    pub message: String,
    /// The host's agent id, when the record is about one agent.
    pub agent: Option<u64>,
    pub session: Option<String>,
    pub at: SystemTime,
}

impl LogRecord {
    /// `{"level", "target", "message", "agent", "session", "at"}` (`at`: RFC 3339 UTC, ms), the
    /// shape every face hands its log hook.
    pub fn to_json(&self) -> Value {
        json!({
            "level": self.level.as_str(),
            "target": self.target,
            "message": self.message,
            "agent": self.agent,
            "session": self.session,
            "at": crate::events::format_timestamp(self.at),
        })
    }
}

/// Where records go.
pub trait LogSink: Send + Sync + 'static {
    fn log(&self, record: &LogRecord);
}

impl<F: Fn(&LogRecord) + Send + Sync + 'static> LogSink for F {
    fn log(&self, record: &LogRecord) {
        self(record)
    }
}

/// The host's log hook (`HostConfig::log`): a sink and the least severe level it gets.
#[derive(Clone, Default)]
pub struct LogHook {
    sink: Option<Arc<dyn LogSink>>,
    level: Option<Level>,
}

impl std::fmt::Debug for LogHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogHook")
            .field("sink", &self.sink.is_some())
            .field("level", &self.level)
            .finish()
    }
}

impl LogHook {
    /// Records at `level` or more severe go to `sink`.
    pub fn new(sink: Arc<dyn LogSink>, level: Level) -> LogHook {
        LogHook {
            sink: Some(sink),
            level: Some(level),
        }
    }

    /// Whether a record at `level` would reach the sink.
    pub fn enabled(&self, level: Level) -> bool {
        self.sink.is_some() && self.level.is_some_and(|l| level <= l)
    }

    /// The level records are kept from, when there is a sink.
    pub fn level(&self) -> Option<Level> {
        self.sink.as_ref().and(self.level)
    }

    /// Log a record made only when someone will read it.
    pub(crate) fn emit(
        &self,
        level: Level,
        target: &'static str,
        agent: Option<u64>,
        session: Option<&str>,
        message: impl FnOnce() -> String,
    ) {
        let tracing_on = match level {
            Level::Error => tracing::enabled!(tracing::Level::ERROR),
            Level::Warn => tracing::enabled!(tracing::Level::WARN),
            Level::Info => tracing::enabled!(tracing::Level::INFO),
            Level::Debug => tracing::enabled!(tracing::Level::DEBUG),
            Level::Trace => tracing::enabled!(tracing::Level::TRACE),
        };
        let hook_on = self.enabled(level);
        if !tracing_on && !hook_on {
            return;
        }
        let message = message();
        if tracing_on {
            match level {
                Level::Error => {
                    tracing::error!(target: "acp_host", %target, ?agent, ?session, "{message}")
                }
                Level::Warn => {
                    tracing::warn!(target: "acp_host", %target, ?agent, ?session, "{message}")
                }
                Level::Info => {
                    tracing::info!(target: "acp_host", %target, ?agent, ?session, "{message}")
                }
                Level::Debug => {
                    tracing::debug!(target: "acp_host", %target, ?agent, ?session, "{message}")
                }
                Level::Trace => {
                    tracing::trace!(target: "acp_host", %target, ?agent, ?session, "{message}")
                }
            }
        }
        if let (true, Some(sink)) = (hook_on, &self.sink) {
            let record = LogRecord {
                level,
                target,
                message,
                agent,
                session: session.map(str::to_owned),
                at: SystemTime::now(),
            };
            // A panicking sink must not take the host's task down with it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink.log(&record)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn records_below_the_level_are_not_made() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let hook = LogHook::new(
            Arc::new(move |r: &LogRecord| g.lock().unwrap().push(r.to_json())),
            Level::Info,
        );
        hook.emit(Level::Debug, "spawn", Some(1), None, || {
            panic!("a debug message is not formatted for an info hook")
        });
        hook.emit(Level::Warn, "spawn", Some(1), Some("s"), || "slow".into());
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["level"], "warn");
        assert_eq!(got[0]["agent"], 1);
        assert_eq!(got[0]["session"], "s");
        assert!(got[0]["at"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn a_panicking_sink_loses_only_its_record() {
        let hook = LogHook::new(Arc::new(|_: &LogRecord| panic!("sink bug")), Level::Trace);
        hook.emit(Level::Error, "spawn", None, None, || "x".into());
        assert!(!LogHook::default().enabled(Level::Error));
    }
}

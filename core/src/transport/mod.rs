//! How bytes reach the agent: a spawned process (own process group, stderr drained, shutdown
//! ladder, dies with the host) or any `AsyncRead`/`AsyncWrite` pair (in-memory duplex for tests,
//! sockets an embedder already owns).

// The crate's only `unsafe`: the pre-exec hook that sets PR_SET_PDEATHSIG (audited there).
pub(crate) mod command;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
#[warn(clippy::undocumented_unsafe_blocks)]
mod pdeathsig;
mod process;
#[cfg(unix)]
mod reaper;
#[cfg(target_os = "linux")]
mod spawner;
mod stderr;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) use process::{AgentProcess, GroupSignal, RawExit, spawn_agent, spawn_in_group};

/// Who a process is spawned for. On Linux each has its own spawner thread (`spawner.rs`), so a
/// terminal command whose `exec` waits never delays an agent's spawn.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Spawner {
    Agents,
    Terminals,
}

/// What to run. The command is executed directly (no shell; on Windows found through `PATH` and
/// `PATHEXT`, a `.cmd`/`.bat` run through `cmd.exe` with its arguments escaped or refused, see
/// `command.rs`); `env` overlays the inherited environment (a `None` value removes a variable).
#[derive(Debug, Clone, Default)]
pub struct AgentSpec {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, Option<String>>,
    /// Working directory of the agent process (defaults to the host's).
    pub cwd: Option<PathBuf>,
    /// Restart the agent when its process dies (the supervisor); `None`: it stays down.
    pub restart: Option<crate::orchestration::RestartPolicy>,
    /// Instead of a process, a recording played back inside the host (`crate::replay`);
    /// `command` is then empty.
    pub replay: Option<crate::replay::ReplayOptions>,
}

impl AgentSpec {
    pub fn new(command: impl Into<String>) -> Self {
        AgentSpec {
            command: command.into(),
            ..Default::default()
        }
    }
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), Some(value.into()));
        self
    }
    pub fn env_remove(mut self, key: impl Into<String>) -> Self {
        self.env.insert(key.into(), None);
        self
    }
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }
    /// Supervise the agent with `policy` (see [`crate::orchestration::supervisor`]).
    pub fn restart(mut self, policy: crate::orchestration::RestartPolicy) -> Self {
        self.restart = Some(policy);
        self
    }
    /// The replay of `options.file` instead of a process (`crate::replay`).
    pub fn replay(options: crate::replay::ReplayOptions) -> Self {
        AgentSpec {
            replay: Some(options),
            ..Default::default()
        }
    }
    /// `command args...` for messages (`replay FILE` for a replay).
    pub fn display(&self) -> String {
        if let Some(replay) = &self.replay {
            return format!("replay {}", replay.file.display());
        }
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Why `dir` cannot be a working directory (it must be an existing directory, links followed),
/// or `None` when it can: "`/x` does not exist", "`/x` is not a directory".
pub(crate) fn unusable_dir(dir: &std::path::Path) -> Option<String> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some(format!("`{}` is not a directory", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("`{}` does not exist", dir.display()))
        }
        Err(e) => Some(format!("`{}` cannot be used: {e}", dir.display())),
    }
}

/// The connection to `spec`'s agent: its process, or its replay.
pub(crate) fn open_agent(
    spec: &AgentSpec,
    agent: u64,
    tail_bytes: usize,
) -> Result<Transport, crate::Error> {
    match &spec.replay {
        Some(replay) => {
            if spec.restart.is_some() {
                return Err(crate::Error::InvalidConfig {
                    path: "restart".into(),
                    message: "a replay is not restarted: it plays one connection".into(),
                });
            }
            crate::replay::transport(replay, agent, tail_bytes)
        }
        None => spawn_agent(spec, agent, tail_bytes),
    }
}

/// The agent's stderr lines read from `reader` as `agent_stderr` events (as for a process).
pub(crate) fn stderr_events<R: AsyncRead + Unpin + Send + 'static>(
    reader: R,
    agent: u64,
    tail_bytes: usize,
) -> tokio::sync::mpsc::Receiver<crate::events::PendingEvent> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let tail = stderr::StderrTail::new(tail_bytes);
    tokio::spawn(stderr::drain_stderr(reader, tail, tx, agent));
    rx
}

/// A boxed byte stream from the agent.
pub type BoxReader = Pin<Box<dyn AsyncRead + Send>>;
/// A boxed byte sink to the agent.
pub type BoxWriter = Pin<Box<dyn AsyncWrite + Send>>;

/// The two pipes of a connection plus, for spawned agents, the process.
pub(crate) struct Transport {
    pub reader: BoxReader,
    pub writer: BoxWriter,
    pub process: Option<AgentProcess>,
    /// The agent's stderr lines as events, for the connection to emit in order with the rest
    /// (so none can follow `agent_exited`).
    pub stderr: Option<tokio::sync::mpsc::Receiver<crate::events::PendingEvent>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("process", &self.process)
            .finish_non_exhaustive()
    }
}

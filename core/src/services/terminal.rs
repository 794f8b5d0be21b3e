//! Terminal manager: commands spawned without a shell in their own process group.
//!
//! Policy (the ACP spec leaves these open):
//! - `command` is executed directly (looked up on `PATH`), with `args` passed verbatim: there is no
//!   shell, so no word splitting, globbing or redirection unless the agent runs `sh -c ...` itself.
//! - The host's environment is inherited and `env` is overlaid on it (later entries win).
//! - stdin is `/dev/null`; stdout and stderr share ONE pipe (on Unix), so the output reads as a
//!   terminal would show it, with both streams interleaved in the order they were written.
//! - Each command leads its own process group. `kill`, `release` and dropping the manager SIGKILL
//!   the whole group, and when the leader exits the rest of its group is killed too: nothing the
//!   command started in its group outlives it.
//! - Retained output is capped at `min(outputByteLimit, TerminalLimits::max_output_bytes)`; bytes
//!   are dropped from the front and the kept part starts on a UTF-8 character boundary.
//! - Once an exit status is visible (`output().exit_status`, `wait_for_exit`), the output has been
//!   read to its end, unless something that left the group held the pipe open for longer than
//!   [`DRAIN_TIMEOUT`] after the leader exited (its later output is not captured).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use process_wrap::tokio::ChildWrapper;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

/// How long output is still read after the command's leader exited (a process that escaped the
/// group may hold the pipe open forever).
pub const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// How long `kill`/`release` wait for the killed command's exit to be recorded.
const KILL_WAIT: Duration = Duration::from_secs(3);

/// Read buffer size for the output pipe.
const READ_CHUNK: usize = 8 * 1024;

/// Host-side bounds for terminals.
#[derive(Debug, Clone, Copy)]
pub struct TerminalLimits {
    /// Ceiling on retained output per terminal, whatever `outputByteLimit` the agent asks for.
    pub max_output_bytes: u64,
    /// Terminals alive at once (created and not yet released) per manager.
    pub max_terminals: usize,
}

impl Default for TerminalLimits {
    fn default() -> Self {
        Self {
            max_output_bytes: 1024 * 1024,
            max_terminals: 64,
        }
    }
}

/// A `terminal/create` request, already resolved by the caller (`cwd` absolute).
#[derive(Debug, Clone)]
pub struct CreateTerminal {
    pub session_id: String,
    pub command: String,
    pub args: Vec<String>,
    /// Overlaid on the inherited environment.
    pub env: Vec<(String, String)>,
    /// Working directory; an empty path means the host's current directory.
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

/// How a command ended (`terminal/wait_for_exit` result, `exitStatus` of `terminal/output`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TerminalExit {
    #[serde(rename = "exitCode")]
    pub exit_code: Option<u32>,
    /// Signal name such as `SIGKILL` when the command was killed by a signal.
    pub signal: Option<String>,
}

/// A `terminal/output` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutput {
    pub output: String,
    pub truncated: bool,
    /// Present once the command has exited.
    pub exit_status: Option<TerminalExit>,
}

/// Errors of the terminal manager.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TerminalError {
    /// Unknown or released id, or an id owned by another session.
    #[error("unknown terminal: {0}")]
    NotFound(String),
    /// The command could not be started.
    #[error("could not start `{command}`: {message}")]
    SpawnFailed { command: String, message: String },
    /// The manager already holds its maximum number of terminals.
    #[error("too many terminals (at most {0})")]
    TooMany(usize),
}

impl TerminalError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> &'static str {
        match self {
            TerminalError::NotFound(_) => "not_found",
            TerminalError::SpawnFailed { .. } => "spawn_failed",
            TerminalError::TooMany(_) => "too_many",
        }
    }
}

/// Retained output: at most `limit` bytes, the end of the stream, starting on a char boundary.
#[derive(Debug)]
struct OutputBuffer {
    data: VecDeque<u8>,
    limit: usize,
    truncated: bool,
}

impl OutputBuffer {
    fn new(limit: u64) -> Self {
        Self {
            data: VecDeque::new(),
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            truncated: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        // Never copy more than `limit` bytes of one chunk (the rest would be dropped anyway).
        let chunk = if chunk.len() > self.limit {
            self.truncated = true;
            let start = chunk.len() - self.limit;
            self.data.clear();
            &chunk[start..]
        } else {
            chunk
        };
        self.data.extend(chunk);
        if self.data.len() > self.limit {
            let excess = self.data.len() - self.limit;
            self.data.drain(..excess);
            self.truncated = true;
        }
        if self.truncated {
            // The cut may have split a character: drop its continuation bytes (at most 3 in valid
            // UTF-8; invalid input is decoded lossily anyway).
            let partial = self
                .data
                .iter()
                .take(3)
                .take_while(|b| (**b & 0xC0) == 0x80)
                .count();
            self.data.drain(..partial);
        }
    }

    fn snapshot(&self) -> (String, bool) {
        let (a, b) = self.data.as_slices();
        let text = if b.is_empty() {
            String::from_utf8_lossy(a).into_owned()
        } else {
            let mut bytes = Vec::with_capacity(a.len() + b.len());
            bytes.extend_from_slice(a);
            bytes.extend_from_slice(b);
            String::from_utf8_lossy(&bytes).into_owned()
        };
        (text, self.truncated)
    }
}

/// The process group of one command, and whether its leader has been reaped (after which we stop
/// signalling the group id from outside the supervisor).
#[derive(Debug)]
struct Group {
    pgid: u32,
    reaped: AtomicBool,
}

impl Group {
    /// SIGKILL the group unless the leader was already reaped.
    fn kill_if_running(&self) {
        if !self.reaped.load(Ordering::SeqCst) {
            kill_group(self.pgid);
        }
    }
}

/// Last reference gone (manager dropped and supervisor gone, e.g. at runtime shutdown): never let
/// the group outlive its handle.
impl Drop for Group {
    fn drop(&mut self) {
        self.kill_if_running();
    }
}

#[cfg(unix)]
fn kill_group(pgid: u32) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    let Ok(raw) = i32::try_from(pgid) else { return };
    if raw <= 1 {
        return; // never signal init's group or "every process"
    }
    // ESRCH (already gone) is normal.
    let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
}

#[cfg(not(unix))]
fn kill_group(_pgid: u32) {
    // On Windows the job object (kill-on-close) owns the tree; dropping the child kills it.
}

#[derive(Debug)]
struct Terminal {
    session_id: String,
    output: Mutex<OutputBuffer>,
    exit: watch::Sender<Option<TerminalExit>>,
    kill_requested: Notify,
    group: Group,
}

impl Terminal {
    fn exit_status(&self) -> Option<TerminalExit> {
        self.exit.borrow().clone()
    }

    fn buffer(&self) -> MutexGuard<'_, OutputBuffer> {
        self.output.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ask the supervisor to kill the group. It signals only while the leader is unreaped, so
    /// the group id cannot have been reused.
    fn request_kill(&self) {
        if self.exit.borrow().is_none() {
            self.kill_requested.notify_one();
        }
    }

    /// Wait (bounded) until the exit is recorded.
    async fn wait_recorded(&self, timeout: Duration) {
        let mut rx = self.exit.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
    }
}

#[derive(Debug, Default)]
struct State {
    terminals: HashMap<String, Arc<Terminal>>,
    /// Creates in progress (counted against `max_terminals`).
    pending: usize,
    next_id: u64,
}

#[derive(Debug)]
struct Inner {
    limits: TerminalLimits,
    state: Mutex<State>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Dropping the last manager clone kills every command still running.
impl Drop for Inner {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for term in state.terminals.values() {
            term.request_kill();
            // The runtime (and with it the supervisor) may be gone already: signal directly too.
            term.group.kill_if_running();
        }
    }
}

/// Runs and tracks the commands agents start with `terminal/create`. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TerminalManager {
    inner: Arc<Inner>,
}

type Reader = Pin<Box<dyn AsyncRead + Send>>;

impl TerminalManager {
    pub fn new(limits: TerminalLimits) -> Self {
        Self {
            inner: Arc::new(Inner {
                limits,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Spawn now (must be inside a tokio runtime). `env` overlays the inherited environment.
    /// stdout and stderr are both captured into one output buffer, read as bytes. Retained output
    /// is capped at `min(output_byte_limit, max_output_bytes)`, dropping bytes from the front so
    /// the kept part starts on a character boundary. Returns the new terminal id (`term_N`).
    ///
    /// Blocks for the fork and the command's `exec` (one thread forks every terminal), which a
    /// program file under someone's lease can hold for the kernel's `lease-break-time` (45 s):
    /// call it off the runtime's worker threads (`spawn_blocking`), as the host does.
    pub fn create(&self, req: CreateTerminal) -> Result<String, TerminalError> {
        let spawn_failed = |message: String| TerminalError::SpawnFailed {
            command: req.command.clone(),
            message,
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return Err(spawn_failed("no tokio runtime".into()));
        };
        if req.command.is_empty() {
            return Err(spawn_failed("command is empty".into()));
        }
        {
            let mut state = self.inner.state();
            let max = self.inner.limits.max_terminals;
            if state.terminals.len() + state.pending >= max {
                return Err(TerminalError::TooMany(max));
            }
            state.pending += 1;
        }
        let spawned = spawn(&req, &handle);
        let mut state = self.inner.state();
        state.pending -= 1;
        let (child, readers) = spawned.map_err(|e| spawn_failed(e.to_string()))?;

        let limit = req
            .output_byte_limit
            .unwrap_or(u64::MAX)
            .min(self.inner.limits.max_output_bytes);
        let term = Arc::new(Terminal {
            session_id: req.session_id,
            output: Mutex::new(OutputBuffer::new(limit)),
            exit: watch::Sender::new(None),
            kill_requested: Notify::new(),
            group: Group {
                pgid: child.id().unwrap_or(0),
                reaped: AtomicBool::new(false),
            },
        });
        state.next_id += 1;
        let id = format!("term_{}", state.next_id);
        state.terminals.insert(id.clone(), term.clone());
        drop(state);

        let mut pumps = JoinSet::new();
        for reader in readers {
            pumps.spawn_on(pump(reader, term.clone()), &handle);
        }
        handle.spawn(supervise(term, child, pumps));
        Ok(id)
    }

    fn get(&self, session_id: &str, terminal_id: &str) -> Result<Arc<Terminal>, TerminalError> {
        self.inner
            .state()
            .terminals
            .get(terminal_id)
            .filter(|t| t.session_id == session_id)
            .cloned()
            .ok_or_else(|| TerminalError::NotFound(terminal_id.to_owned()))
    }

    /// Current output; does not wait. `session_id` must own `terminal_id`, else `NotFound`.
    pub fn output(
        &self,
        session_id: &str,
        terminal_id: &str,
    ) -> Result<TerminalOutput, TerminalError> {
        let term = self.get(session_id, terminal_id)?;
        // Read the exit first: if it is set, the output below is complete.
        let exit_status = term.exit_status();
        let (output, truncated) = term.buffer().snapshot();
        Ok(TerminalOutput {
            output,
            truncated,
            exit_status,
        })
    }

    /// Resolves once the command has exited (and its output has been read).
    pub async fn wait_for_exit(
        &self,
        session_id: &str,
        terminal_id: &str,
    ) -> Result<TerminalExit, TerminalError> {
        let term = self.get(session_id, terminal_id)?;
        let mut rx = term.exit.subscribe();
        // `term` holds the sender, so the channel cannot close while we wait.
        let exit = match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone(),
            Err(_) => term.exit_status(),
        };
        Ok(exit.unwrap_or(TerminalExit {
            exit_code: None,
            signal: None,
        }))
    }

    /// SIGKILL the whole process group; the terminal stays valid (`output`, `wait_for_exit`).
    /// Returns once the exit is recorded (bounded wait).
    pub async fn kill(&self, session_id: &str, terminal_id: &str) -> Result<(), TerminalError> {
        let term = self.get(session_id, terminal_id)?;
        term.request_kill();
        term.wait_recorded(KILL_WAIT).await;
        Ok(())
    }

    /// Kill if running and free the terminal; the id is invalid afterwards.
    pub async fn release(&self, session_id: &str, terminal_id: &str) -> Result<(), TerminalError> {
        let term = {
            let mut state = self.inner.state();
            match state.terminals.get(terminal_id) {
                Some(t) if t.session_id == session_id => state.terminals.remove(terminal_id),
                _ => None,
            }
        }
        .ok_or_else(|| TerminalError::NotFound(terminal_id.to_owned()))?;
        term.request_kill();
        term.wait_recorded(KILL_WAIT).await;
        Ok(())
    }

    /// Kill and free every terminal of a session (the session closed).
    pub async fn release_session(&self, session_id: &str) {
        let released: Vec<Arc<Terminal>> = {
            let mut state = self.inner.state();
            let ids: Vec<String> = state
                .terminals
                .iter()
                .filter(|(_, t)| t.session_id == session_id)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| state.terminals.remove(id))
                .collect()
        };
        release_many(released).await;
    }

    /// Kill and free every terminal of the manager (agent or host gone).
    pub async fn release_all(&self) {
        let released: Vec<Arc<Terminal>> = {
            let mut state = self.inner.state();
            state.terminals.drain().map(|(_, t)| t).collect()
        };
        release_many(released).await;
    }

    /// Resolves when the terminal's process exits (for a `terminal_exited` event); `None` if the
    /// id is unknown.
    pub fn exit_notifier(
        &self,
        terminal_id: &str,
    ) -> Option<watch::Receiver<Option<TerminalExit>>> {
        self.inner
            .state()
            .terminals
            .get(terminal_id)
            .map(|t| t.exit.subscribe())
    }
}

async fn release_many(terms: Vec<Arc<Terminal>>) {
    for term in &terms {
        term.request_kill();
    }
    let deadline = tokio::time::Instant::now() + KILL_WAIT;
    for term in &terms {
        let mut rx = term.exit.subscribe();
        let _ = tokio::time::timeout_at(deadline, rx.wait_for(Option::is_some)).await;
    }
}

/// Spawn the command in a new process group with its output pipe(s).
fn spawn(
    req: &CreateTerminal,
    handle: &tokio::runtime::Handle,
) -> std::io::Result<(Box<dyn ChildWrapper>, Vec<Reader>)> {
    let _guard = handle.enter();
    let overlay = crate::transport::command::EnvOverlay {
        vars: req
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v.as_str())))
            .collect(),
    };
    let cwd = (!req.cwd.as_os_str().is_empty()).then_some(req.cwd.as_path());
    // Windows: found through PATH and PATHEXT; a batch file whose arguments cmd.exe would
    // interpret is refused here (a failed spawn naming the argument).
    let mut cmd = crate::transport::command::build(&req.command, &req.args, &overlay, cwd)
        .map_err(|e| match e {
            crate::transport::command::CommandError::Refused(r) => std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{}` {}", r.field, r.message),
            ),
            crate::transport::command::CommandError::Io(e) => e,
        })?;
    cmd.stdin(Stdio::null());
    for (k, v) in &req.env {
        cmd.env(k, v);
    }
    guard_git(&mut cmd, &req.env);
    if !req.cwd.as_os_str().is_empty() {
        cmd.current_dir(&req.cwd);
    }
    let mut readers = attach_output(&mut cmd)?;
    // `spawn_in_group` consumes the command, dropping our copies of the pipe's write end: the
    // reader then sees end-of-file when the command (and its children) are done.
    let mut child = crate::transport::spawn_in_group(cmd, crate::transport::Spawner::Terminals)?;
    if let Some(out) = child.stdout().take() {
        readers.push(Box::pin(out));
    }
    if let Some(err) = child.stderr().take() {
        readers.push(Box::pin(err));
    }
    Ok((child, readers))
}

/// Git run in a terminal never takes a directory for a bare repository by itself
/// (`safe.bareRepository=explicit`, git 2.38+; older gits ignore it): a workspace directory
/// holding `HEAD`, `config` and `objects/` (however it got there) cannot make an allowed
/// `git status` run that `config`'s `core.fsmonitor`. Set as command-line configuration
/// (`GIT_CONFIG_COUNT`, which repository config cannot override), appended after any the process
/// inherits or the request sets, so it is the last word. A count git cannot parse is left alone:
/// git then refuses to run at all.
fn guard_git(cmd: &mut tokio::process::Command, overlay: &[(String, String)]) {
    const COUNT: &str = "GIT_CONFIG_COUNT";
    let set = overlay
        .iter()
        .rev()
        // Names are case-insensitive on Windows only: elsewhere `git_config_count` is not git's.
        .find(|(k, _)| {
            if cfg!(windows) {
                k.eq_ignore_ascii_case(COUNT)
            } else {
                k == COUNT
            }
        })
        .map(|(_, v)| v.clone());
    let n = match set.or_else(|| std::env::var(COUNT).ok()) {
        None => 0,
        Some(v) if v.trim().is_empty() => 0,
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) => n,
            Err(_) => return,
        },
    };
    cmd.env(format!("GIT_CONFIG_KEY_{n}"), "safe.bareRepository");
    cmd.env(format!("GIT_CONFIG_VALUE_{n}"), "explicit");
    cmd.env(COUNT, (n + 1).to_string());
}

/// Unix: stdout and stderr are the same pipe, so the output interleaves as on a terminal.
#[cfg(unix)]
fn attach_output(cmd: &mut tokio::process::Command) -> std::io::Result<Vec<Reader>> {
    let (reader, writer) = std::io::pipe()?;
    cmd.stdout(writer.try_clone()?).stderr(writer);
    let fd: std::os::fd::OwnedFd = reader.into();
    let reader = tokio::process::ChildStdout::from_std(std::process::ChildStdout::from(fd))?;
    Ok(vec![Box::pin(reader)])
}

/// Elsewhere: two pipes, both read into the same buffer.
#[cfg(not(unix))]
fn attach_output(cmd: &mut tokio::process::Command) -> std::io::Result<Vec<Reader>> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    Ok(Vec::new())
}

/// Read one output stream into the terminal's buffer until end-of-file.
async fn pump(mut reader: Reader, term: Arc<Terminal>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => term.buffer().push(&buf[..n]),
        }
    }
}

/// Owns the child: waits for the leader (killing the group on request), kills what the leader
/// left in its group, drains the output (bounded), then records the exit.
async fn supervise(term: Arc<Terminal>, mut child: Box<dyn ChildWrapper>, mut pumps: JoinSet<()>) {
    let status = loop {
        let outcome = {
            // Wait for the leader only: the group wrapper's own `wait` also waits for group
            // members that are our children, which a kill request must be able to interrupt.
            let leader = child.inner_mut().wait();
            tokio::select! {
                status = leader => Some(status),
                () = term.kill_requested.notified() => None,
            }
        };
        match outcome {
            Some(status) => break status,
            // The leader is not reaped yet, so the group id is still ours to signal.
            None => {
                let _ = child.start_kill();
            }
        }
    };
    term.group.reaped.store(true, Ordering::SeqCst);
    // Whatever the command left in its group is orphaned now: kill it (process group on Unix,
    // the job on Windows).
    let _ = child.start_kill();

    // Read what is left in the pipe; something that escaped the group may hold it open forever.
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while pumps.join_next().await.is_some() {}
    })
    .await;
    // Stop reading (and wait until no pump can still append) before the exit becomes visible.
    pumps.shutdown().await;

    let exit = match status {
        Ok(status) => exit_of(status),
        Err(_) => TerminalExit {
            exit_code: None,
            signal: None,
        },
    };
    term.exit.send_replace(Some(exit));

    // Reap group members that are our own children (only if we are a subreaper); bounded.
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, child.wait()).await;
}

fn exit_of(status: std::process::ExitStatus) -> TerminalExit {
    #[cfg(unix)]
    let signal = {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(signal_name)
    };
    #[cfg(not(unix))]
    let signal = None;
    TerminalExit {
        // Windows reports its unsigned exit codes through an i32; keep the bits.
        exit_code: status.code().map(|c| u32::from_ne_bytes(c.to_ne_bytes())),
        signal,
    }
}

#[cfg(unix)]
fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

#[cfg(test)]
mod tests {
    use super::OutputBuffer;

    fn git_env(overlay: &[(&str, &str)]) -> Vec<(String, String)> {
        let overlay: Vec<(String, String)> = overlay
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut cmd = tokio::process::Command::new("git");
        for (k, v) in &overlay {
            cmd.env(k, v);
        }
        super::guard_git(&mut cmd, &overlay);
        let mut env: Vec<(String, String)> = cmd
            .as_std()
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
            .filter(|(k, _)| k.starts_with("GIT_CONFIG"))
            .collect();
        env.sort();
        env
    }

    #[test]
    fn git_is_told_to_ignore_implicit_bare_repositories_last() {
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        // Whatever the host inherited, a count set for the request (an allow rule let it) is
        // appended to, never replaced.
        assert_eq!(
            git_env(&[
                ("GIT_CONFIG_COUNT", "2"),
                ("GIT_CONFIG_KEY_0", "a.b"),
                ("GIT_CONFIG_VALUE_0", "1"),
                ("GIT_CONFIG_KEY_1", "safe.bareRepository"),
                ("GIT_CONFIG_VALUE_1", "all"),
            ]),
            vec![
                pair("GIT_CONFIG_COUNT", "3"),
                pair("GIT_CONFIG_KEY_0", "a.b"),
                pair("GIT_CONFIG_KEY_1", "safe.bareRepository"),
                pair("GIT_CONFIG_KEY_2", "safe.bareRepository"),
                pair("GIT_CONFIG_VALUE_0", "1"),
                pair("GIT_CONFIG_VALUE_1", "all"),
                pair("GIT_CONFIG_VALUE_2", "explicit"),
            ]
        );
        // A count git cannot parse is left for git to refuse.
        assert_eq!(
            git_env(&[("GIT_CONFIG_COUNT", "x")]),
            vec![pair("GIT_CONFIG_COUNT", "x")]
        );
        // Off Windows a lower-case name is another variable: it does not switch the guard off.
        #[cfg(not(windows))]
        assert!(
            git_env(&[("git_config_count", "x")]).contains(&pair("GIT_CONFIG_VALUE_0", "explicit"))
        );
    }

    fn feed(limit: u64, data: &[u8], chunk: usize) -> (String, bool) {
        let mut buf = OutputBuffer::new(limit);
        for c in data.chunks(chunk.max(1)) {
            buf.push(c);
        }
        buf.snapshot()
    }

    #[test]
    fn keeps_end_on_char_boundary_for_any_chunking() {
        let text = "aé€😀b".repeat(50);
        for limit in 0..40u64 {
            for chunk in 1..12 {
                let (out, truncated) = feed(limit, text.as_bytes(), chunk);
                assert!(truncated);
                assert!(out.len() as u64 <= limit, "limit {limit} chunk {chunk}");
                assert!(out.len() as u64 + 3 >= limit, "limit {limit} chunk {chunk}");
                assert!(text.ends_with(&out), "limit {limit} chunk {chunk}: {out:?}");
            }
        }
    }

    #[test]
    fn no_truncation_when_it_fits() {
        let (out, truncated) = feed(6, b"hello\n", 2);
        assert_eq!(out, "hello\n");
        assert!(!truncated);
        let (out, truncated) = feed(100, "é€".as_bytes(), 1);
        assert_eq!(out, "é€");
        assert!(!truncated);
    }
}

//! Spawning the agent in its own process group, watching it exit, and the shutdown ladder.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use tokio::sync::watch;

use super::stderr::{StderrTail, drain_stderr};
use super::{AgentSpec, Spawner, Transport};
use crate::error::{Error, ExitInfo};

/// Exit code and signal of a finished process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// The process group and whether its leader has been reaped (after which we stop signalling it).
#[derive(Debug)]
struct GroupGuard {
    #[cfg_attr(windows, allow(dead_code))]
    pgid: u32,
    reaped: AtomicBool,
    /// Windows: the job can only be terminated through the child wrapper, which the supervisor
    /// task owns; a kill is a request to that task.
    #[cfg(windows)]
    kill: tokio::sync::Notify,
}

impl GroupGuard {
    #[cfg(unix)]
    fn signal(&self, sig: GroupSignal) {
        signal_group(self.pgid, sig);
    }

    /// No SIGTERM on Windows (a console control event needs a console the agent does not
    /// have): either request terminates the whole job.
    #[cfg(windows)]
    fn signal(&self, _sig: GroupSignal) {
        self.kill.notify_one();
    }

    #[cfg(not(any(unix, windows)))]
    fn signal(&self, _sig: GroupSignal) {}
}

/// Dropping the process handle (agent dropped, host dropped, runtime shut down) kills the group:
/// an agent never outlives its host object.
impl Drop for AgentProcess {
    fn drop(&mut self) {
        if !self.guard.reaped.load(Ordering::SeqCst) {
            self.guard.signal(GroupSignal::Kill);
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum GroupSignal {
    #[cfg_attr(windows, allow(dead_code))]
    Term,
    Kill,
}

#[cfg(unix)]
fn signal_group(pgid: u32, sig: GroupSignal) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    let Ok(raw) = i32::try_from(pgid) else { return };
    if raw <= 1 {
        return; // never signal init's group or "every process"
    }
    let sig = match sig {
        GroupSignal::Term => Signal::SIGTERM,
        GroupSignal::Kill => Signal::SIGKILL,
    };
    // ESRCH (already gone) is the normal case late in the ladder.
    let _ = killpg(Pid::from_raw(raw), sig);
}

/// A running agent process.
#[derive(Debug)]
pub(crate) struct AgentProcess {
    pub pid: u32,
    exit: watch::Receiver<Option<RawExit>>,
    pub tail: StderrTail,
    guard: Arc<GroupGuard>,
}

impl AgentProcess {
    /// A receiver that changes once the process has exited.
    pub fn exit_watch(&self) -> watch::Receiver<Option<RawExit>> {
        self.exit.clone()
    }

    /// Wait up to `timeout` for the process to exit.
    pub async fn wait_exit(&self, timeout: Duration) -> Option<RawExit> {
        let mut rx = self.exit.clone();
        let waited = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(v)) => *v,
            _ => *self.exit.borrow(),
        }
    }

    pub fn signal(&self, sig: GroupSignal) {
        if !self.guard.reaped.load(Ordering::SeqCst) {
            self.guard.signal(sig);
        }
    }

    /// The shutdown ladder, to be called after stdin was closed:
    /// grace → SIGTERM to the group → grace → SIGKILL to the group; on Windows
    /// grace → `TerminateJobObject` (the agent and everything it started).
    pub async fn shutdown(&self, grace: Duration) -> Option<RawExit> {
        if let Some(exit) = self.wait_exit(grace).await {
            return Some(exit);
        }
        #[cfg(not(windows))]
        {
            tracing::debug!(
                pid = self.pid,
                "agent ignored stdin EOF; sending SIGTERM to its group"
            );
            self.signal(GroupSignal::Term);
            if let Some(exit) = self.wait_exit(grace).await {
                return Some(exit);
            }
            tracing::debug!(
                pid = self.pid,
                "agent ignored SIGTERM; sending SIGKILL to its group"
            );
        }
        #[cfg(windows)]
        tracing::debug!(
            pid = self.pid,
            "agent ignored stdin EOF; terminating its job"
        );
        self.signal(GroupSignal::Kill);
        self.wait_exit(Duration::from_secs(5)).await
    }

    pub fn exit_info(&self, exit: Option<RawExit>) -> ExitInfo {
        ExitInfo {
            code: exit.and_then(|e| e.code),
            signal: exit.and_then(|e| e.signal).map(signal_name),
            stderr_tail: self.tail.snapshot(),
        }
    }
}

#[cfg(unix)]
fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

#[cfg(not(unix))]
fn signal_name(sig: i32) -> String {
    format!("signal {sig}")
}

fn raw_exit(status: std::process::ExitStatus) -> RawExit {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        RawExit {
            code: status.code(),
            signal: status.signal(),
        }
    }
    #[cfg(not(unix))]
    {
        RawExit {
            code: status.code(),
            signal: None,
        }
    }
}

/// Spawn `cmd` as the leader of a new process group (a job object on Windows), killed on drop and
/// when the host dies. Shared by agents and terminals: whatever it starts can be taken down as a
/// whole. Must be called inside a tokio runtime (the child is registered with it).
///
/// Host death: on Linux the leader gets `PR_SET_PDEATHSIG` = SIGKILL (forked from the spawner
/// thread, which lives as long as the process); on Unix a reaper in the group SIGKILLs the whole
/// group (`reaper.rs`); on Windows the job object is `KILL_ON_JOB_CLOSE` and the kernel closes the
/// host's job handle when the host dies.
///
/// Windows: process-wrap's `JobObject` (10.0.1, read in its source: `windows.rs`
/// `job_creation_flags`, `make_job_object`, `resume_threads`) spawns with `CREATE_SUSPENDED`,
/// assigns the process to a new job (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, set because
/// `KillOnDrop` is registered) and only then resumes its threads, so the agent runs no
/// instruction outside the job and whatever it starts is in the job too. The job handle is not
/// inheritable and is held by the child wrapper alone: the kernel closes it when the host
/// exits, crashes or is killed, which kills the job. `CREATE_NO_WINDOW`: a GUI host (an IDE)
/// gets no console window per agent or terminal.
pub(crate) fn spawn_in_group(
    cmd: tokio::process::Command,
    which: Spawner,
) -> std::io::Result<Box<dyn ChildWrapper>> {
    #[cfg(target_os = "linux")]
    let cmd = {
        let mut cmd = cmd;
        super::pdeathsig::die_with_host(&mut cmd);
        cmd
    };
    let spawn = move || {
        let mut wrap = CommandWrap::from(cmd);
        #[cfg(unix)]
        wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
        #[cfg(windows)]
        {
            use windows::Win32::System::Threading::CREATE_NO_WINDOW;
            wrap.wrap(process_wrap::tokio::CreationFlags(CREATE_NO_WINDOW));
            wrap.wrap(process_wrap::tokio::JobObject);
        }
        wrap.wrap(KillOnDrop);
        let child = wrap.spawn();
        // Close our copies of the child's pipe ends before the caller sees the child.
        drop(wrap);
        child
    };
    // The reaper joins the group right after the spawn: on Linux on the spawner thread once the
    // caller has its child (starting the shell, a fork and an exec waited for, was a third of the
    // time from spawn to a first session); elsewhere here.
    #[cfg(target_os = "linux")]
    let child = super::spawner::on_spawner_thread(which, spawn, super::reaper::attach)?;
    #[cfg(not(target_os = "linux"))]
    let child = {
        let _ = which;
        spawn()?
    };
    #[cfg(all(unix, not(target_os = "linux")))]
    if let Some(pgid) = child.id() {
        super::reaper::attach(pgid);
    }
    Ok(child)
}

/// stderr lines in flight to the connection (then the agent's stderr pipe carries backpressure).
const STDERR_QUEUE: usize = 64;

/// Spawn `spec` with piped stdio in a new process group; start the stderr drain and the exit
/// supervisor.
pub(crate) fn spawn_agent(
    spec: &AgentSpec,
    agent: u64,
    stderr_tail_bytes: usize,
) -> Result<Transport, Error> {
    if spec.command.is_empty() {
        return Err(Error::InvalidArgument("agent command is empty".into()));
    }
    // Checked first: a missing cwd would fail the spawn as if the command were missing.
    if let Some(why) = spec.cwd.as_deref().and_then(super::unusable_dir) {
        return Err(Error::InvalidConfig {
            path: "cwd".into(),
            message: format!("the agent's working directory {why}"),
        });
    }
    let overlay = super::command::EnvOverlay {
        vars: spec
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect(),
    };
    let mut cmd = super::command::build(&spec.command, &spec.args, &overlay, spec.cwd.as_deref())
        .map_err(|e| match e {
        super::command::CommandError::Refused(r) => Error::InvalidConfig {
            message: format!("the agent's `{}` {}", r.field, r.message),
            path: r.field,
        },
        super::command::CommandError::Io(e) => Error::SpawnFailed {
            command: spec.display(),
            message: e.to_string(),
        },
    })?;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &spec.env {
        match v {
            Some(v) => {
                cmd.env(k, v);
            }
            None => {
                cmd.env_remove(k);
            }
        }
    }
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let mut child = spawn_in_group(cmd, Spawner::Agents).map_err(|e| Error::SpawnFailed {
        command: spec.display(),
        message: e.to_string(),
    })?;
    let pid = child.id().unwrap_or(0);
    let guard = Arc::new(GroupGuard {
        pgid: pid,
        reaped: AtomicBool::new(false),
        #[cfg(windows)]
        kill: tokio::sync::Notify::new(),
    });

    let (Some(stdin), Some(stdout), Some(stderr)) = (
        child.stdin().take(),
        child.stdout().take(),
        child.stderr().take(),
    ) else {
        return Err(Error::SpawnFailed {
            command: spec.display(),
            message: "stdio pipes unavailable".into(),
        });
    };

    let tail = StderrTail::new(stderr_tail_bytes);
    let (stderr_tx, stderr_rx) = tokio::sync::mpsc::channel(STDERR_QUEUE);
    {
        let tail = tail.clone();
        tokio::spawn(async move {
            drain_stderr(stderr, tail, stderr_tx, agent).await;
        });
    }

    let (exit_tx, exit) = watch::channel(None);
    {
        let guard = guard.clone();
        tokio::spawn(async move {
            // The supervisor owns the child: when it is dropped (runtime shutdown), kill-on-drop
            // and the group guard fire.
            // Wait for the leader only: the group wrapper's own `wait` also waits for group
            // members that are our children (a subreaper host), which may never exit by
            // themselves.
            #[cfg(not(windows))]
            let status = child.inner_mut().wait().await;
            // Windows: this task owns the job, so it serves the ladder's and the drop's kill
            // requests (`TerminateJobObject`) while it waits.
            #[cfg(windows)]
            let status = loop {
                tokio::select! {
                    status = child.inner_mut().wait() => break status,
                    () = guard.kill.notified() => {}
                }
                let _ = child.start_kill();
            };
            let raw = match status {
                Ok(s) => raw_exit(s),
                Err(_) => RawExit {
                    code: None,
                    signal: None,
                },
            };
            // Whatever the agent left in its group is orphaned now: kill it while the group id is
            // still reserved by those members (so it cannot have been reused).
            guard.signal(GroupSignal::Kill);
            #[cfg(windows)]
            let _ = child.start_kill();
            guard.reaped.store(true, Ordering::SeqCst);
            let _ = exit_tx.send(Some(raw));
            // Reap group members that are our own children (only if we are a subreaper); bounded.
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        });
    }

    Ok(Transport {
        reader: Box::pin(stdout),
        writer: Box::pin(stdin),
        process: Some(AgentProcess {
            pid,
            exit,
            tail,
            guard,
        }),
        stderr: Some(stderr_rx),
    })
}

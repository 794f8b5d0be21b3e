//! The supervisor: an opt-in restart policy per spawned agent ([`AgentSpec::restart`]).
//!
//! When the agent's process ends without being asked to (a crash, an exit on its own, a kill from
//! outside), the connection fails every call in flight at once with `agent_exited` and emits
//! `session_closed` / `agent_exited` as for any agent. Then this task, one per supervised agent:
//!
//! 1. emits `agent_restarting` (attempt, delay, why), waits the backoff, spawns the spec again
//!    as the same agent id and performs the handshake;
//! 2. reopens every session the embedder opened and did not close: `session/resume` when the new
//!    process advertises it, else `session/load` (its replay arrives as `replay: true` updates),
//!    else the session is reported `session_lost`; a session the agent refuses to reopen is lost
//!    too;
//! 3. makes the new process the agent's connection (the embedder's `Agent` and `Session` handles
//!    now reach it) and emits `agent_restarted` with what was recovered and what was lost.
//!
//! A restart that fails (spawn error, failed handshake, the new process dying during recovery)
//! is the next attempt; after `max_restarts` consecutive attempts the task emits `agent_failed`
//! (terminal: the agent stays down) and ends. An agent that ran for `reset_after` since its last
//! (re)start counts as healthy again: the attempt count starts over. Calls made while a restart is
//! under way fail with `agent_exited` (the dead process's status): retry after `agent_restarted`.
//!
//! The task holds the agent weakly: dropping every handle ends the agent as for any agent, and
//! [`Agent::shutdown`] stops the task (a process being started is shut down) before returning.

use std::sync::Arc;
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::agent::SessionOptions;
use crate::agent::{Agent, AgentInner, Link};
use crate::connection::AgentShared;
use crate::error::{Error, Result};
use crate::events::{EventKind, PendingEvent, raw_json};

/// How a supervised agent is restarted. `Default`: 3 attempts, 250 ms first delay doubling up
/// to 10 s, healthy again after 60 s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Consecutive restart attempts before giving up (`agent_failed`). 0 = never restart, but
    /// still report `agent_failed` when the process dies.
    pub max_restarts: u32,
    /// Delay before the first attempt; each further consecutive attempt doubles it.
    pub backoff: Duration,
    /// Upper bound of the delay.
    pub max_backoff: Duration,
    /// A process that ran at least this long since its (re)start was healthy: the next crash
    /// starts counting attempts from 1 again.
    pub reset_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            max_restarts: 3,
            backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(10),
            reset_after: Duration::from_secs(60),
        }
    }
}

impl RestartPolicy {
    /// The delay before attempt `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }

    /// Parse the faces' JSON form `{"maxRestarts", "backoffMs", "maxBackoffMs", "resetAfterMs"}`
    /// (every field optional, defaults as [`RestartPolicy::default`]), checked by the option
    /// table (errors at `restart.<field>`; docs/OPTIONS.md).
    pub fn from_json(v: &Value) -> Result<RestartPolicy> {
        crate::options::restart(v, crate::options::Face::Rust)
    }
}

/// What the agent holds of its supervisor: a way to stop it.
#[derive(Debug)]
pub(crate) struct Supervision {
    ctl: Arc<Ctl>,
    task: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Ctl {
    stopping: AtomicBool,
    stop: Notify,
    gave_up: AtomicBool,
    /// The process the supervisor acts on when it ends (the running one, or an attempt's).
    current: std::sync::Mutex<Option<Arc<AgentShared>>>,
}

impl Supervision {
    /// Stop restarting; returns once the task has ended (a process it was starting is down).
    pub(crate) async fn stop(self) {
        self.ctl.stopping.store(true, Ordering::SeqCst);
        // From here an end of the current process is final (no `restart` mark).
        if let Some(shared) = self.ctl.current.lock().ok().and_then(|c| c.clone()) {
            shared.supervised.store(false, Ordering::SeqCst);
        }
        self.ctl.stop.notify_waiters();
        let _ = self.task.await;
    }

    pub(crate) fn gave_up(&self) -> bool {
        self.ctl.gave_up.load(Ordering::SeqCst)
    }
}

/// Start supervising `agent` (called once its first handshake succeeded).
pub(crate) fn supervise(agent: &Agent, policy: RestartPolicy) {
    let ctl = Arc::new(Ctl::default());
    ctl.watch(&agent.link().shared);
    let task = tokio::spawn(run(agent.downgrade(), agent.id(), ctl.clone(), policy));
    if let Ok(mut s) = agent.inner_supervision().lock() {
        *s = Some(Supervision { ctl, task });
    }
}

impl Ctl {
    /// `shared`'s end is the supervisor's to act on (unless a stop came first).
    fn watch(&self, shared: &Arc<AgentShared>) {
        if let Ok(mut current) = self.current.lock() {
            shared.supervised.store(!self.stopping(), Ordering::SeqCst);
            *current = Some(shared.clone());
        }
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Resolves once `stop` was asked (at once if it already was).
    async fn stopped(&self) {
        loop {
            let woken = self.stop.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.stopping() {
                return;
            }
            woken.await;
        }
    }
}

/// How one restart attempt ended.
enum Attempt {
    /// The new process runs and is the agent's connection.
    Up,
    /// It failed; the next attempt follows (with this error).
    Failed(Error),
    /// Stop: shut down, every handle dropped, or the host gone.
    Stop,
}

async fn run(weak: Weak<AgentInner>, id: u64, ctl: Arc<Ctl>, policy: RestartPolicy) {
    let mut latest = None;
    let failed = supervise_loop(&weak, id, &ctl, &policy, &mut latest).await;
    // The last process's end was reported with `"restart": true` and no restart or
    // `agent_failed` follows (a stop, every handle dropped): mark the agent's end. Emitted from a
    // task of its own, so an embedder that does not pull events cannot make `shutdown` wait.
    if let (false, Some(link)) = (failed, latest)
        && link.shared.exit.get().is_some()
        && link.shared.restart_announced.load(Ordering::SeqCst)
    {
        let info = link.shared.exit.get().cloned().unwrap_or_default();
        let data = serde_json::json!({
            "reason": "shutdown",
            "exitCode": info.code,
            "signal": info.signal,
            "stderrTail": info.stderr_tail,
        });
        tokio::spawn(async move {
            link.emit(vec![event(id, EventKind::AgentExited, &data)])
                .await;
        });
    }
}

/// Restart the agent each time its process ends, until a stop, every handle dropped, the host
/// gone, or giving up (then `true`: `agent_failed` was emitted). `latest`: the last process
/// whose end is the supervisor's to report.
async fn supervise_loop(
    weak: &Weak<AgentInner>,
    id: u64,
    ctl: &Ctl,
    policy: &RestartPolicy,
    latest: &mut Option<Link>,
) -> bool {
    let mut attempts = 0u32;
    let mut started = Instant::now();
    loop {
        // Wait for the current process to end, holding neither the agent nor its command
        // channel: dropping every handle must still end the agent.
        let Some((shared, cmd)) = weak.upgrade().map(|a| {
            let link = Agent::from_inner(a).link();
            (link.shared, link.cmd.downgrade())
        }) else {
            return false;
        };
        tokio::select! {
            () = exited(&shared) => {}
            () = ctl.stopped() => return false,
        }
        let Some(cmd) = cmd.upgrade() else {
            return false;
        };
        let link = Link { cmd, shared };
        *latest = Some(link.clone());
        if ctl.stopping() {
            return false;
        }
        let Some(agent) = weak.upgrade().map(Agent::from_inner) else {
            return false;
        };
        if agent.owner().is_none() {
            return false;
        }
        if started.elapsed() >= policy.reset_after {
            attempts = 0;
        }
        let mut why = link
            .shared
            .exit
            .get()
            .cloned()
            .map(Error::AgentExited)
            .unwrap_or_else(crate::agent::closed);
        // The sessions to reopen are fixed at the crash: every attempt tries all of them.
        let sessions = agent.opened_sessions();
        drop(agent);
        // Everything the dead connection emitted (`session_closed`, `agent_exited`) comes first.
        let mut last = link;
        loop {
            if attempts >= policy.max_restarts {
                ctl.gave_up.store(true, Ordering::SeqCst);
                let data = serde_json::json!({ "attempts": attempts, "error": why.to_json() });
                return emit(&last, ctl, vec![event(id, EventKind::AgentFailed, &data)]).await;
            }
            attempts += 1;
            let delay = policy.delay(attempts);
            let data = serde_json::json!({
                "attempt": attempts,
                "maxRestarts": policy.max_restarts,
                "delayMs": u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                "error": why.to_json(),
            });
            if !emit(
                &last,
                ctl,
                vec![event(id, EventKind::AgentRestarting, &data)],
            )
            .await
            {
                return false;
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = ctl.stopped() => return false,
            }
            match attempt(weak, id, ctl, &sessions, attempts, &mut last, latest).await {
                Attempt::Up => {
                    started = Instant::now();
                    break;
                }
                Attempt::Failed(e) => why = e,
                Attempt::Stop => return false,
            }
        }
    }
}

/// One restart: spawn, handshake, recover the sessions, install, `agent_restarted`. `last` is the
/// connection whose events the next ones must follow (the failed attempt's, if it got that far).
async fn attempt(
    weak: &Weak<AgentInner>,
    id: u64,
    ctl: &Ctl,
    sessions: &[(Arc<str>, SessionOptions)],
    attempt: u32,
    last: &mut Link,
    latest: &mut Option<Link>,
) -> Attempt {
    let Some(agent) = weak.upgrade().map(Agent::from_inner) else {
        return Attempt::Stop;
    };
    let (Some(host), Some(spec)) = (agent.owner(), agent.spec().cloned()) else {
        return Attempt::Stop;
    };
    let fresh = match host.respawn(id, &spec) {
        Ok(fresh) => fresh,
        Err(e) => return Attempt::Failed(e),
    };
    // Its end (a failed handshake, a death during recovery) is the supervisor's to act on.
    ctl.watch(&fresh.link().shared);
    *latest = Some(fresh.link());
    // The agent is held from here to the end of this attempt (bounded by the handshake's and
    // the reopen calls' timeouts); a stop request shuts the new process down at once.
    let work = async {
        host.handshake(&fresh).await?;
        let mut recovered = Vec::new();
        let mut lost = Vec::new();
        for (session, options) in sessions {
            match reopen(&fresh, session, options).await {
                Ok(via) => {
                    recovered.push(serde_json::json!({ "sessionId": &**session, "via": via }));
                }
                // The new process died: this attempt failed.
                Err(e) if fresh.exit_info().is_some() => return Err(e),
                Err(e) => lost.push((session.clone(), e)),
            }
        }
        Ok((recovered, lost))
    };
    let outcome = tokio::select! {
        r = work => r,
        () = ctl.stopped() => {
            fresh.shutdown().await;
            return Attempt::Stop;
        }
    };
    *last = fresh.link();
    let (recovered, lost) = match outcome {
        Ok(x) => x,
        Err(e) => {
            fresh.shutdown().await;
            return Attempt::Failed(e);
        }
    };
    if ctl.stopping() {
        fresh.shutdown().await;
        return Attempt::Stop;
    }
    let mut events = Vec::new();
    for (session, error) in &lost {
        agent.forget_session(session);
        let data = serde_json::json!({ "sessionId": &**session, "error": error.to_json() });
        events.push(event(id, EventKind::SessionLost, &data).session(Some(session.clone())));
    }
    let data = serde_json::json!({
        "attempt": attempt,
        "pid": fresh.pid(),
        "recovered": recovered,
        "lost": lost.iter().map(|(session, _)| &**session).collect::<Vec<_>>(),
    });
    events.push(event(id, EventKind::AgentRestarted, &data));
    agent.set_link(fresh.link());
    // The agent works again already; the events follow the new process's own (`agent_ready`,
    // `session_opened`).
    emit(last, ctl, events).await;
    Attempt::Up
}

/// Reopen one session on the new process: resume, else load, else lost.
async fn reopen(fresh: &Agent, id: &str, options: &SessionOptions) -> Result<&'static str> {
    let info = fresh.require_info()?;
    let resume = info.session_capability("resume");
    if resume {
        match fresh.resume_session(id, options.clone()).await {
            Ok(_) => return Ok("resume"),
            Err(e) if fresh.exit_info().is_some() || !info.supports_load() => {
                return Err(e);
            }
            Err(_) => {}
        }
    }
    if info.supports_load() {
        fresh.load_session(id, options.clone()).await?;
        return Ok("load");
    }
    Err(Error::Unsupported(
        "the restarted agent advertises neither session/resume nor session/load".into(),
    ))
}

/// Resolves once the process of a connection has ended.
async fn exited(shared: &AgentShared) {
    loop {
        let woken = shared.exited.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if shared.exit.get().is_some() {
            return;
        }
        woken.await;
    }
}

/// Queue `events` after `link`'s; `false` if a stop came first (an embedder not pulling events
/// must not make `shutdown` wait).
async fn emit(link: &Link, ctl: &Ctl, events: Vec<PendingEvent>) -> bool {
    tokio::select! {
        () = link.emit(events) => true,
        () = ctl.stopped() => false,
    }
}

fn event(agent: u64, kind: EventKind, data: &Value) -> PendingEvent {
    PendingEvent::new(agent, kind, raw_json(data))
}

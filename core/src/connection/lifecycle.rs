//! The end of a connection: the agent's stdout closing, shutdown, and the last events.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use tokio::sync::mpsc;

use super::{Actor, Gone, ReaderMsg, ReqCtx, io, recv_stderr, sorted};
use crate::error::{Error, ExitInfo};
use crate::events::{EventKind, raw_json};
use crate::permission::DecidedBy;

impl Actor {
    /// The agent's stdout ended (or the process exited and the grace elapsed).
    pub(super) async fn agent_gone(&mut self) {
        if self.gone.is_some() {
            return;
        }
        self.flush();
        let info = match &self.process {
            Some(p) => {
                let mut exit = p.wait_exit(Duration::from_millis(500)).await;
                if exit.is_none() {
                    // stdout closed but the process lingers: take it down.
                    self.out.close();
                    exit = p.shutdown(self.host.config.shutdown_grace).await;
                }
                exit
            }
            None => None,
        };
        self.drain_stderr(Duration::from_millis(500)).await;
        let info = match &self.process {
            Some(p) => p.exit_info(info),
            None => ExitInfo::default(),
        };
        self.finish(Gone::Exited(info), "exited").await;
    }

    /// Orderly shutdown requested by the embedder (or the host going away).
    pub(super) async fn shutdown(&mut self, reader_rx: &mut mpsc::Receiver<io::Batch>) {
        if self.gone.is_some() {
            return;
        }
        self.flush();
        self.out.close();
        let grace = self.host.config.shutdown_grace;
        // Run the ladder while still taking what the agent writes meanwhile (in order, as usual):
        // an agent blocked on a full stdout pipe could not see its stdin close.
        let process = self.process.take();
        let bus = self.host.bus.clone();
        let info = {
            let ladder = async {
                match &process {
                    Some(p) => {
                        let exit = p.shutdown(grace).await;
                        p.exit_info(exit)
                    }
                    None => {
                        tokio::time::sleep(grace).await;
                        ExitInfo::default()
                    }
                }
            };
            tokio::pin!(ladder);
            loop {
                self.flush();
                let backlogged = self.backlogged();
                tokio::select! {
                    info = &mut ladder => break info,
                    () = bus.wait_room(), if backlogged => {}
                    Some(ev) = recv_stderr(&mut self.stderr), if !backlogged => self.emit(ev).await,
                    batch = reader_rx.recv(), if self.reader_open && !backlogged => match batch {
                        Some(mut batch) => {
                            let msgs = std::mem::take(&mut batch.msgs);
                            self.attach_batch(&mut batch);
                            for msg in msgs {
                                match msg {
                                    ReaderMsg::Eof(_) => self.reader_open = false,
                                    other => self.on_reader(other, batch.arrival()).await,
                                }
                            }
                        }
                        None => self.reader_open = false,
                    },
                }
                if process.is_none() && !self.reader_open {
                    break ExitInfo::default();
                }
            }
        };
        self.drain_stderr(Duration::from_millis(200)).await;
        let info = match &process {
            // The tail may have grown while stderr was drained.
            Some(p) => ExitInfo {
                stderr_tail: p.exit_info(None).stderr_tail,
                ..info
            },
            None => info,
        };
        self.process = process;
        self.finish(Gone::Shutdown(info), "shutdown").await;
    }

    /// Every outbound request fails now with `error`, in id order (turns end with it).
    pub(super) async fn fail_pending(&mut self, error: &Error) {
        let mut ids: Vec<u64> = self.pending.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if let Some(mut pending) = self.pending.remove(&id) {
                if let Some(key) = pending.timer.take() {
                    self.timers.try_remove(&key);
                }
                self.on_failure(std::mem::replace(&mut pending.ctx, ReqCtx::Plain), error)
                    .await;
                if let Some(reply) = pending.reply.take() {
                    let error = error.clone();
                    self.defer(move || {
                        let _ = reply.send(Err(error));
                    });
                }
            }
        }
    }

    pub(super) async fn finish(&mut self, gone: Gone, reason: &str) {
        self.gone = Some(gone.clone());
        // Decided once, before the first event that says it: the supervisor (unless it was
        // stopped, or the host is going away) follows with a restart or `agent_failed`.
        let restart =
            self.shared.supervised.load(Ordering::SeqCst) && self.host.alive.has_changed().is_ok();
        self.shared
            .restart_announced
            .store(restart, Ordering::SeqCst);
        let error = gone.error();
        // 0. answers whose receipts were still waiting: decided now, reported first
        self.settle_receipts().await;
        // 1. every outbound request fails at once (turns end with the error)
        self.fail_pending(&error).await;
        self.v2_end_agent_turns(None, &error).await;
        // Nobody is left to answer served requests (those waiting for room stop); every terminal
        // is killed.
        self.served.clear();
        self.budget.close();
        self.terminals.release_all().await;
        // 2. pending permission requests resolve as disconnected (nobody left to answer)
        let perms: Vec<u64> = self.perms.keys().copied().collect();
        for perm in sorted(perms) {
            self.finish_permission(perm, None, DecidedBy::Disconnected)
                .await;
        }
        let mut elicits: Vec<u64> = self.elicits.keys().copied().collect();
        elicits.sort_unstable();
        for eid in elicits {
            self.finish_elicitation(eid, None, DecidedBy::Disconnected, None)
                .await;
        }
        // 3. anything still buffered is delivered, then sessions close
        let early = std::mem::take(&mut self.early);
        for (session, _, update) in early {
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(session)),
            )
            .await;
        }
        let mut open: Vec<Arc<str>> = self.sessions.keys().cloned().collect();
        open.sort();
        let steers_end = self.gone_reason();
        for id in open {
            self.reject_steers(&id, steers_end).await;
            if let Some(entry) = self.remove_session_delivering(&id).await {
                if let Ok(mut v) = entry.view.lock() {
                    v.open = false;
                    v.active_turn = None;
                }
                let why = if reason == "shutdown" {
                    "shutdown"
                } else {
                    "agent_exited"
                };
                let mut data = serde_json::json!({ "sessionId": &*id, "reason": why });
                if restart {
                    data["restart"] = Value::Bool(true);
                }
                self.emit(
                    self.event(EventKind::SessionClosed, raw_json(&data))
                        .session(Some(id)),
                )
                .await;
            }
        }
        if let Ok(mut map) = self.shared.sessions.lock() {
            map.clear();
        }
        // 4. and finally the agent itself
        let info = gone.info();
        let data = serde_json::json!({
            "reason": reason,
            "exitCode": info.code,
            "signal": info.signal,
            "stderrTail": info.stderr_tail,
        });
        let mut data = data;
        if let Some(error) = self.shutdown_error.take() {
            data["error"] = error;
        }
        if restart {
            data["restart"] = Value::Bool(true);
        }
        self.host.config.log.emit(
            crate::log::Level::Info,
            "transport",
            Some(self.agent),
            None,
            || {
                let how = match (&info.code, &info.signal) {
                    (Some(code), _) => format!("exit code {code}"),
                    (None, Some(signal)) => format!("signal {signal}"),
                    (None, None) => "no exit status".to_owned(),
                };
                format!("the agent exited ({reason}; {how})")
            },
        );
        let _ = self.shared.exit.set(info.clone());
        self.shared.exited.notify_waiters();
        // Nothing of this agent follows `agent_exited`: late stderr only reaches the tail.
        self.stderr = None;
        self.emit(self.event(EventKind::AgentExited, raw_json(&data)))
            .await;
        // The connection's last event: its recording is complete once the file is closed,
        // awaited (bounded) so the runtime's thread is not held meanwhile.
        let mut closing = None;
        self.record(|r| closing = r.finish());
        if let Some(closing) = closing {
            closing.wait().await;
        }
    }

    /// Take the agent's remaining stderr lines until its stderr closes (bounded by `limit`).
    pub(super) async fn drain_stderr(&mut self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.stderr.is_some() {
            match tokio::time::timeout_at(deadline, recv_stderr(&mut self.stderr)).await {
                Ok(Some(ev)) => self.emit(ev).await,
                Ok(None) => {}
                Err(_) => break,
            }
        }
    }
}

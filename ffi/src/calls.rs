//! The call table: one entry per asynchronous call, from the call that started it until the
//! embedder releases its id (`acph_call_wait` returning a final status, or `acph_call_free`), the
//! wasmtime model (one call object, one wait, one delete) instead of a blocking twin per call.
//!
//! A call's outcome is stored here when it completes, before its `call_completed` event is
//! queued, and stays until released: a waiter never misses an outcome an event thread saw first.
//! The library only adds an entry when the embedder starts a call, and removes it on release (a
//! call released while running is removed when it completes): the table holds no more than the
//! ids the embedder holds, plus released calls still running. An id never released is the
//! embedder's leak, like a handle never freed; `acph_host_free` releases every one left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use acp_host::Error;
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

use crate::status::{Failure, acph_status};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Which id of a call's result `acph_call_wait` writes to `*id_out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Primary {
    /// None: `*id_out` is 0.
    Nothing,
    /// `result.agent` (spawn, connect, terminal login).
    Agent,
    /// `result.session` (the session-opening calls, a pool's open session).
    Session,
}

impl Primary {
    fn of(self, v: &Value) -> u64 {
        let field = match self {
            Primary::Nothing => return 0,
            Primary::Agent => "agent",
            Primary::Session => "session",
        };
        v[field].as_u64().unwrap_or(0)
    }
}

#[derive(Debug)]
enum State {
    /// Running. `cancel` is taken by `acph_call_cancel`; `owned` is false once the embedder
    /// released the id (`acph_call_free`): the outcome is then dropped on arrival.
    Running {
        cancel: Option<oneshot::Sender<Error>>,
        owned: bool,
    },
    /// Completed, the outcome kept until the id is released.
    Done(Result<Value, Error>),
}

#[derive(Debug)]
struct Entry {
    primary: Primary,
    state: State,
}

/// The outcome `acph_call_wait` hands over: the primary id and the result JSON.
pub(crate) type Outcome = (u64, Value);

#[derive(Debug, Default)]
pub(crate) struct Calls {
    table: Mutex<HashMap<u64, Entry>>,
    /// Signalled whenever a call completes (waiters check their own entry).
    completed: Condvar,
    /// Calls started and not yet reported by their `call_completed` (for the shutdown's wait).
    outstanding: AtomicU64,
    idle: Notify,
}

impl Calls {
    /// Register a call that is about to start.
    pub(crate) fn start(&self, id: u64, primary: Primary, cancel: oneshot::Sender<Error>) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        lock(&self.table).insert(
            id,
            Entry {
                primary,
                state: State::Running {
                    cancel: Some(cancel),
                    owned: true,
                },
            },
        );
    }

    /// The call completed: keep its outcome for `acph_call_wait` (unless the id was released
    /// meanwhile) and wake the waiters. Runs before the call's `call_completed` is queued.
    pub(crate) fn complete(&self, id: u64, result: &Result<Value, Error>) {
        let mut t = lock(&self.table);
        let owned = matches!(
            t.get(&id),
            Some(Entry {
                state: State::Running { owned: true, .. },
                ..
            })
        );
        if owned {
            if let Some(e) = t.get_mut(&id) {
                e.state = State::Done(result.clone());
            }
        } else {
            // Released while running (or the host is being freed): nobody can ask for it.
            t.remove(&id);
        }
        drop(t);
        self.completed.notify_all();
    }

    /// The call's `call_completed` was queued.
    pub(crate) fn reported(&self) {
        if self.outstanding.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    /// Wait (bounded) until every call has reported.
    pub(crate) async fn all_reported(&self, deadline: tokio::time::Instant) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.outstanding.load(Ordering::SeqCst) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return;
            }
        }
    }

    /// `acph_call_cancel`.
    pub(crate) fn cancel(&self, id: u64) -> Result<(), Failure> {
        let mut t = lock(&self.table);
        match t.get_mut(&id).map(|e| &mut e.state) {
            None | Some(State::Running { owned: false, .. }) => Err(unknown_call(id)),
            Some(State::Done(_)) => Err(Failure::new(
                acph_status::ACPH_STATUS_ALREADY_RESOLVED,
                format!(
                    "call {id} has already completed: its outcome waits for acph_call_wait \
                     (or acph_call_free)"
                ),
            )),
            Some(State::Running { cancel, .. }) => {
                // A second cancel of a call still settling changes nothing.
                if let Some(tx) = cancel.take() {
                    let _ = tx.send(Error::Cancelled);
                }
                Ok(())
            }
        }
    }

    /// `acph_call_free`: release the id. A running call goes on; its outcome is dropped.
    pub(crate) fn free(&self, id: u64) -> Result<(), Failure> {
        let mut t = lock(&self.table);
        match t.get_mut(&id).map(|e| &mut e.state) {
            None | Some(State::Running { owned: false, .. }) => Err(unknown_call(id)),
            Some(State::Running { owned, .. }) => {
                *owned = false;
                Ok(())
            }
            Some(State::Done(_)) => {
                t.remove(&id);
                Ok(())
            }
        }
    }

    /// `acph_call_wait`: the outcome of `id`, waiting up to `timeout_ms` (`u32::MAX`: no limit;
    /// 0: a poll). A completed call is released (its own error is the `Err`); on the wait's own
    /// timeout it stays running and owned.
    pub(crate) fn wait(&self, id: u64, timeout_ms: u32) -> Result<Outcome, Failure> {
        let deadline = (timeout_ms != u32::MAX)
            .then(|| Instant::now() + Duration::from_millis(u64::from(timeout_ms)));
        let mut t = lock(&self.table);
        loop {
            match t.get(&id) {
                None
                | Some(Entry {
                    state: State::Running { owned: false, .. },
                    ..
                }) => return Err(unknown_call(id)),
                Some(Entry {
                    state: State::Done(_),
                    ..
                }) => {
                    let Some(Entry {
                        primary,
                        state: State::Done(outcome),
                    }) = t.remove(&id)
                    else {
                        return Err(unknown_call(id));
                    };
                    let v = outcome.map_err(Failure::from)?;
                    return Ok((primary.of(&v), v));
                }
                Some(_) => {}
            }
            t = match deadline {
                None => self.completed.wait(t).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(wait_timeout(id, timeout_ms));
                    }
                    self.completed
                        .wait_timeout(t, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    /// `acph_host_free`: release every id left (running calls drop their outcome).
    pub(crate) fn clear(&self) {
        let table = std::mem::take(&mut *lock(&self.table));
        drop(table);
    }
}

/// An id that is not (or no longer) the embedder's: the same `stale_id` as any released handle.
fn unknown_call(id: u64) -> Failure {
    Failure::new(
        acph_status::ACPH_STATUS_STALE_ID,
        format!(
            "no call {id} in this host (never issued, from another host, or already released \
             by acph_call_wait or acph_call_free)"
        ),
    )
}

/// The wait's own timeout (not the call's): `data.running` tells it from a call that itself
/// failed with `timeout`.
fn wait_timeout(id: u64, timeout_ms: u32) -> Failure {
    Failure::new(
        acph_status::ACPH_STATUS_TIMEOUT,
        format!(
            "call {id} did not complete within {timeout_ms} ms; it keeps running and its id \
             stays valid (wait again, acph_call_cancel or acph_call_free)"
        ),
    )
    .with_data(serde_json::json!({
        "what": "acph_call_wait",
        "afterMs": timeout_ms,
        "call": id,
        "running": true,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn started(calls: &Calls, id: u64, primary: Primary) -> oneshot::Receiver<Error> {
        let (tx, rx) = oneshot::channel();
        calls.start(id, primary, tx);
        rx
    }

    fn status(r: Result<impl std::fmt::Debug, Failure>) -> acph_status {
        r.err().map_or(acph_status::ACPH_STATUS_OK, |f| f.status)
    }

    #[test]
    fn an_outcome_waits_until_released_once() {
        let calls = Calls::default();
        let _rx = started(&calls, 7, Primary::Session);
        calls.complete(7, &Ok(serde_json::json!({"session": 42, "sessionId": "s"})));
        calls.reported();
        // An event thread may have seen `call_completed` by now: the outcome is still here.
        let (id, v) = calls.wait(7, 0).unwrap();
        assert_eq!((id, v["sessionId"].as_str()), (42, Some("s")));
        // Released by the wait.
        assert_eq!(status(calls.wait(7, 0)), acph_status::ACPH_STATUS_STALE_ID);
        assert_eq!(status(calls.free(7)), acph_status::ACPH_STATUS_STALE_ID);
        assert_eq!(status(calls.cancel(7)), acph_status::ACPH_STATUS_STALE_ID);
    }

    #[test]
    fn a_timed_out_wait_leaves_the_call_running_and_owned() {
        let calls = Calls::default();
        let rx = started(&calls, 1, Primary::Agent);
        let f = calls.wait(1, 20).unwrap_err();
        assert_eq!(f.status, acph_status::ACPH_STATUS_TIMEOUT);
        assert_eq!(f.data["running"], true);
        assert_eq!(status(calls.wait(1, 0)), acph_status::ACPH_STATUS_TIMEOUT);
        // Cancel reaches the work; a second cancel while it settles changes nothing.
        assert_eq!(status(calls.cancel(1)), acph_status::ACPH_STATUS_OK);
        assert_eq!(status(calls.cancel(1)), acph_status::ACPH_STATUS_OK);
        assert!(matches!(rx.blocking_recv(), Ok(Error::Cancelled)));
        calls.complete(1, &Err(Error::Cancelled));
        assert_eq!(
            status(calls.cancel(1)),
            acph_status::ACPH_STATUS_ALREADY_RESOLVED
        );
        let f = calls.wait(1, 0).unwrap_err();
        assert_eq!(f.status, acph_status::ACPH_STATUS_CANCELLED);
        assert!(f.data.get("running").is_none());
    }

    #[test]
    fn a_call_released_while_running_drops_its_outcome() {
        let calls = Calls::default();
        let _rx = started(&calls, 3, Primary::Nothing);
        assert_eq!(status(calls.free(3)), acph_status::ACPH_STATUS_OK);
        assert_eq!(status(calls.free(3)), acph_status::ACPH_STATUS_STALE_ID);
        assert_eq!(status(calls.wait(3, 0)), acph_status::ACPH_STATUS_STALE_ID);
        calls.complete(3, &Ok(serde_json::json!({})));
        assert!(lock(&calls.table).is_empty());
    }

    #[test]
    fn a_waiter_on_another_thread_is_woken_by_the_completion() {
        let calls = std::sync::Arc::new(Calls::default());
        let _rx = started(&calls, 5, Primary::Nothing);
        let c = calls.clone();
        let waiter = std::thread::spawn(move || c.wait(5, u32::MAX));
        std::thread::sleep(Duration::from_millis(20));
        calls.complete(5, &Ok(serde_json::json!({"ok": 1})));
        let (id, v) = waiter.join().unwrap().unwrap();
        assert_eq!((id, v["ok"].as_u64()), (0, Some(1)));
    }
}

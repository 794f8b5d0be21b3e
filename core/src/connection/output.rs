//! What leaves the actor: events (batched per step, held in a backlog while the host's queue is
//! full, with the replies queued behind them) and lines to the agent (with the stalled-stdin
//! and broken-writer handling).

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::answer::Encoded;
use super::io::{Refused, Ticket};
use super::{Actor, OUTBOX_MAX, Reply};
use crate::error::Error;
use crate::events::{EventKind, PendingEvent, raw_json};
use crate::wire::message::{self, RawId, RpcError, codes};

impl Actor {
    /// Queue an event; it reaches the host's stream at the next flush (end of this step, or when
    /// the outbox is full). Order is preserved; batching amortises the queue's synchronisation.
    pub(super) async fn emit(&self, ev: PendingEvent) {
        self.record(|r| r.event(&ev, None));
        self.queue_event(ev);
    }

    /// [`Actor::emit`] for an update whose data is the `params.update` of the agent's line the
    /// recording queued as wire line `line`: the recording refers to that line.
    pub(super) fn emit_from_line(&mut self, ev: PendingEvent, line: Option<u64>) {
        self.record_mut(|r| r.event(&ev, line));
        self.queue_event(ev);
    }

    /// An event (recorded) into the outbox.
    fn queue_event(&self, ev: PendingEvent) {
        let full = {
            let mut out = self.outbox.lock().unwrap_or_else(|p| p.into_inner());
            out.push(ev);
            out.len() >= OUTBOX_MAX
        };
        if full {
            self.flush();
        }
    }

    /// [`Actor::record`] where the actor is held whole: no lock to take (a flood's every line is
    /// recorded so, and its update).
    pub(super) fn record_mut(&mut self, f: impl FnOnce(&mut crate::record::Recorder)) {
        if let Some(r) = &mut self.recorder {
            f(r.get_mut().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// Feed this connection's recording, if it is recorded.
    pub(super) fn record(&self, f: impl FnOnce(&mut crate::record::Recorder)) {
        if let Some(r) = &self.recorder {
            f(&mut r.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// Hand the step's events to the host's queue (what does not fit waits in the backlog; this
    /// never waits), then answer the callers whose events are all queued.
    pub(super) fn flush(&self) {
        // The step's recorded lines go to the recording's thread with its events.
        self.record(crate::record::Recorder::hand_off);
        let batch = std::mem::take(&mut *self.outbox.lock().unwrap_or_else(|p| p.into_inner()));
        let replies = std::mem::take(&mut *self.replies.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() && replies.is_empty() && !self.backlogged() {
            return;
        }
        let ready = {
            let mut b = self.backlog.lock().unwrap_or_else(|p| p.into_inner());
            // A reply waits for its own step's events (and so for everything queued before
            // them); a step that made no events answers at once, even behind a backlog.
            let mark = if batch.is_empty() {
                b.queued()
            } else {
                b.entered + batch.len() as u64
            };
            b.entered += batch.len() as u64;
            b.events.extend(batch);
            b.replies.extend(replies.into_iter().map(|r| (mark, r)));
            self.host.bus.try_push(&mut b.events);
            b.ready_replies()
        };
        for reply in ready {
            reply();
        }
    }

    /// Whether events are waiting for room in the host's queue (then the agent is not read).
    pub(super) fn backlogged(&self) -> bool {
        !self
            .backlog
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events
            .is_empty()
    }

    pub(super) fn has_waiting_replies(&self) -> bool {
        !self
            .backlog
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replies
            .is_empty()
    }

    /// Nobody has pulled for the stall timeout: answer the callers now (their results are known;
    /// their events stay queued, in order) rather than leave them hanging.
    pub(super) fn release_replies(&self) {
        let replies: Vec<Reply> = {
            let mut b = self.backlog.lock().unwrap_or_else(|p| p.into_inner());
            b.replies.drain(..).map(|(_, r)| r).collect()
        };
        for reply in replies {
            reply();
        }
    }

    /// Answer a caller once the events of this step are in the stream: whoever awaits a call sees
    /// its events (`turn_ended`, `session_opened`, ...) already queued when the call returns.
    pub(super) fn defer(&self, reply: impl FnOnce() + Send + 'static) {
        self.replies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Box::new(reply));
    }

    /// The actor is done; whatever is still in the backlog is delivered by a task of its own
    /// (which may wait for room: nobody else is waiting on it).
    pub(super) fn hand_off_backlog(&self) {
        self.flush();
        let mut b = std::mem::take(&mut *self.backlog.lock().unwrap_or_else(|p| p.into_inner()));
        if b.events.is_empty() && b.replies.is_empty() {
            return;
        }
        let bus = self.host.bus.clone();
        tokio::spawn(async move {
            loop {
                bus.try_push(&mut b.events);
                for reply in b.ready_replies() {
                    reply();
                }
                if b.events.is_empty() {
                    break;
                }
                bus.wait_room().await;
            }
            for (_, reply) in b.replies.drain(..) {
                reply();
            }
        });
    }

    pub(super) fn event(&self, kind: EventKind, data: Box<RawValue>) -> PendingEvent {
        PendingEvent::new(self.agent, kind, data)
    }

    pub(super) async fn protocol_error(&self, reason: &str, message: String, extra: Value) {
        let mut data = serde_json::json!({ "reason": reason, "message": message });
        if let (Value::Object(d), Value::Object(e)) = (&mut data, extra) {
            d.extend(e);
        }
        self.host.config.log.emit(
            crate::log::Level::Debug,
            "protocol",
            Some(self.agent),
            None,
            || format!("protocol error ({reason}): {message}"),
        );
        self.emit(self.event(EventKind::ProtocolError, raw_json(&data)))
            .await;
    }

    /// Send one of the host's own lines (a request, a notification) to the agent. Whether it
    /// was queued: a line larger than the host's own lines may ever hold is refused (callers
    /// check first where that can happen: see `on_command`); one that finds the queue full of
    /// the host's own lines means the agent stopped reading its stdin, and it is taken down.
    pub(super) async fn write(&mut self, line: String) -> Result<Ticket, Refused> {
        if self.writer_dead {
            return Ok(Ticket::NotSent {
                code: "agent_exited",
                message: "the agent is being taken down: the answer was not sent".to_owned(),
            });
        }
        let wire = (self.host.config.wire_events || self.recorder.is_some()).then(|| line.clone());
        let sent = self.out.0.send(line);
        match &sent {
            Ok(_) => {
                if let Some(line) = wire {
                    self.record(|r| r.wire_out(line.trim_end()));
                    if self.host.config.wire_events {
                        self.wire_out(&line).await;
                    }
                }
            }
            Err(Refused::Full { queued }) => self.stdin_stalled(*queued).await,
            Err(Refused::TooLarge { len, room }) => {
                self.host.config.log.emit(
                    crate::log::Level::Debug,
                    "transport",
                    Some(self.agent),
                    None,
                    || format!("a {len}-byte line is too large to send ({room} bytes of room)"),
                );
            }
        }
        sent
    }

    /// An answer to the agent's request `id` (an error, a permission or elicitation answer): if
    /// it is too large to ever send, the agent gets a short error for that request instead.
    /// The answer's ticket (a line that was not queued: why).
    pub(super) async fn write_reply(&mut self, id: &RawId, line: String) -> Ticket {
        let sent = self.write(line).await;
        if let Err(Refused::TooLarge { len, room }) = sent {
            let err = RpcError {
                code: codes::INTERNAL_ERROR,
                message: format!(
                    "the answer is {len} bytes, over the {room}-byte limit for one message to the agent"
                ),
                data: Some(
                    serde_json::json!({ "reason": "too_large", "size": len, "limit": room }),
                ),
            };
            let _ = self.write(message::error_line(id, &err)).await;
            return Ticket::NotSent {
                code: "invalid_argument",
                message: format!(
                    "the answer is {len} bytes, over the {room}-byte limit for one message to the \
                     agent; the agent got an error instead"
                ),
            };
        }
        match sent {
            Ok(ticket) => ticket,
            Err(_) => Ticket::NotSent {
                code: "agent_exited",
                message: "the agent stopped reading its stdin: the answer was not sent".to_owned(),
            },
        }
    }

    /// An answer made (and held to the budget) by the request's work: never refused.
    pub(super) async fn write_answer(&mut self, answer: Encoded) -> Ticket {
        if self.writer_dead {
            return Ticket::NotSent {
                code: "agent_exited",
                message: "the agent is being taken down: the answer was not sent".to_owned(),
            };
        }
        if self.host.config.wire_events || self.recorder.is_some() {
            let text =
                String::from_utf8_lossy(answer.line.strip_suffix(b"\n").unwrap_or(&answer.line));
            let text = text.into_owned();
            self.record(|r| r.wire_out(&text));
            if self.host.config.wire_events {
                self.wire_out(&text).await;
            }
        }
        self.out.0.send_answer(answer)
    }

    async fn wire_out(&self, line: &str) {
        if let Ok(raw) = RawValue::from_string(line.to_owned()) {
            let data = format!("{{\"direction\":\"out\",\"message\":{}}}", raw.get());
            if let Ok(data) = RawValue::from_string(data) {
                self.emit(self.event(EventKind::Wire, data)).await;
            }
        }
    }

    /// The host's own lines fill their share of the queue: the agent stopped reading its stdin
    /// while we keep having things to say. It is stuck, and buffering for it without bound is how
    /// hosts run out of memory.
    async fn stdin_stalled(&mut self, queued: usize) {
        if self.gone.is_some() || self.writer_dead {
            return;
        }
        self.host.config.log.emit(
            crate::log::Level::Warn,
            "transport",
            Some(self.agent),
            None,
            || format!("the agent is not reading its stdin ({queued} bytes queued); killing it"),
        );
        self.protocol_error(
            "stdin_stalled",
            format!("agent stopped reading its stdin ({queued} bytes queued); killing it"),
            Value::Null,
        )
        .await;
        match &self.process {
            Some(p) => {
                // Nothing more is written: the bound holds while it dies.
                self.writer_dead = true;
                p.signal(crate::transport::GroupSignal::Kill);
            }
            // No process to kill (a `connect` transport): end the connection ourselves.
            None => {
                self.writer_failed(format!(
                    "agent stopped reading its input ({queued} bytes queued)"
                ))
                .await;
            }
        }
    }

    /// The way to the agent is broken (write error, or it stopped reading): stop writing and
    /// take the connection down at once: a process is killed (its exit fails the pending calls
    /// with `agent_exited`), a `connect` transport fails them with `io` and ends.
    pub(super) async fn writer_failed(&mut self, message: String) {
        if self.writer_dead || self.gone.is_some() {
            return;
        }
        self.writer_dead = true;
        if let Some(p) = &self.process {
            // A process we cannot write to is taken down at once; its exit then fails every
            // pending call with `agent_exited` (exit status and stderr tail: the useful error).
            self.host.config.log.emit(
                crate::log::Level::Info,
                "transport",
                Some(self.agent),
                None,
                || format!("killing the agent: {message}"),
            );
            p.signal(crate::transport::GroupSignal::Kill);
            return;
        }
        let error = Error::Io(Arc::new(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            message,
        )));
        self.fail_pending(&error).await;
        self.reader_open = false;
        self.agent_gone().await;
    }

    pub(super) async fn respond_result(&mut self, id: &RawId, result: &Value) -> Ticket {
        if let Err(e) = crate::wire::depth::check_fits(result, 2, "the host's result") {
            // Never a line deeper than the limit the agent is held to; still an answer.
            let msg = e.to_string();
            self.respond_error(id, message::codes::INTERNAL_ERROR, &msg)
                .await;
            return Ticket::NotSent {
                code: "invalid_argument",
                message: format!("{msg}; the agent got an error instead"),
            };
        }
        let raw = raw_json(result);
        self.write_reply(id, message::result_line(id, &raw)).await
    }

    pub(super) async fn respond_error(&mut self, id: &RawId, code: i64, msg: &str) -> Ticket {
        let err = RpcError {
            code,
            message: msg.to_owned(),
            data: None,
        };
        self.write_reply(id, message::error_line(id, &err)).await
    }
}

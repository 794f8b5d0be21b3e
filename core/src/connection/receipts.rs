//! Receipts for the answers the host sends the agent (docs/EVENTS.md, "Delivery receipts").
//!
//! An answer's resolution event and its respond call carry the same receipt, decided here once.
//! A line written at once (the usual case: a short answer into a pipe with room) is `delivered`
//! in the same step, with no task and no wait. A line that waits in the queue parks its event
//! (and the callers waiting for its receipt) until the writer has written it, the pipe failed,
//! or [`RECEIPT_WAIT`] passed; parked events go out in the order their lines were sent.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::io::Ticket;
use super::{Actor, Completion};
use crate::error::Result;
use crate::events::{EventKind, raw_json};
use crate::receipt::{RECEIPT_WAIT, Receipt};

/// Where an answer's receipt is: known now, or parked under a key until it is.
#[derive(Debug)]
pub(super) enum Slot {
    Known(Receipt),
    Parked(u64),
}

/// A resolution event waiting for its answer's receipt.
pub(super) struct Parked {
    ticket: Ticket,
    receipt: Option<Receipt>,
    event: Option<ParkedEvent>,
    replies: Vec<oneshot::Sender<Result<Receipt>>>,
}

pub(super) struct ParkedEvent {
    pub kind: EventKind,
    /// The payload, without its `receipt`.
    pub data: serde_json::Map<String, Value>,
    pub session: Option<Arc<str>>,
    pub turn: Option<u64>,
}

/// The parked resolutions of one connection, by key (keys grow with the lines' order).
#[derive(Default)]
pub(super) struct Receipts {
    parked: BTreeMap<u64, Parked>,
    next: u64,
}

impl Actor {
    /// `ticket`'s receipt if it is known now and no resolution waits before it (its event may
    /// then go out at once).
    pub(super) fn receipt_now(&self, ticket: &Ticket) -> Option<Receipt> {
        if self.receipts.parked.is_empty() {
            ticket.now()
        } else {
            None
        }
    }

    /// Park `event` (emitted with the receipt once it is known, after those parked before it).
    pub(super) fn park_receipt(&mut self, ticket: Ticket, event: Option<ParkedEvent>) -> Slot {
        let key = self.receipts.next;
        self.receipts.next += 1;
        let tx = self.done_tx.clone();
        let waiting = ticket.clone();
        tokio::spawn(async move {
            let receipt = waiting.wait(RECEIPT_WAIT).await;
            let _ = tx.send(Completion::Receipt { key, receipt });
        });
        self.receipts.parked.insert(
            key,
            Parked {
                ticket,
                receipt: None,
                event,
                replies: Vec::new(),
            },
        );
        Slot::Parked(key)
    }

    /// Send `reply` the receipt in `slot` (now, or once it is known).
    pub(super) fn reply_receipt(&mut self, slot: Slot, reply: oneshot::Sender<Result<Receipt>>) {
        match slot {
            Slot::Known(r) => self.defer(move || {
                let _ = reply.send(Ok(r));
            }),
            Slot::Parked(key) => match self.receipts.parked.get_mut(&key) {
                Some(p) => p.replies.push(reply),
                // Settled in this very step (cannot happen: settling needs a completion).
                None => drop(reply),
            },
        }
    }

    /// A parked receipt is known: emit what is ready, in order.
    pub(super) async fn receipt_known(&mut self, key: u64, receipt: Receipt) {
        if let Some(p) = self.receipts.parked.get_mut(&key) {
            p.receipt = Some(receipt);
        }
        while let Some(entry) = self.receipts.parked.first_entry() {
            if entry.get().receipt.is_none() {
                break;
            }
            let p = entry.remove();
            self.settle(p).await;
        }
    }

    /// Before anything the agent sent next is handled: the parked resolutions go out first. Their
    /// lines went to the agent before it sent what comes next, and an event of those later lines
    /// (a `turn_ended`) must not overtake them. The writer has usually written them by now (a
    /// pipe written from another thread, as on Windows, reports a moment later); an agent that
    /// reads nothing holds this at most [`RECEIPT_WAIT`], then the receipt says so.
    pub(super) async fn settle_before_input(&mut self) {
        while let Some(entry) = self.receipts.parked.first_entry() {
            let key = *entry.key();
            let receipt = match entry.get().receipt.clone() {
                Some(r) => r,
                None => {
                    let ticket = entry.get().ticket.clone();
                    ticket.wait(RECEIPT_WAIT).await
                }
            };
            self.receipt_known(key, receipt).await;
        }
    }

    /// The agent is gone: every parked receipt is decided now, before the last events.
    pub(super) async fn settle_receipts(&mut self) {
        let parked = std::mem::take(&mut self.receipts.parked);
        for (_, mut p) in parked {
            if p.receipt.is_none() {
                p.receipt = Some(p.ticket.at_exit());
            }
            self.settle(p).await;
        }
    }

    async fn settle(&mut self, p: Parked) {
        let receipt = p.receipt.unwrap_or_else(|| p.ticket.at_exit());
        if let Some(ev) = p.event
            && self.host.bus.enabled()
        {
            let mut data = ev.data;
            data.insert("receipt".into(), receipt.to_json());
            let event = self
                .event(ev.kind, raw_json(&Value::Object(data)))
                .session(ev.session)
                .turn(ev.turn);
            self.emit(event).await;
        }
        for reply in p.replies {
            let r = receipt.clone();
            self.defer(move || {
                let _ = reply.send(Ok(r));
            });
        }
    }
}

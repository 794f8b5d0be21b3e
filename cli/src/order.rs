//! Where the permission question goes on the screen: after every transcript line of the events
//! that came before the request, with nothing printed after it until it is answered, so the
//! cursor waits on the question.
//!
//! The decider registers its request as soon as the core calls it (the connection's actor calls
//! it in the step that hands the request's `permission_requested` event to the queue, so the
//! printer sees the registration with the event), waits until the printer has shown the event,
//! then asks. The printer, having shown the event of a registered request, stops pulling events
//! (the core stops reading the agent meanwhile) until the registration is dropped: the question
//! answered, or the request settled otherwise (timeout, Ctrl-C, the agent's exit), which drops
//! the decider. Were the event shown before the registration, the question would still come
//! after it; only the hold would be missed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// The longest a question waits for the printer to show its request.
const SHOWN_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct State {
    /// The highest permission request id whose event the printer has shown (ids grow in the
    /// order the requests arrive).
    shown_upto: u64,
    /// The printer ended: nothing more will be shown.
    closed: bool,
    /// Requests a question is (or will be) asked for.
    asking: HashSet<u64>,
}

#[derive(Debug)]
pub struct PromptOrder {
    state: watch::Sender<State>,
}

pub type SharedOrder = Arc<PromptOrder>;

impl PromptOrder {
    pub fn shared() -> SharedOrder {
        Arc::new(PromptOrder {
            state: watch::Sender::new(State::default()),
        })
    }

    /// A question will be asked for `id`; the printer holds after its event until the guard is
    /// dropped.
    pub fn register(self: &Arc<Self>, id: u64) -> Asking {
        self.state.send_modify(|s| {
            s.asking.insert(id);
        });
        Asking {
            order: self.clone(),
            id,
        }
    }

    /// Until the printer has shown request `id`'s event (or ended), for at most [`SHOWN_WAIT`]:
    /// printing is quick, and a printer held by another question must not keep this one from
    /// being asked.
    pub async fn wait_shown(&self, id: u64) {
        let mut rx = self.state.subscribe();
        let shown = rx.wait_for(|s| s.closed || s.shown_upto >= id);
        let _ = tokio::time::timeout(SHOWN_WAIT, shown).await;
    }

    /// The printer showed request `id`'s event (and flushed it).
    pub fn shown(&self, id: u64) {
        self.state
            .send_modify(|s| s.shown_upto = s.shown_upto.max(id));
    }

    /// The printer: until no question is asked for `id`.
    pub async fn wait_answered(&self, id: u64) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|s| !s.asking.contains(&id)).await;
    }

    /// The printer ended.
    pub fn close(&self) {
        self.state.send_modify(|s| s.closed = true);
    }
}

/// A registered question; dropping it lets the printer go on.
#[derive(Debug)]
pub struct Asking {
    order: SharedOrder,
    id: u64,
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.order.state.send_modify(|s| {
            s.asking.remove(&self.id);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The printer waits for the answer; the question waits for the printer.
    #[tokio::test]
    async fn printer_and_question_wait_for_each_other() {
        let order = PromptOrder::shared();
        let asking = order.register(3);
        let question = tokio::time::timeout(Duration::from_millis(50), order.wait_shown(3)).await;
        assert!(question.is_err(), "asked before the event was shown");
        order.shown(3);
        order.wait_shown(3).await;
        let held = tokio::time::timeout(Duration::from_millis(50), order.wait_answered(3)).await;
        assert!(held.is_err(), "the printer went on before the answer");
        drop(asking);
        order.wait_answered(3).await;
        // A request nobody asks about never holds the printer.
        order.wait_answered(4).await;
        order.close();
        order.wait_shown(9).await;
    }
}

//! The core's event readers (`acp_host::EventHub`: host, live and session readers) for the
//! facade: one native reader object per stream, pulled in batches, each batch one columnar JSON
//! document. Which events a reader yields and when it ends is the hub's rule, not decided here.

use std::borrow::Borrow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use acp_host::{Event, EventKind, HubReader};
use napi_derive::napi;
use tokio::sync::Notify;

/// One reader of the host's `EventHub`. Closed when the facade's stream ends, or when it is
/// garbage-collected (the hub no longer waits for it either way).
#[napi]
#[derive(Debug)]
pub struct NativeEventReader {
    reader: Arc<HubReader>,
    /// Ends a pending `next_batch` early (`interrupt`): a pending napi call keeps the Node
    /// process alive, so the facade stops waiting when nobody waits for the stream.
    wake: Arc<Notify>,
}

impl NativeEventReader {
    pub(crate) fn new(reader: HubReader) -> NativeEventReader {
        NativeEventReader {
            reader: Arc::new(reader),
            wake: Arc::new(Notify::new()),
        }
    }
}

#[napi]
impl NativeEventReader {
    /// Up to `limit` events as one batch (see `encode_batch`), waiting for at least one; `null`
    /// once the reader ended; `""` when interrupted. A session reader's pull also tells the hub
    /// that the previous batch was handed on (what a prompt's answer waits for).
    /// `lifecycleOnly`: keep only the events that end or restart an agent (`agent_exited`,
    /// `agent_failed`, `agent_restarted`), `""` when none: the host's emitter with no listener
    /// needs only those, and a flood is then not decoded twice in JavaScript.
    #[napi]
    pub async fn next_batch(&self, limit: u32, lifecycle_only: Option<bool>) -> Option<String> {
        let (reader, wake) = (self.reader.clone(), self.wake.clone());
        let limit = (limit as usize).max(1);
        // The hub's pull takes events only in the poll that returns them: dropping it loses none.
        let evs = tokio::select! {
            biased;
            evs = reader.next_batch(limit) => evs,
            _ = wake.notified() => return Some(String::new()),
        };
        if evs.is_empty() {
            return None;
        }
        if lifecycle_only == Some(true) {
            let kept: Vec<_> = evs
                .into_iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::AgentExited | EventKind::AgentFailed | EventKind::AgentRestarted
                    )
                })
                .collect();
            return Some(if kept.is_empty() {
                String::new()
            } else {
                encode_batch(&kept)
            });
        }
        Some(encode_batch(&evs))
    }

    /// End the pending (or the next) `next_batch` with `""`.
    #[napi]
    pub fn interrupt(&self) {
        self.wake.notify_one();
    }

    /// Stop reading: what the reader holds is dropped and the hub no longer waits for it.
    #[napi]
    pub fn close(&self) {
        self.reader.close();
    }

    /// For a session reader: how many of the session's events were left out before its first
    /// one (its bounded history had overflowed); 0 otherwise.
    #[napi(getter)]
    pub fn missed(&self) -> f64 {
        self.reader.missed() as f64
    }
}

/// The `at` of the last event serialised, formatted once per millisecond (events of one batch
/// mostly share it).
#[derive(Default)]
struct Clock {
    millis: Option<u128>,
    text: String,
    /// The last session id and its JSON-quoted form (session ids are interned by the core).
    session: Option<(Arc<str>, String)>,
}

impl Clock {
    fn format(&mut self, at: SystemTime) -> &str {
        let millis = at.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).ok();
        if millis.is_none() || millis != self.millis {
            self.text = rfc3339_millis(millis.unwrap_or(0));
            self.millis = millis;
        }
        &self.text
    }

    fn quoted_session(&mut self, id: &Arc<str>) -> &str {
        let hit =
            matches!(&self.session, Some((last, _)) if Arc::ptr_eq(last, id) || **last == **id);
        if !hit {
            let quoted = serde_json::to_string(&**id).unwrap_or_else(|_| "\"\"".to_owned());
            self.session = Some((id.clone(), quoted));
        }
        self.session
            .as_ref()
            .map(|(_, q)| q.as_str())
            .unwrap_or("\"\"")
    }
}

/// `2026-11-30T14:00:00.123Z` for milliseconds since the Unix epoch: the core's formatter.
fn rfc3339_millis(millis: u128) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX));
    acp_host::events::format_timestamp(at)
}

/// The envelope fields of an event besides `seq` and `data`; events of a batch mostly share them.
#[derive(PartialEq)]
struct EnvKey {
    millis: Option<u128>,
    agent: u64,
    session: Option<Arc<str>>,
    turn: Option<u64>,
    kind: acp_host::EventKind,
    replay: bool,
}

/// Encode a batch for the facade, columnar, as one JSON document:
/// `{"seq":S,"envs":[[at,agent,session|null,turn|null,kind,replay],…],"idx":[…],"data":[…]}`:
/// event `i` is `seq` S+i (a batch is a contiguous range of the host's order; if it ever were
/// not, `"seqs":[…]` lists them), envelope `envs[idx[i]]` and payload `data[i]` (verbatim). The
/// facade rebuilds exactly the envelope of docs/EVENTS.md from it: one `JSON.parse` of the
/// payloads plus a few distinct envelopes is much cheaper in V8 than parsing every envelope.
pub(crate) fn encode_batch<E: Borrow<Event>>(buf: &[E]) -> String {
    use std::fmt::Write as _;
    let payload: usize = buf.iter().map(|e| e.borrow().data.get().len() + 8).sum();
    let mut envs = String::with_capacity(256);
    let mut idx = String::with_capacity(buf.len() * 2);
    let mut keys: Vec<EnvKey> = Vec::new();
    let mut clock = Clock::default();
    let first = buf.first().map(|e| e.borrow().seq).unwrap_or(0);
    let contiguous = buf
        .iter()
        .enumerate()
        .all(|(i, e)| e.borrow().seq == first + i as u64);
    let mut last = usize::MAX;
    for (i, ev) in buf.iter().enumerate() {
        let ev = ev.borrow();
        let key = EnvKey {
            millis: ev.at.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).ok(),
            agent: ev.agent,
            session: ev.session.clone(),
            turn: ev.turn,
            kind: ev.kind,
            replay: ev.replay,
        };
        let slot = if last != usize::MAX && keys[last] == key {
            last
        } else if let Some(found) = keys.iter().rposition(|k| *k == key) {
            found
        } else {
            if !keys.is_empty() {
                envs.push(',');
            }
            let _ = write!(envs, "[\"{}\",{},", clock.format(ev.at), ev.agent);
            match &ev.session {
                Some(s) => envs.push_str(clock.quoted_session(s)),
                None => envs.push_str("null"),
            }
            match ev.turn {
                Some(t) => {
                    let _ = write!(envs, ",{t},\"");
                }
                None => envs.push_str(",null,\""),
            }
            envs.push_str(ev.kind.as_str());
            envs.push_str(if ev.replay { "\",true]" } else { "\",false]" });
            keys.push(key);
            keys.len() - 1
        };
        last = slot;
        if i > 0 {
            idx.push(',');
        }
        let _ = write!(idx, "{slot}");
    }
    let mut out = String::with_capacity(payload + envs.len() + idx.len() + 64);
    let _ = write!(out, "{{\"seq\":{first},\"envs\":[{envs}],\"idx\":[{idx}]");
    if !contiguous {
        out.push_str(",\"seqs\":[");
        for (i, ev) in buf.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}", ev.borrow().seq);
        }
        out.push(']');
    }
    out.push_str(",\"data\":[");
    for (i, ev) in buf.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(ev.borrow().data.get());
    }
    out.push_str("]}");
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::Value;

    #[test]
    fn timestamps_are_rfc3339_utc_millis() {
        for (millis, want) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (1_798_675_200_000, "2026-12-31T00:00:00.000Z"),
            (1_764_460_800_001, "2025-11-30T00:00:00.001Z"),
        ] {
            assert_eq!(rfc3339_millis(millis), want);
        }
    }

    fn event(seq: u64, session: Option<&str>, turn: Option<u64>, data: &str) -> Event {
        Event {
            seq,
            at: UNIX_EPOCH + Duration::from_millis(1_764_460_800_001),
            agent: 1,
            session: session.map(Arc::from),
            turn,
            kind: acp_host::EventKind::SessionUpdate,
            replay: false,
            data: serde_json::value::RawValue::from_string(data.to_owned()).unwrap(),
        }
    }

    #[test]
    fn batches_are_columnar_and_rebuild_the_core_envelopes() {
        let buf = vec![
            event(7, Some("s\"1"), Some(2), r#"{"a":1}"#),
            event(8, Some("s\"1"), Some(2), r#"{"a":2}"#),
            event(9, None, None, r#"{"b":[1,2]}"#),
        ];
        let want: Vec<Value> = buf.iter().map(Event::to_value).collect();
        let batch: Value = serde_json::from_str(&encode_batch(&buf)).unwrap();
        assert_eq!(batch["seq"], 7);
        assert!(batch.get("seqs").is_none());
        assert_eq!(batch["idx"], serde_json::json!([0, 0, 1]));
        // What the facade's decodeBatch does.
        let rebuilt: Vec<Value> = (0..3)
            .map(|i| {
                let env = &batch["envs"][batch["idx"][i].as_u64().unwrap() as usize];
                let mut o = serde_json::Map::new();
                o.insert("seq".into(), Value::from(7 + i as u64));
                o.insert("at".into(), env[0].clone());
                o.insert("agent".into(), env[1].clone());
                if !env[2].is_null() {
                    o.insert("session".into(), env[2].clone());
                }
                if !env[3].is_null() {
                    o.insert("turn".into(), env[3].clone());
                }
                o.insert("kind".into(), env[4].clone());
                o.insert("replay".into(), env[5].clone());
                o.insert("data".into(), batch["data"][i].clone());
                Value::Object(o)
            })
            .collect();
        assert_eq!(rebuilt, want);
        // A gap (never produced by the core) is spelled out.
        let gap = vec![event(1, None, None, "{}"), event(3, None, None, "{}")];
        let batch: Value = serde_json::from_str(&encode_batch(&gap)).unwrap();
        assert_eq!(batch["seqs"], serde_json::json!([1, 3]));
    }
}

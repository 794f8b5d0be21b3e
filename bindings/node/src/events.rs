//! Events cross to the facade in batches: one columnar JSON document per `nextEvents` call.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use acp_host::{Event, EventStream};

#[derive(Debug)]
pub(crate) struct EventState {
    pub(crate) stream: EventStream,
    pub(crate) buf: Vec<Event>,
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
pub(crate) fn encode_batch(buf: &mut [Event]) -> String {
    use std::fmt::Write as _;
    let payload: usize = buf.iter().map(|e| e.data.get().len() + 8).sum();
    let mut envs = String::with_capacity(256);
    let mut idx = String::with_capacity(buf.len() * 2);
    let mut keys: Vec<EnvKey> = Vec::new();
    let mut clock = Clock::default();
    let first = buf.first().map(|e| e.seq).unwrap_or(0);
    let contiguous = buf
        .iter()
        .enumerate()
        .all(|(i, e)| e.seq == first + i as u64);
    let mut last = usize::MAX;
    for (i, ev) in buf.iter().enumerate() {
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
            let _ = write!(out, "{}", ev.seq);
        }
        out.push(']');
    }
    out.push_str(",\"data\":[");
    for (i, ev) in buf.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(ev.data.get());
    }
    out.push_str("]}");
    out
}

pub(crate) fn drain_ready(st: &mut EventState, limit: usize) -> usize {
    let mut n = 0;
    while n < limit {
        match st.stream.try_next() {
            Some(ev) => {
                st.buf.push(ev);
                n += 1;
            }
            None => break,
        }
    }
    n
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
        let mut buf = vec![
            event(7, Some("s\"1"), Some(2), r#"{"a":1}"#),
            event(8, Some("s\"1"), Some(2), r#"{"a":2}"#),
            event(9, None, None, r#"{"b":[1,2]}"#),
        ];
        let want: Vec<Value> = buf.iter().map(Event::to_value).collect();
        let batch: Value = serde_json::from_str(&encode_batch(&mut buf)).unwrap();
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
        let mut gap = vec![event(1, None, None, "{}"), event(3, None, None, "{}")];
        let batch: Value = serde_json::from_str(&encode_batch(&mut gap)).unwrap();
        assert_eq!(batch["seqs"], serde_json::json!([1, 3]));
    }
}

//! The session handles of a host: one `uint64_t` per (agent id, ACP session id), made when the
//! session is first seen (its `session_opened` or the call that opened it) and kept until its
//! agent (or pool) is released or the host freed.

use std::collections::HashMap;
use std::sync::Arc;

use acp_host::{PooledSession, Session};

use crate::host::next_id;

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    pub by_handle: HashMap<u64, SessionEntry>,
    pub by_key: HashMap<(u64, Arc<str>), u64>,
}

#[derive(Debug)]
pub(crate) struct SessionEntry {
    pub agent: u64,
    pub sid: Arc<str>,
    pub session: Option<Session>,
    /// A session handed out by a pool (`acph_pool_open_session`): the pool's id and its lease.
    pub pooled: Option<(u64, PooledSession)>,
}

impl Sessions {
    /// The handle of (agent, session id), created on first sight. Handles live until their agent
    /// is released or the host freed; a session reopened by load/resume keeps its handle.
    pub(crate) fn get_or_create(&mut self, agent: u64, sid: &str) -> u64 {
        let key = (agent, Arc::<str>::from(sid));
        if let Some(h) = self.by_key.get(&key) {
            return *h;
        }
        let h = next_id();
        self.by_handle.insert(
            h,
            SessionEntry {
                agent,
                sid: key.1.clone(),
                session: None,
                pooled: None,
            },
        );
        self.by_key.insert(key, h);
        h
    }

    pub(crate) fn find(&self, agent: u64, sid: &str) -> Option<u64> {
        self.by_key.get(&(agent, Arc::<str>::from(sid))).copied()
    }

    pub(crate) fn remove_agent(&mut self, agent: u64) {
        self.by_handle.retain(|_, e| e.agent != agent);
        self.by_key.retain(|(a, _), _| *a != agent);
    }

    pub(crate) fn remove(&mut self, handle: u64) -> Option<SessionEntry> {
        let e = self.by_handle.remove(&handle)?;
        self.by_key.remove(&(e.agent, e.sid.clone()));
        Some(e)
    }

    /// Drop the handles `keep` refuses (and their keys).
    pub(crate) fn retain(&mut self, keep: impl Fn(&SessionEntry) -> bool) {
        self.by_handle.retain(|_, e| keep(e));
        let live = &self.by_handle;
        self.by_key.retain(|_, h| live.contains_key(h));
    }
}

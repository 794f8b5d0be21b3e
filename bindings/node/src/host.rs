//! The host: its construction from the option document and the facade's callables, the event
//! batches, the answers from anywhere, and `close`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use acp_host::events::Scope;
use acp_host::options::{Face, Hooks};
use acp_host::services::{ExtHandler, FsHandler, TerminalHandler};
use acp_host::{ElicitationDecider, EventHub, Host, HostConfig, PermissionDecider, Pool};
use napi::bindgen_prelude::Result;
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::watch;

use crate::abort::abortable;
use crate::agent::NativeAgent;
use crate::answers::{Dispatch, JsDecider, JsElicitor, parse_answer};
use crate::events::NativeEventReader;
use crate::services::{JsServices, ServiceFn};
use crate::{closed_err, connect, core_err, doc, invalid, log, pool, spawn_spec};

/// Which of the facade's callables were given (`acp_host::options::Hooks`): the one service
/// dispatcher serves each kind that is set.
#[napi(object)]
#[derive(Debug, Default)]
pub struct NativeHooks {
    pub fs: Option<bool>,
    pub terminal: Option<bool>,
    pub ext: Option<bool>,
    pub terminal_auth: Option<bool>,
}

#[derive(Debug)]
pub(crate) struct HostCore {
    /// `None` once closed: the `Host` is dropped so every task and process goes with it.
    pub(crate) host: Mutex<Option<Host>>,
    /// The readers of the host's events (`None` when events are disabled): the facade's streams
    /// are its readers, so their rule (start, end, bounds, turn delivery) is the core's.
    pub(crate) hub: Option<EventHub>,
    pub(crate) closed: watch::Sender<bool>,
    /// The log handler's bridge, when there is one (`onLog`).
    pub(crate) log: Option<log::LogBridge>,
    /// The pools not shut down yet, by id (`close` shuts them down first: a pool holds the host
    /// and would start new spares on it); `None` once closed: no pool can be made any more.
    pub(crate) pools: Mutex<Option<HashMap<u64, Pool>>>,
}

impl HostCore {
    fn host(&self) -> Result<Host> {
        self.host
            .lock()
            .ok()
            .and_then(|h| h.clone())
            .ok_or_else(closed_err)
    }
}

#[napi]
#[derive(Debug)]
pub struct NativeHost {
    core: Arc<HostCore>,
}

/// The host's configuration: the core parses the document (`acp_host::options::host`, the same
/// table and errors as every face) and attaches the facade's callables by its one rule.
fn build_config(
    options_json: &str,
    permission: Option<Dispatch>,
    service: Option<ServiceFn>,
    elicitation: Option<Dispatch>,
    given: NativeHooks,
    log: Option<Arc<dyn acp_host::log::LogSink>>,
) -> Result<HostConfig> {
    let o = acp_host::options::host(&doc(options_json)?, Face::Node).map_err(core_err)?;
    let services = service.map(|f| Arc::new(JsServices { call: Arc::new(f) }));
    let when = |on: Option<bool>| services.clone().filter(|_| on == Some(true));
    let hooks = Hooks {
        permission: permission.map(|f| {
            Arc::new(JsDecider {
                decide: Arc::new(f),
            }) as Arc<dyn PermissionDecider>
        }),
        elicitation: elicitation
            .map(|f| Arc::new(JsElicitor { call: Arc::new(f) }) as Arc<dyn ElicitationDecider>),
        fs: when(given.fs).map(|s| s as Arc<dyn FsHandler>),
        terminal: when(given.terminal).map(|s| s as Arc<dyn TerminalHandler>),
        ext: when(given.ext).map(|s| s as Arc<dyn ExtHandler>),
        terminal_auth: when(given.terminal_auth)
            .map(|s| s as Arc<dyn acp_host::auth::TerminalAuthRunner>),
        log,
    };
    o.with_hooks(hooks).map_err(core_err)
}

/// An agent spec document (`acp_host::options::agent_spec`).
#[napi]
impl NativeHost {
    /// `options_json`: the host's option document (docs/OPTIONS.md, checked by the core);
    /// `permission`: the permission dispatcher (the permission handler: requests are answered
    /// with `permissionDecision`, and `{"settled": id}` messages tell it a request was settled by
    /// anyone else); `service`: the fs/terminal/extension/terminal-login dispatcher, serving the
    /// kinds `hooks` names; `elicitation`: the elicitation dispatcher (answered with
    /// `elicitationDecision`, `{"settled": id}` as for permissions); `log`: the log delivery
    /// function (log.rs). Which one answers is the core's rule (`HostOptions::with_hooks`).
    #[napi(constructor)]
    pub fn new(
        options_json: String,
        #[napi(ts_arg_type = "((message: string) => void) | undefined | null")] permission: Option<
            Dispatch,
        >,
        #[napi(ts_arg_type = "((callJson: string) => Promise<string>) | undefined | null")]
        service: Option<ServiceFn>,
        #[napi(ts_arg_type = "((messageJson: string) => void) | undefined | null")]
        elicitation: Option<Dispatch>,
        hooks: Option<NativeHooks>,
        #[napi(
            ts_arg_type = "((recordJson: string | null, lost: number) => void) | undefined | null"
        )]
        log: Option<log::JsDeliver<'_>>,
    ) -> Result<Self> {
        let (log, sink) = match log {
            Some(f) => {
                let (bridge, sink) = log::LogBridge::new(&f)?;
                (Some(bridge), Some(sink))
            }
            None => (None, None),
        };
        let config = build_config(
            &options_json,
            permission,
            service,
            elicitation,
            hooks.unwrap_or_default(),
            sink,
        )?;
        // Host::new does not spawn; agents run on napi's tokio runtime (every call below is async).
        let host = Host::new(config);
        let hub = host.events().map(|stream| {
            let hub = EventHub::new(acp_host::events::HubLimits::from_config(host.config()));
            let pump = hub.clone();
            napi::bindgen_prelude::spawn(async move { pump.pump(stream).await });
            hub
        });
        let (closed, _) = watch::channel(false);
        Ok(NativeHost {
            core: Arc::new(HostCore {
                host: Mutex::new(Some(host)),
                hub,
                closed,
                log,
                pools: Mutex::new(Some(HashMap::new())),
            }),
        })
    }

    /// Capabilities advertised to agents
    /// (`{readTextFile, writeTextFile, terminal, elicitation: {form, url}}`).
    #[napi]
    pub fn client_capabilities(&self) -> Result<Value> {
        let caps = self.core.host()?.client_capabilities();
        Ok(serde_json::json!({
            "readTextFile": caps.read_text_file,
            "writeTextFile": caps.write_text_file,
            "terminal": caps.terminal,
            "elicitation": { "form": caps.elicitation.form, "url": caps.elicitation.url },
        }))
    }

    /// Spawn an agent and perform the handshake.
    #[napi]
    pub async fn spawn(&self, spec_json: String, abort: Option<u32>) -> Result<NativeAgent> {
        let host = self.core.host()?;
        // Checked before anything is started: a bad spec spawns nothing.
        let spec = spawn_spec(&spec_json)?;
        let supervised = spec.restart.is_some();
        let agent = abortable(abort, host.spawn(spec)).await?;
        Ok(NativeAgent { agent, supervised })
    }

    /// A pool of agents for one spawn spec (`acp_host::Pool`); `pool_json` is the pool's
    /// settings document (`acp_host::options::pool`, paths `pool.*`). A bad spec or setting is
    /// `invalid_config` and nothing is started.
    #[napi]
    pub fn pool(&self, spec_json: String, pool_json: String) -> Result<pool::NativePool> {
        let host = self.core.host()?;
        let spec = spawn_spec(&spec_json)?;
        let config =
            acp_host::options::pool(spec, &doc(&pool_json)?, Face::Node).map_err(core_err)?;
        pool::NativePool::open(&self.core, &host, config)
    }

    /// A connection to an agent over the embedder's stream: the facade pumps the stream through
    /// it, then calls its `handshake` (see connect.rs).
    #[napi]
    pub fn connect(&self) -> Result<connect::NativeConnection> {
        Ok(connect::NativeConnection::new(self.core.host()?))
    }

    /// Answer a pending permission request: an offered option id, or `null` to deny. The
    /// answer's receipt, as JSON (docs/EVENTS.md, "Delivery receipts").
    #[napi]
    pub async fn respond_permission(
        &self,
        request_id: f64,
        option_id: Option<String>,
    ) -> Result<String> {
        let host = self.core.host()?;
        if !(request_id >= 0.0 && request_id.fract() == 0.0) {
            return Err(invalid("request id must be a non-negative integer"));
        }
        host.respond_permission(request_id as u64, option_id)
            .await
            .map(|r| r.to_json().to_string())
            .map_err(core_err)
    }

    /// Answer a pending elicitation request with `{"action", "content"?}` (JSON). Content that
    /// does not match the requested schema, or an answer that is not of that shape, answers the
    /// agent `cancel` (fail-closed) and fails with `invalid_argument`.
    #[napi]
    pub async fn respond_elicitation(
        &self,
        request_id: f64,
        answer_json: String,
    ) -> Result<String> {
        let host = self.core.host()?;
        if !(request_id >= 0.0 && request_id.fract() == 0.0) {
            return Err(invalid("request id must be a non-negative integer"));
        }
        let id = request_id as u64;
        match parse_answer(&answer_json) {
            Ok(answer) => host
                .respond_elicitation(id, answer)
                .await
                .map(|r| r.to_json().to_string())
                .map_err(core_err),
            Err(why) => {
                // Like content that does not match the schema: the request (if pending) is
                // answered `cancel`; an unknown or settled id says so.
                host.reject_elicitation(id, format!("invalid elicitation answer: {why}"))
                    .await
                    .map_err(core_err)?;
                let e = acp_host::Error::InvalidArgument(format!(
                    "invalid elicitation answer: {why}; the elicitation was cancelled"
                ));
                Err(core_err(e.rejecting(acp_host::RequestState::Unavailable)))
            }
        }
    }

    /// The host reader: every event from the host's start (the facade's emitter reads it);
    /// `null` when events are disabled or it was taken already.
    #[napi]
    pub fn host_reader(&self) -> Option<NativeEventReader> {
        let hub = self.core.hub.as_ref()?;
        hub.take_host().map(NativeEventReader::new)
    }

    /// A live reader: every event from now on, or one agent's (`agent`) until its last event;
    /// `null` when events are disabled.
    #[napi]
    pub fn live_reader(&self, agent: Option<u32>) -> Option<NativeEventReader> {
        let scope = agent.map_or(Scope::All, |a| Scope::Agent(u64::from(a)));
        let hub = self.core.hub.as_ref()?;
        Some(NativeEventReader::new(hub.subscribe(scope)))
    }

    /// A session reader: the session's events from the oldest its history holds, then live,
    /// until the session's last event; `null` when events are disabled.
    #[napi]
    pub fn session_reader(&self, agent: u32, session: String) -> Option<NativeEventReader> {
        let hub = self.core.hub.as_ref()?;
        Some(NativeEventReader::new(
            hub.session(u64::from(agent), &session),
        ))
    }

    /// Resolves once turn `turn`'s `turn_ended` was handed on by every open reader of the session
    /// (`events_stalled` when nothing moves for `eventStallTimeoutMs`); at once without events.
    #[napi]
    pub async fn turn_delivered(&self, agent: u32, session: String, turn: f64) -> Result<()> {
        let Some(hub) = self.core.hub.clone() else {
            return Ok(());
        };
        if !(turn >= 0.0 && turn.fract() == 0.0) {
            return Err(invalid("turn must be a non-negative integer"));
        }
        hub.turn_delivered(u64::from(agent), &session, turn as u64)
            .await
            .map_err(core_err)
    }

    /// Shut every agent down (stdin EOF → SIGTERM → SIGKILL, whole process groups), end the event
    /// stream once drained, and drop the host; resolves once the log handler (if any) was handed
    /// the shutdown's records. Idempotent.
    #[napi]
    pub async fn close(&self) -> Result<()> {
        // The pools first: they would start new spares on the host while it shuts down.
        let pools: Vec<Pool> = self
            .core
            .pools
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .map(|p| p.into_values().collect())
            .unwrap_or_default();
        let tasks: Vec<_> = pools
            .into_iter()
            .map(|p| tokio::spawn(async move { p.shutdown().await }))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        let host = self.core.host.lock().ok().and_then(|h| h.clone());
        if let Some(host) = host {
            host.shutdown().await;
            // The readers end once they have what the shutdown queued.
            host.close_events();
        }
        if let Ok(mut h) = self.core.host.lock() {
            h.take();
        }
        // The log handler takes the shutdown's records before `close()` resolves.
        if let Some(log) = &self.core.log {
            log.close().await;
        }
        self.core.closed.send_replace(true);
        Ok(())
    }

    /// Log records dropped so far because the log handler fell behind (see log.rs).
    #[napi]
    pub fn dropped_log_records(&self) -> f64 {
        self.core.log.as_ref().map_or(0.0, |l| l.dropped() as f64)
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        *self.core.closed.borrow()
    }
}

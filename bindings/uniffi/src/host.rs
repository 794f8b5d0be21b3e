//! `Host`: the core's host, built from the host options document (`crate::options`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use acp_host::options::{Face, Hooks};
use acp_host::{EventHub, HostConfig};

use crate::agent::Agent;
use crate::error::AcpError;
use crate::events::EventStream;
use crate::handlers::{
    ElicitationHandler, ExtHandler, PermissionHandler, TerminalAuthRunner, elicitation_decider,
    ext_handler, parse_elicitation_answer, permission_decider, terminal_auth,
};
use crate::log::{self, LogHandler};
use crate::options::{AgentSpec, HostOptions, PoolOptions};
use crate::pool::{Pool, PoolShared};
use crate::runtime::{finish_or_detach, on_rt, rt};
use crate::transport::{ByteStream, bridge};

/// The embedder's handlers (all optional).
struct Handlers {
    permission: Option<Arc<dyn PermissionHandler>>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    ext: Option<Arc<dyn ExtHandler>>,
    terminal_auth: Option<Arc<dyn TerminalAuthRunner>>,
    log: Option<Arc<dyn acp_host::log::LogSink>>,
}

/// The options as the core's host document, checked by the core, with the handlers attached by
/// the core's one rule (`HostOptions::with_hooks`).
fn config(o: &HostOptions, h: Handlers) -> Result<HostConfig, AcpError> {
    let doc = o.to_document()?;
    let options = acp_host::options::host(&doc, Face::Kotlin)?;
    let hooks = Hooks {
        permission: h.permission.map(permission_decider),
        elicitation: h.elicitation.map(elicitation_decider),
        ext: h.ext.map(ext_handler),
        terminal_auth: h.terminal_auth.map(terminal_auth),
        log: h.log,
        ..Hooks::default()
    };
    Ok(options.with_hooks(hooks)?)
}

/// The host: spawns agents, owns their processes and the one ordered event stream. `close()`
/// (or dropping the last reference) shuts every agent down; `shutdown()` does it and waits.
#[derive(Debug, uniffi::Object)]
pub struct Host {
    host: acp_host::Host,
    /// The pump between the core's event stream and this face's host and session streams
    /// (none when events are disabled).
    hub: Option<EventHub>,
    /// The host owns its agents until it is shut down (a dropped `Agent` handle does not lose
    /// the agent).
    agents: Arc<Mutex<Vec<acp_host::Agent>>>,
    /// The pools made by `pool()`, shut down with the host.
    pools: Arc<Mutex<Vec<Weak<PoolShared>>>>,
    closed: Arc<AtomicBool>,
    /// Log records the log handler's queue had no room for (none without a handler).
    log_dropped: Option<Arc<log::Dropped>>,
}

#[uniffi::export]
impl Host {
    /// A host. Without a permission handler every request no policy rule allowed is denied
    /// (fail-closed), unless `permission = "manual"`. Options and handlers are checked by the
    /// core (docs/OPTIONS.md): a handler given while its option names another answerer is
    /// `InvalidConfig`.
    /// `extHandler` serves the agent's extension requests; `terminalAuth` runs terminal logins;
    /// `logHandler` gets the host's log records at `logLevel` and more severe, on a thread of
    /// its own behind a bounded queue (`droppedLogRecords()`).
    #[uniffi::constructor(default(
        options = None,
        permission_handler = None,
        elicitation_handler = None,
        ext_handler = None,
        terminal_auth = None,
        log_handler = None
    ))]
    pub fn new(
        options: Option<HostOptions>,
        permission_handler: Option<Arc<dyn PermissionHandler>>,
        elicitation_handler: Option<Arc<dyn ElicitationHandler>>,
        ext_handler: Option<Arc<dyn ExtHandler>>,
        terminal_auth: Option<Arc<dyn TerminalAuthRunner>>,
        log_handler: Option<Arc<dyn LogHandler>>,
    ) -> Result<Arc<Host>, AcpError> {
        let (log, log_dropped) = match log_handler {
            Some(h) => {
                let (sink, dropped) = log::sink(h)?;
                (Some(sink), Some(dropped))
            }
            None => (None, None),
        };
        let handlers = Handlers {
            permission: permission_handler,
            elicitation: elicitation_handler,
            ext: ext_handler,
            terminal_auth,
            log,
        };
        let config = config(&options.unwrap_or_default(), handlers)?;
        let _enter = rt().enter();
        let host = acp_host::Host::new(config);
        let hub = host
            .events()
            .map(|s| EventHub::start(s, host.config(), rt().handle()));
        Ok(Arc::new(Host {
            host,
            hub,
            agents: Arc::new(Mutex::new(Vec::new())),
            pools: Arc::new(Mutex::new(Vec::new())),
            closed: Arc::new(AtomicBool::new(false)),
            log_dropped,
        }))
    }

    /// Log records dropped so far because the log handler was 1024 records behind
    /// (the handler is told too: a `warn` record of target `log`). 0 without a handler.
    pub fn dropped_log_records(&self) -> u64 {
        self.log_dropped
            .as_ref()
            .map_or(0, |d| d.total.load(Ordering::Relaxed))
    }

    /// A new stream of the host's events, pulled (`Unsupported` when events are disabled). Any
    /// number may be open: each gets every event from its opening on (the first one ever also
    /// those kept before it), in `seq` order; the slowest open stream sets the pace, none is
    /// dropped. Kotlin: `host.events()` is a `Flow` over them.
    pub fn event_stream(&self) -> Result<Arc<EventStream>, AcpError> {
        if !self.host.config().events_enabled {
            return Err(AcpError::Unsupported {
                detail: "events are disabled (eventsEnabled = false)".into(),
                data: None,
            });
        }
        // The first stream is the core's host reader (it also gets what was kept before it);
        // later ones are live readers of every event, bounded and backpressured alike.
        match &self.hub {
            Some(hub) => Ok(Arc::new(EventStream::new(
                hub.take_host()
                    .unwrap_or_else(|| hub.subscribe(acp_host::events::Scope::All)),
            ))),
            None => Err(AcpError::Unsupported {
                detail: "events are disabled (eventsEnabled = false)".into(),
                data: None,
            }),
        }
    }

    /// The effective host options as the core's host document, JSON text (docs/OPTIONS.md):
    /// every option with the value in force, callables shown by who answers.
    pub fn effective_options(&self) -> String {
        crate::options::effective(self.host.config())
    }

    /// Name of the effective policy (a preset name, or `custom`).
    pub fn policy_name(&self) -> String {
        self.host.policy().name().to_owned()
    }

    /// The capabilities sent in `initialize`, as JSON.
    pub fn client_capabilities(&self) -> String {
        self.host.client_capabilities().to_json().to_string()
    }

    /// Spawn an agent process and initialize it.
    pub async fn spawn(&self, spec: AgentSpec) -> Result<Arc<Agent>, AcpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(AcpError::Closed {
                detail: "the host is shut down".into(),
                data: None,
            });
        }
        let core = spec.to_core()?;
        let host = self.host.clone();
        let agents = self.agents.clone();
        let closed = self.closed.clone();
        let hub = self.hub.clone();
        on_rt(async move {
            let agent = host.spawn(core).await?;
            if let Ok(mut all) = agents.lock() {
                all.retain(|a| !a.is_gone());
                if !closed.load(Ordering::SeqCst) {
                    all.push(agent.clone());
                }
            }
            Ok(Arc::new(Agent::new(agent, agents, hub)))
        })
        .await
    }

    /// Speak ACP over a byte stream you provide (a socket, a container's stdio, an SSH
    /// channel) and initialize the agent at its other end: the same agent as `spawn` gives,
    /// without a process (`pid()` is null, no restarts, its end is the stream's end). Kotlin:
    /// `host.connect(input, output)` / `host.connect(socket)`.
    pub async fn connect(&self, stream: Arc<dyn ByteStream>) -> Result<Arc<Agent>, AcpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(AcpError::Closed {
                detail: "the host is shut down".into(),
                data: None,
            });
        }
        let host = self.host.clone();
        let agents = self.agents.clone();
        let closed = self.closed.clone();
        let hub = self.hub.clone();
        on_rt(async move {
            let (reader, writer) = bridge(stream).map_err(|e| AcpError::Io {
                detail: format!("cannot start the connection's threads: {e}"),
                data: None,
            })?;
            let agent = host.connect(reader, writer).await?;
            if let Ok(mut all) = agents.lock() {
                all.retain(|a| !a.is_gone());
                if !closed.load(Ordering::SeqCst) {
                    all.push(agent.clone());
                }
            }
            Ok(Arc::new(Agent::new(agent, agents, hub)))
        })
        .await
    }

    /// A pool of agent processes for `spec` (docs/ORCHESTRATION.md, "Pools"): sessions on warm,
    /// reused processes, one process per session or several per process, at most
    /// `config.maxAgents` processes. Its warm spares start in the background (`ready()` waits for
    /// them). A bad spec or pool option is `InvalidConfig` with the core's `data.path` (`cwd`,
    /// `pool.maxAgents`, …); nothing is started then. The
    /// pool ends with `shutdown()`, the host's shutdown, or when its last `Pool` and
    /// `PooledSession` objects are gone.
    pub fn pool(&self, spec: AgentSpec, options: PoolOptions) -> Result<Arc<Pool>, AcpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(AcpError::Closed {
                detail: "the host is shut down".into(),
                data: None,
            });
        }
        let config =
            acp_host::options::pool(spec.to_core()?, &options.to_document()?, Face::Kotlin)?;
        let (pool, shared) = Pool::new(&self.host, config, self.agents.clone(), self.hub.clone())?;
        if let Ok(mut pools) = self.pools.lock() {
            pools.retain(|p| p.strong_count() > 0);
            pools.push(Arc::downgrade(&shared));
        }
        Ok(pool)
    }

    /// Answer a pending permission request: an offered option id, or null to deny. Returns the
    /// answer's receipt as JSON (docs/EVENTS.md, "Delivery receipts"): `{"status":
    /// "delivered"}`, or `uncertain` / `rejected` with `code` and `message`; a thrown error's
    /// `data` holds the `rejected` receipt of an answer that was not used.
    pub async fn respond_permission(
        &self,
        request_id: u64,
        option_id: Option<String>,
    ) -> Result<String, AcpError> {
        let host = self.host.clone();
        on_rt(async move {
            let receipt = host.respond_permission(request_id, option_id).await?;
            Ok(receipt.to_json().to_string())
        })
        .await
    }

    /// Answer a pending elicitation with the ACP answer as JSON (`{"action": …}`). Returns the
    /// answer's receipt as JSON, as `respond_permission` does.
    pub async fn respond_elicitation(
        &self,
        request_id: u64,
        answer: String,
    ) -> Result<String, AcpError> {
        let answer = parse_elicitation_answer(&answer)
            .map_err(|m| AcpError::invalid_argument(m, Some("answer")))?;
        let host = self.host.clone();
        on_rt(async move {
            let receipt = host.respond_elicitation(request_id, answer).await?;
            Ok(receipt.to_json().to_string())
        })
        .await
    }

    /// The agent with this id, while it is alive.
    pub fn agent(&self, id: u64) -> Option<Arc<Agent>> {
        self.host
            .agent(id)
            .map(|a| Arc::new(Agent::new(a, self.agents.clone(), self.hub.clone())))
    }

    /// Shut every agent down (stdin EOF → SIGTERM → SIGKILL to its process group) and wait;
    /// then end the event stream after what is queued (`agent_exited` last). Idempotent.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let host = self.host.clone();
        let agents = self.agents.clone();
        let pools = self.pools.clone();
        on_rt(shutdown_all(host, agents, pools)).await;
    }

    /// True once `shutdown()` (or `close()`) began.
    pub fn is_shut_down(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

type Pools = Arc<Mutex<Vec<Weak<PoolShared>>>>;

async fn shutdown_all(
    host: acp_host::Host,
    agents: Arc<Mutex<Vec<acp_host::Agent>>>,
    pools: Pools,
) {
    // Pools first: they stop refilling their spares, then end their processes.
    let live: Vec<acp_host::Pool> = pools
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default()
        .iter()
        .filter_map(Weak::upgrade)
        .map(|p| p.pool.clone())
        .collect();
    let tasks: Vec<_> = live
        .into_iter()
        .map(|p| tokio::spawn(async move { p.shutdown().await }))
        .collect();
    host.shutdown().await;
    for t in tasks {
        let _ = t.await;
    }
    let owned: Vec<acp_host::Agent> = agents
        .lock()
        .map(|mut a| std::mem::take(&mut *a))
        .unwrap_or_default();
    drop(owned);
    host.close_events();
}

impl Drop for Host {
    /// `close()` from Kotlin/Swift (or the last reference going): no agent outlives its host.
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::SeqCst)
            && self.agents.lock().map(|a| a.is_empty()).unwrap_or(true)
            && self.pools.lock().map(|p| p.is_empty()).unwrap_or(true)
        {
            return;
        }
        finish_or_detach(shutdown_all(
            self.host.clone(),
            self.agents.clone(),
            self.pools.clone(),
        ));
    }
}

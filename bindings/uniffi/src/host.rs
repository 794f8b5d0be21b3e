//! `Host`: the core's host with its options as a record (every field defaulted, so Kotlin's
//! `HostOptions(permissionTimeoutMs = 5000u)` names only what it changes).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use acp_host::permission::policy::Policy;
use acp_host::services::{FsService, TerminalService};
use acp_host::{ClientInfo, ElicitationModes, HostConfig};

use crate::agent::{Agent, AgentSpec};
use crate::error::AcpError;
use crate::events::{EventStream, Pending};
use crate::handlers::{
    ElicitationHandler, ExtHandler, PermissionHandler, TerminalAuthRunner, elicitation_decider,
    ext_service, parse_elicitation_answer, permission_decider, terminal_auth,
};
use crate::pool::{Pool, PoolConfig, PoolShared};
use crate::runtime::{finish_or_detach, on_rt, rt};

/// Host-wide settings. Durations are milliseconds; `null` keeps the core's default (every limit
/// is bounded by default, docs/ARCHITECTURE.md).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct HostOptions {
    /// A policy preset by name (`deny-all`, `ask`, `read-only`, `workspace-write`, …).
    #[uniffi(default = None)]
    pub policy_preset: Option<String>,
    /// A policy document as JSON text (docs/PERMISSIONS.md).
    #[uniffi(default = None)]
    pub policy_json: Option<String>,
    /// A policy file (JSON).
    #[uniffi(default = None)]
    pub policy_file: Option<String>,
    /// Extra sandbox roots (absolute) for every session, besides its cwd.
    #[uniffi(default = [])]
    pub roots: Vec<String>,
    /// Nobody decides permissions in-process: answer `permission_requested` events with
    /// `Host.respondPermission`. Ignored when a permission handler is given.
    #[uniffi(default = false)]
    pub manual_permissions: bool,
    #[uniffi(default = None)]
    pub permission_timeout_ms: Option<u64>,
    /// Control requests (initialize, session/new, …); `0`: no timeout.
    #[uniffi(default = None)]
    pub request_timeout_ms: Option<u64>,
    /// A whole prompt turn (default: none).
    #[uniffi(default = None)]
    pub prompt_timeout_ms: Option<u64>,
    /// How long a cancelled turn waits for the agent's answer before it fails `cancelled`.
    #[uniffi(default = None)]
    pub cancel_grace_ms: Option<u64>,
    /// Between the rungs of the shutdown ladder (stdin EOF → SIGTERM → SIGKILL).
    #[uniffi(default = None)]
    pub shutdown_grace_ms: Option<u64>,
    #[uniffi(default = None)]
    pub max_line_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub event_capacity: Option<u64>,
    #[uniffi(default = None)]
    pub stderr_tail_bytes: Option<u64>,
    /// Raw `wire` events for every message in and out.
    #[uniffi(default = false)]
    pub wire_events: bool,
    /// False: no event is queued (for embedders that only use return values).
    #[uniffi(default = true)]
    pub events_enabled: bool,
    /// The built-in sandboxed file-system service (`fs/read_text_file`, `fs/write_text_file`) (false: not advertised).
    #[uniffi(default = true)]
    pub fs: bool,
    /// The built-in terminal service (`terminal/create` and the rest) (false: not advertised).
    #[uniffi(default = true)]
    pub terminal: bool,
    /// Elicitation modes advertised (`form`, `url`); empty with a handler means both.
    #[uniffi(default = [])]
    pub elicitation_modes: Vec<String>,
    /// Answer `elicitation_requested` events with `Host.respondElicitation` (no handler).
    #[uniffi(default = false)]
    pub manual_elicitations: bool,
    #[uniffi(default = None)]
    pub elicitation_timeout_ms: Option<u64>,
    #[uniffi(default = None)]
    pub client_name: Option<String>,
    #[uniffi(default = None)]
    pub client_version: Option<String>,
    /// Unstable ACP methods opted into (`session/fork`).
    #[uniffi(default = [])]
    pub unstable: Vec<String>,
    /// Merge bursts of `tool_call_update`s for the same tool call that wait unpulled.
    #[uniffi(default = false)]
    pub coalesce_tool_call_updates: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            policy_preset: None,
            policy_json: None,
            policy_file: None,
            roots: Vec::new(),
            manual_permissions: false,
            permission_timeout_ms: None,
            request_timeout_ms: None,
            prompt_timeout_ms: None,
            cancel_grace_ms: None,
            shutdown_grace_ms: None,
            max_line_bytes: None,
            event_capacity: None,
            stderr_tail_bytes: None,
            wire_events: false,
            events_enabled: true,
            fs: true,
            terminal: true,
            elicitation_modes: Vec::new(),
            manual_elicitations: false,
            elicitation_timeout_ms: None,
            client_name: None,
            client_version: None,
            unstable: Vec::new(),
            coalesce_tool_call_updates: false,
        }
    }
}

fn size(path: &str, n: u64) -> Result<usize, AcpError> {
    usize::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| AcpError::invalid_config(path, format!("{path} must be at least 1")))
}

/// The embedder's handlers (all optional).
struct Handlers {
    permission: Option<Arc<dyn PermissionHandler>>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    ext: Option<Arc<dyn ExtHandler>>,
    terminal_auth: Option<Arc<dyn TerminalAuthRunner>>,
}

fn config(o: HostOptions, h: Handlers) -> Result<HostConfig, AcpError> {
    let policy = match (o.policy_preset, o.policy_json, o.policy_file) {
        (None, None, None) => None,
        (Some(name), None, None) => Some(Policy::preset_config(&name)?),
        (None, Some(text), None) => Some(Policy::from_json(&text)?),
        (None, None, Some(path)) => Some(Policy::from_file(std::path::Path::new(&path))?),
        _ => {
            return Err(AcpError::invalid_config(
                "policy",
                "give one of policyPreset, policyJson, policyFile",
            ));
        }
    };
    let mut c = HostConfig {
        policy,
        ..HostConfig::default()
    };
    for root in &o.roots {
        if !std::path::Path::new(root).is_absolute() {
            return Err(AcpError::invalid_config(
                "roots",
                format!("roots must be absolute paths, got `{root}`"),
            ));
        }
    }
    c.roots = o.roots.into_iter().map(PathBuf::from).collect();
    let ms = Duration::from_millis;
    if let Some(t) = o.permission_timeout_ms {
        c.permission_timeout = ms(t);
    }
    if let Some(t) = o.request_timeout_ms {
        c.request_timeout = (t > 0).then(|| ms(t));
    }
    c.prompt_timeout = o.prompt_timeout_ms.filter(|t| *t > 0).map(ms);
    if let Some(t) = o.cancel_grace_ms {
        c.cancel_grace = ms(t);
    }
    if let Some(t) = o.shutdown_grace_ms {
        c.shutdown_grace = ms(t);
    }
    if let Some(t) = o.elicitation_timeout_ms {
        c.elicitation_timeout = ms(t);
    }
    if let Some(n) = o.max_line_bytes {
        c.max_line_bytes = size("maxLineBytes", n)?;
    }
    if let Some(n) = o.event_capacity {
        c.event_capacity = size("eventCapacity", n)?;
    }
    if let Some(n) = o.stderr_tail_bytes {
        c.stderr_tail_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    c.wire_events = o.wire_events;
    c.events_enabled = o.events_enabled;
    c.coalesce_tool_call_updates = o.coalesce_tool_call_updates;
    acp_host::protocol::check_opt_in(&o.unstable)
        .map_err(|m| AcpError::invalid_config("unstable", m))?;
    c.unstable = o.unstable;
    if !o.fs {
        c.fs = FsService::Disabled;
    }
    if !o.terminal {
        c.terminal = TerminalService::Disabled;
    }
    if o.client_name.is_some() || o.client_version.is_some() {
        let d = ClientInfo::default();
        c.client_info = ClientInfo {
            name: o.client_name.unwrap_or(d.name),
            version: o.client_version.unwrap_or(d.version),
        };
    }
    if let Some(ext) = h.ext {
        c.ext = ext_service(ext);
    }
    if let Some(runner) = h.terminal_auth {
        c.terminal_auth = terminal_auth(runner);
    }
    c.permission = match (h.permission, o.manual_permissions) {
        (Some(h), _) => acp_host::PermissionHandler::Decider(permission_decider(h)),
        (None, true) => acp_host::PermissionHandler::Manual,
        (None, false) => acp_host::PermissionHandler::DenyAll,
    };
    let mut modes = ElicitationModes::default();
    for m in &o.elicitation_modes {
        match m.as_str() {
            "form" => modes.form = true,
            "url" => modes.url = true,
            other => {
                return Err(AcpError::invalid_config(
                    "elicitationModes",
                    format!("unknown elicitation mode `{other}` (form, url)"),
                ));
            }
        }
    }
    let given = modes.any();
    if !given {
        modes = ElicitationModes::FORM_AND_URL;
    }
    c.elicitation = match (h.elicitation, o.manual_elicitations) {
        (Some(h), _) => acp_host::ElicitationHandler::Decider {
            modes,
            decider: elicitation_decider(h),
        },
        (None, true) => acp_host::ElicitationHandler::Manual { modes },
        (None, false) if given => {
            return Err(AcpError::invalid_config(
                "elicitationModes",
                "elicitationModes needs an elicitation handler or manualElicitations",
            ));
        }
        (None, false) => acp_host::ElicitationHandler::Unsupported,
    };
    Ok(c)
}

/// The host: spawns agents, owns their processes and the one ordered event stream. `close()`
/// (or dropping the last reference) shuts every agent down; `shutdown()` does it and waits.
#[derive(Debug, uniffi::Object)]
pub struct Host {
    host: acp_host::Host,
    /// Drained into a bounded buffer until the first `event_stream()` takes it.
    events: Mutex<Option<Pending>>,
    /// The host owns its agents until it is shut down (a dropped `Agent` handle does not lose
    /// the agent).
    agents: Arc<Mutex<Vec<acp_host::Agent>>>,
    /// The pools made by `pool()`, shut down with the host.
    pools: Arc<Mutex<Vec<Weak<PoolShared>>>>,
    closed: Arc<AtomicBool>,
}

#[uniffi::export]
impl Host {
    /// A host. Without a permission handler every request no policy rule allowed is denied
    /// (fail-closed), unless `manualPermissions`.
    /// `extHandler` serves the agent's extension requests; `terminalAuth` runs terminal logins.
    #[uniffi::constructor(default(
        options = None,
        permission_handler = None,
        elicitation_handler = None,
        ext_handler = None,
        terminal_auth = None
    ))]
    pub fn new(
        options: Option<HostOptions>,
        permission_handler: Option<Arc<dyn PermissionHandler>>,
        elicitation_handler: Option<Arc<dyn ElicitationHandler>>,
        ext_handler: Option<Arc<dyn ExtHandler>>,
        terminal_auth: Option<Arc<dyn TerminalAuthRunner>>,
    ) -> Result<Arc<Host>, AcpError> {
        let handlers = Handlers {
            permission: permission_handler,
            elicitation: elicitation_handler,
            ext: ext_handler,
            terminal_auth,
        };
        let config = config(options.unwrap_or_default(), handlers)?;
        let (max_events, max_bytes) = (config.event_capacity, config.event_queue_bytes);
        let _enter = rt().enter();
        let host = acp_host::Host::new(config);
        let events = host
            .events()
            .map(|s| Pending::start(s, max_events, max_bytes));
        Ok(Arc::new(Host {
            host,
            events: Mutex::new(events),
            agents: Arc::new(Mutex::new(Vec::new())),
            pools: Arc::new(Mutex::new(Vec::new())),
            closed: Arc::new(AtomicBool::new(false)),
        }))
    }

    /// The host's event stream, pulled (once per host; `InvalidArgument` on a second call,
    /// `Unsupported` when events are disabled). Kotlin: `host.events()` is its `Flow`.
    pub fn event_stream(&self) -> Result<Arc<EventStream>, AcpError> {
        if !self.host.config().events_enabled {
            return Err(AcpError::Unsupported {
                detail: "events are disabled (eventsEnabled = false)".into(),
                data: None,
            });
        }
        let taken = self.events.lock().ok().and_then(|mut e| e.take());
        taken
            .map(|p| Arc::new(p.take()))
            .ok_or_else(|| AcpError::invalid_argument("events() was already called", None))
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
        let core = core_spec(spec);
        let host = self.host.clone();
        let agents = self.agents.clone();
        let closed = self.closed.clone();
        on_rt(async move {
            let agent = host.spawn(core).await?;
            if let Ok(mut all) = agents.lock() {
                all.retain(|a| !a.is_gone());
                if !closed.load(Ordering::SeqCst) {
                    all.push(agent.clone());
                }
            }
            Ok(Arc::new(Agent::new(agent, agents)))
        })
        .await
    }

    /// A pool of agent processes for `spec` (docs/ORCHESTRATION.md, "Pools"): sessions on warm,
    /// reused processes, one process per session or several per process, at most
    /// `config.maxAgents` processes. Its warm spares start in the background (`ready()` waits for
    /// them). A bad config is `InvalidConfig` (`data.path` `pool`); nothing is started then. The
    /// pool ends with `shutdown()`, the host's shutdown, or when its last `Pool` and
    /// `PooledSession` objects are gone.
    pub fn pool(&self, spec: AgentSpec, config: PoolConfig) -> Result<Arc<Pool>, AcpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(AcpError::Closed {
                detail: "the host is shut down".into(),
                data: None,
            });
        }
        let (pool, shared) = Pool::new(&self.host, core_spec(spec), &config, self.agents.clone())?;
        if let Ok(mut pools) = self.pools.lock() {
            pools.retain(|p| p.strong_count() > 0);
            pools.push(Arc::downgrade(&shared));
        }
        Ok(pool)
    }

    /// Answer a pending permission request: an offered option id, or null to deny.
    pub async fn respond_permission(
        &self,
        request_id: u64,
        option_id: Option<String>,
    ) -> Result<(), AcpError> {
        let host = self.host.clone();
        on_rt(async move { Ok(host.respond_permission(request_id, option_id).await?) }).await
    }

    /// Answer a pending elicitation with the ACP answer as JSON (`{"action": …}`).
    pub async fn respond_elicitation(
        &self,
        request_id: u64,
        answer: String,
    ) -> Result<(), AcpError> {
        let answer = parse_elicitation_answer(&answer)
            .map_err(|m| AcpError::invalid_argument(m, Some("answer")))?;
        let host = self.host.clone();
        on_rt(async move { Ok(host.respond_elicitation(request_id, answer).await?) }).await
    }

    /// The agent with this id, while it is alive.
    pub fn agent(&self, id: u64) -> Option<Arc<Agent>> {
        self.host
            .agent(id)
            .map(|a| Arc::new(Agent::new(a, self.agents.clone())))
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

/// The core spec of a face spec.
fn core_spec(spec: AgentSpec) -> acp_host::AgentSpec {
    let mut core = acp_host::AgentSpec::new(spec.command).args(spec.args);
    core.env = spec
        .env
        .into_iter()
        .map(|(k, v)| (k, Some(v)))
        .collect::<BTreeMap<_, _>>();
    core.cwd = spec.cwd.map(PathBuf::from);
    for name in spec.unset_env {
        core.env.insert(name, None);
    }
    core.restart = spec.restart.as_ref().map(acp_host::RestartPolicy::from);
    core
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

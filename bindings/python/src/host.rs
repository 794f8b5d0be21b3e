//! `NativeHost`, `NativeAgent`, `NativeSession`: thin handles over the core's `Host`, `Agent`,
//! `Session`. Aggregates cross as JSON text (the Python package parses them); every operation
//! takes `aio` (blocking with the GIL released, or an awaitable).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_host::options::{self, Face, Hooks};
use acp_host::{AgentSpec, SessionOptions, TurnResult};
use pyo3::prelude::*;
use serde_json::Value;

use crate::connect::Bridge;
use crate::elicitation::PyElicitor;
use crate::errors;
use crate::events::{Filter, Pump, Subscription};
use crate::log::LogBridge;
use crate::opening::OpeningHandle;
use crate::permission::{LoopSlot, PyDecider};
use crate::pool::{NativePool, Pools};
use crate::services::{PyExt, PyFs, PyTerminal};
use crate::{Waited, call, seconds, within};

pub(crate) fn parse_json(py: Python<'_>, what: &str, text: &str) -> PyResult<Value> {
    serde_json::from_str(text)
        .map_err(|e| errors::local(py, "invalid_argument", format!("{what}: not JSON: {e}")))
}

pub(crate) fn opt_timeout(name: &str, v: Option<f64>) -> PyResult<Option<Duration>> {
    match v {
        None => Ok(None),
        Some(s) if s.is_infinite() && s > 0.0 => Ok(None),
        Some(s) => seconds(name, s).map(Some),
    }
}

/// An option document given as JSON text by the package (`_common.py`), parsed by the core:
/// text that is not JSON is `invalid_config` at `$`, as in every face.
pub(crate) fn doc(py: Python<'_>, text: &str) -> PyResult<Value> {
    options::document(text).map_err(|e| errors::to_py(py, &e))
}

/// An agent spec document (docs/OPTIONS.md, "Agent spec"), checked and built by the core.
pub(crate) fn agent_spec(py: Python<'_>, text: &str) -> PyResult<AgentSpec> {
    options::agent_spec(&doc(py, text)?, Face::Python).map_err(|e| errors::to_py(py, &e))
}

/// A session options document (docs/OPTIONS.md, "Session options"), checked by the core.
pub(crate) fn session_options(py: Python<'_>, text: &str) -> PyResult<SessionOptions> {
    options::session(&doc(py, text)?, Face::Python).map_err(|e| errors::to_py(py, &e))
}

#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct NativeHost {
    host: acp_host::Host,
    pump: Arc<Pump>,
    event_loop: LoopSlot,
    closed: Arc<AtomicBool>,
    /// The host owns its agents until it closes (or they exit): a Python script that drops its
    /// `Agent` object does not lose the agent (the core shuts an agent down with its last handle).
    agents: Arc<Mutex<Vec<acp_host::Agent>>>,
    /// The pools made on this host and not shut down yet: `close` shuts them down first (so that
    /// none starts a spare after the host's agents were shut down).
    pools: Pools,
    /// The log thread, when the host was given `log_level` (`log.rs`).
    log: Option<Arc<LogBridge>>,
}

impl NativeHost {
    /// Start an agent (`start`: the core's spawn or connect) and keep it until the host closes.
    fn admit<F>(&self, py: Python<'_>, aio: bool, supervised: bool, start: F) -> PyResult<Py<PyAny>>
    where
        F: std::future::Future<Output = acp_host::Result<acp_host::Agent>> + Send + 'static,
    {
        if self.closed() {
            return Err(errors::local(py, "closed", "the host is closed"));
        }
        let pump = self.pump.clone();
        let agents = self.agents.clone();
        let closed = self.closed.clone();
        call(py, aio, async move {
            // Given up: the agent being started goes with its last handle (shut down).
            let agent = start.await?;
            if supervised {
                pump.supervise(agent.id());
            }
            if let Ok(mut all) = agents.lock() {
                all.retain(|a| !a.is_gone());
                if !closed.load(Ordering::SeqCst) {
                    all.push(agent.clone());
                }
            }
            if closed.load(Ordering::SeqCst) {
                // Closed while starting: this agent must not outlive the host either.
                agent.shutdown().await;
                return Err(acp_host::Error::Closed("the host is closed".into()));
            }
            Ok(NativeAgent { agent, pump })
        })
    }
}

#[pymethods]
impl NativeHost {
    /// `doc_json`: the host options document (docs/OPTIONS.md, canonical names); the callables
    /// are the face's handlers, attached by the core's one rule (`HostOptions::with_hooks`).
    #[new]
    #[pyo3(signature = (doc_json, *, on_permission=None, on_elicitation=None, fs_handler=None,
        terminal_handler=None, on_ext_request=None, on_terminal_auth=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        doc_json: &str,
        on_permission: Option<Py<PyAny>>,
        on_elicitation: Option<Py<PyAny>>,
        fs_handler: Option<Py<PyAny>>,
        terminal_handler: Option<Py<PyAny>>,
        on_ext_request: Option<Py<PyAny>>,
        on_terminal_auth: Option<Py<PyAny>>,
    ) -> PyResult<NativeHost> {
        let document = doc(py, doc_json)?;
        let parsed = options::host(&document, Face::Python).map_err(|e| errors::to_py(py, &e))?;
        // Records only when asked for: `log_level` given (the core's `logLevel` then applies).
        let log = match document.get("logLevel") {
            Some(v) if !v.is_null() => Some(LogBridge::start().map_err(|e| {
                errors::local(py, "io", format!("cannot start the log thread: {e}"))
            })?),
            _ => None,
        };
        let event_loop: LoopSlot = Arc::new(Mutex::new(None));
        let hooks = Hooks {
            permission: on_permission.map(|handler| {
                Arc::new(PyDecider {
                    handler: Arc::new(handler),
                    event_loop: event_loop.clone(),
                }) as Arc<dyn acp_host::PermissionDecider>
            }),
            elicitation: on_elicitation.map(|handler| {
                Arc::new(PyElicitor {
                    handler: Arc::new(handler),
                    event_loop: event_loop.clone(),
                }) as Arc<dyn acp_host::ElicitationDecider>
            }),
            fs: fs_handler.map(|target| {
                Arc::new(PyFs {
                    target: Arc::new(target),
                    event_loop: event_loop.clone(),
                }) as Arc<dyn acp_host::services::FsHandler>
            }),
            terminal: terminal_handler.map(|target| {
                Arc::new(PyTerminal {
                    target: Arc::new(target),
                    event_loop: event_loop.clone(),
                }) as Arc<dyn acp_host::services::TerminalHandler>
            }),
            ext: on_ext_request.map(|target| {
                Arc::new(PyExt {
                    target: Arc::new(target),
                    event_loop: event_loop.clone(),
                }) as Arc<dyn acp_host::services::ExtHandler>
            }),
            terminal_auth: on_terminal_auth.map(|target| {
                Arc::new(crate::services::PyTerminalAuth {
                    target: Arc::new(target),
                    event_loop: event_loop.clone(),
                }) as Arc<dyn acp_host::auth::TerminalAuthRunner>
            }),
            log: log.as_ref().map(|(_, sink)| sink.clone()),
        };
        let config = parsed
            .with_hooks(hooks)
            .map_err(|e| errors::to_py(py, &e))?;
        let capacity = config.event_capacity;
        let stall = config.event_stall_timeout;
        let _guard = crate::rt().enter();
        let host = acp_host::Host::new(config);
        let pump = Pump::start(host.events(), capacity, stall);
        Ok(NativeHost {
            host,
            pump,
            event_loop,
            closed: Arc::new(AtomicBool::new(false)),
            agents: Arc::new(Mutex::new(Vec::new())),
            pools: Pools::default(),
            log: log.map(|(bridge, _)| bridge),
        })
    }

    /// The asyncio loop that coroutine permission and elicitation handlers (and plain ones, for
    /// AsyncHost) run on.
    fn set_loop(&self, event_loop: Option<Py<PyAny>>) {
        if let Ok(mut l) = self.event_loop.lock() {
            *l = event_loop;
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Log records dropped because the `logging` handlers fell [`crate::log::QUEUE`] records
    /// behind (0 without `log_level`).
    #[getter]
    fn dropped_log_records(&self) -> u64 {
        self.log.as_ref().map_or(0, |l| l.dropped())
    }

    /// Name of the effective policy (preset name, or `custom`).
    #[getter]
    fn policy_name(&self) -> String {
        self.host.policy().name().to_owned()
    }

    /// `spec_json`: the agent spec document (docs/OPTIONS.md); one the core refuses raises
    /// `invalid_config` and nothing is started.
    #[pyo3(signature = (spec_json, *, aio=false, timeout=None))]
    fn spawn(
        &self,
        py: Python<'_>,
        spec_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let spec = agent_spec(py, spec_json)?;
        let supervised = spec.restart.is_some();
        let host = self.host.clone();
        self.admit(py, aio, supervised, async move {
            within("spawn".into(), timeout, host.spawn(spec)).await
        })
    }

    /// ACP over `bridge` (`connect.rs`): the handshake over the embedder's stream, then an agent
    /// without a process of ours.
    #[pyo3(signature = (bridge, *, aio=false, timeout=None))]
    fn connect_bridge(
        &self,
        py: Python<'_>,
        bridge: &Bridge,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let Some((reader, writer)) = bridge.take_core() else {
            return Err(errors::local(
                py,
                "invalid_argument",
                "this bridge carries a connection already",
            ));
        };
        let host = self.host.clone();
        self.admit(py, aio, false, async move {
            within("connect".into(), timeout, host.connect(reader, writer)).await
        })
    }

    /// A pool of agents started from the agent spec `spec_json`, with the pool settings
    /// `pool_json` (docs/OPTIONS.md, "Pool options"; errors at `pool.*`). Settings the core
    /// refuses raise `invalid_config` and nothing is started; the warm spares start in the
    /// background.
    fn pool(&self, py: Python<'_>, spec_json: &str, pool_json: &str) -> PyResult<NativePool> {
        let spec = agent_spec(py, spec_json)?;
        let config = options::pool(spec, &doc(py, pool_json)?, Face::Python)
            .map_err(|e| errors::to_py(py, &e))?;
        // Checked and registered under the pools' lock: `close` sets `closed` before it takes
        // them, so a pool is either refused here or shut down by `close`.
        let made = self.pools.add(&self.closed, || {
            let _guard = crate::rt().enter();
            acp_host::Pool::new(&self.host, config)
        });
        match made {
            None => Err(errors::local(py, "closed", "the host is closed")),
            Some(Err(e)) => Err(errors::to_py(py, &e)),
            Some(Ok((id, pool))) => Ok(NativePool::new(
                id,
                pool,
                self.pools.clone(),
                self.pump.clone(),
            )),
        }
    }

    #[pyo3(signature = (request_id, option_id, *, aio=false))]
    fn respond_permission(
        &self,
        py: Python<'_>,
        request_id: u64,
        option_id: Option<String>,
        aio: bool,
    ) -> PyResult<Py<PyAny>> {
        let host = self.host.clone();
        call(py, aio, async move {
            host.respond_permission(request_id, option_id).await
        })
    }

    /// Answer a pending elicitation: `answer_json` in the ACP shape. An answer that is not one
    /// (or `error`, the package's reason why not) cancels the request and raises
    /// `invalid_argument`, as accepted content that does not match the schema does in the core.
    #[pyo3(signature = (request_id, answer_json, error=None, *, aio=false))]
    fn respond_elicitation(
        &self,
        py: Python<'_>,
        request_id: u64,
        answer_json: Option<String>,
        error: Option<String>,
        aio: bool,
    ) -> PyResult<Py<PyAny>> {
        let answer = match (answer_json, error) {
            (_, Some(why)) => Err(why),
            (Some(text), None) => crate::elicitation::parse_answer(&text),
            (None, None) => Err("no answer".to_owned()),
        };
        let host = self.host.clone();
        call(py, aio, async move {
            match answer {
                Ok(answer) => host.respond_elicitation(request_id, answer).await,
                Err(why) => {
                    // Fail-closed: the request is cancelled (unknown / already resolved ids
                    // raise their own error and change nothing).
                    host.reject_elicitation(request_id, why.clone()).await?;
                    Err(acp_host::Error::InvalidArgument(format!(
                        "{why}; the elicitation was cancelled"
                    )))
                }
            }
        })
    }

    /// A handle to a live agent by id.
    fn agent(&self, id: u64) -> Option<NativeAgent> {
        self.host.agent(id).map(|agent| NativeAgent {
            agent,
            pump: self.pump.clone(),
        })
    }

    /// Subscribe to every event of the host from now on.
    fn subscribe(&self) -> Subscription {
        self.pump.subscribe(Filter::All)
    }

    /// Shut every agent down (stdin EOF → SIGTERM → SIGKILL to the process group), deliver the
    /// last events, end every subscription. Idempotent.
    #[pyo3(signature = (*, aio=false))]
    fn close(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        self.closed.store(true, Ordering::SeqCst);
        let host = self.host.clone();
        let pump = self.pump.clone();
        let agents = self.agents.clone();
        let pools = self.pools.take_all();
        // From a logging handler (the log thread): never wait for the thread we are on.
        let log = self.log.clone().filter(|_| !crate::log::on_log_thread());
        call(py, aio, async move {
            // First the pools: once shut down they start nothing more.
            crate::pool::shutdown_all(pools).await;
            host.shutdown().await;
            let owned: Vec<acp_host::Agent> = agents
                .lock()
                .map(|mut a| std::mem::take(&mut *a))
                .unwrap_or_default();
            drop(owned);
            // The pump delivers what is queued (agent_exited last) and then ends every
            // subscription; it does not hold `close` up while a subscriber is not pulling.
            pump.close();
            // The shutdown's records (agent exits) reach `logging` before `close` returns.
            if let Some(log) = log {
                log.flush(crate::log::FLUSH_LIMIT).await;
            }
            Ok::<(), acp_host::Error>(())
        })
    }
}

#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct NativeAgent {
    agent: acp_host::Agent,
    pump: Arc<Pump>,
}

impl NativeAgent {
    pub(crate) fn new(agent: acp_host::Agent, pump: Arc<Pump>) -> NativeAgent {
        NativeAgent { agent, pump }
    }

    /// An open call (`open`: the core's future) whose session's stream starts at its beginning:
    /// the pump logs the session's events from now on (`opening.rs`).
    fn open_call<F>(
        &self,
        py: Python<'_>,
        aio: bool,
        what: &str,
        known_id: Option<&str>,
        timeout: Option<f64>,
        open: F,
    ) -> PyResult<Py<PyAny>>
    where
        F: std::future::Future<Output = acp_host::Result<acp_host::Session>> + Send + 'static,
    {
        let timeout = opt_timeout("timeout", timeout)?;
        let pump = self.pump.clone();
        let agent = self.agent.id();
        let what = what.to_owned();
        let known_id = known_id.map(str::to_owned);
        call(py, aio, async move {
            // Dropped with this future when the call fails, times out or is abandoned.
            let opening = pump.begin_open(agent, known_id.as_deref());
            let session = within(what, timeout, open).await?;
            if let Some(o) = &opening {
                pump.bind_open(o, session.id());
            }
            Ok(NativeSession {
                session,
                pump,
                opening,
            })
        })
    }
}

#[pymethods]
impl NativeAgent {
    #[getter]
    fn id(&self) -> u64 {
        self.agent.id()
    }

    /// `initialize`'s answer as JSON: `{protocolVersion, agentInfo, capabilities, authMethods}`.
    #[getter]
    fn info_json(&self) -> Option<String> {
        self.agent
            .info()
            .and_then(|i| serde_json::to_string(&i).ok())
    }

    /// How the agent ended, as JSON `{exitCode, signal, stderrTail}`, once it has (a supervised
    /// agent's current process: `None` again after a restart).
    #[getter]
    fn exit_info_json(&self) -> Option<String> {
        self.agent
            .exit_info()
            .and_then(|i| serde_json::to_string(&i).ok())
    }

    /// The agent's process id (a restarted agent has a new one).
    #[getter]
    fn pid(&self) -> Option<u32> {
        self.agent.pid()
    }

    /// Whether the supervisor gave up on this agent (`agent_failed`).
    #[getter]
    fn restarts_exhausted(&self) -> bool {
        self.agent.restarts_exhausted()
    }

    #[pyo3(signature = (method_id, *, aio=false, timeout=None))]
    fn authenticate(
        &self,
        py: Python<'_>,
        method_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            within(
                "authenticate".into(),
                timeout,
                agent.authenticate(&method_id),
            )
            .await
        })
    }

    /// An extension request (`_`-prefixed method) to the agent with `params_json`; resolves to
    /// the agent's result as JSON text. Any other method raises `invalid_argument` (nothing is
    /// sent).
    #[pyo3(signature = (method, params_json, *, aio=false, timeout=None))]
    fn ext_request(
        &self,
        py: Python<'_>,
        method: String,
        params_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let params = parse_json(py, "params", params_json)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            let v = within(method.clone(), timeout, agent.ext_request(&method, &params)).await?;
            Ok(v.to_string())
        })
    }

    /// `logout` (needs `agentCapabilities.auth.logout`; otherwise `unsupported` and nothing is
    /// sent).
    #[pyo3(signature = (*, aio=false, timeout=None))]
    fn logout(&self, py: Python<'_>, aio: bool, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            within("logout".into(), timeout, agent.logout()).await
        })
    }

    /// `session/new` with the session options document `options_json` (docs/OPTIONS.md).
    #[pyo3(signature = (options_json, *, aio=false, timeout=None))]
    fn new_session(
        &self,
        py: Python<'_>,
        options_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let opts = session_options(py, options_json)?;
        let agent = self.agent.clone();
        self.open_call(py, aio, "session/new", None, timeout, async move {
            agent.new_session(opts).await
        })
    }

    #[pyo3(signature = (session_id, options_json, *, resume=false, aio=false, timeout=None))]
    fn load_session(
        &self,
        py: Python<'_>,
        session_id: String,
        options_json: &str,
        resume: bool,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let opts = session_options(py, options_json)?;
        let agent = self.agent.clone();
        let what = if resume {
            "session/resume"
        } else {
            "session/load"
        };
        let id = session_id.clone();
        self.open_call(py, aio, what, Some(&id), timeout, async move {
            if resume {
                agent.resume_session(&session_id, opts).await
            } else {
                agent.load_session(&session_id, opts).await
            }
        })
    }

    /// The agent's `authMethods`, parsed: JSON `[{id, name, description, kind}]`.
    fn auth_methods(&self) -> String {
        serde_json::to_string(&self.agent.auth_methods()).unwrap_or_else(|_| "[]".into())
    }

    /// Terminal login, then the relaunched agent (`Agent::terminal_auth`).
    #[pyo3(signature = (method_id, *, aio=false, timeout=None))]
    fn terminal_auth(
        &self,
        py: Python<'_>,
        method_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        let pump = self.pump.clone();
        call(py, aio, async move {
            let fresh = within(
                "terminal login".into(),
                timeout,
                agent.terminal_auth(&method_id),
            )
            .await?;
            // The relaunched agent keeps the spec's restart policy; this one was shut down.
            if pump.is_supervised(agent.id()) {
                pump.supervise(fresh.id());
            }
            pump.finish_agent(agent.id());
            Ok(NativeAgent { agent: fresh, pump })
        })
    }

    /// `session/fork` (unstable: needs `unstable=["session/fork"]` on the host).
    #[pyo3(signature = (session_id, options_json, *, aio=false, timeout=None))]
    fn fork_session(
        &self,
        py: Python<'_>,
        session_id: String,
        options_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let opts = session_options(py, options_json)?;
        let agent = self.agent.clone();
        self.open_call(py, aio, "session/fork", None, timeout, async move {
            agent.fork_session(&session_id, opts).await
        })
    }

    /// `session/list` (first page, or from `cursor`): JSON `{sessions, nextCursor?}`.
    #[pyo3(signature = (cwd=None, cursor=None, *, aio=false, timeout=None))]
    fn list_sessions(
        &self,
        py: Python<'_>,
        cwd: Option<String>,
        cursor: Option<String>,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            let list = agent.list_sessions(cwd.as_deref(), cursor.as_deref());
            let v = within("session/list".into(), timeout, list).await?;
            Ok(v.to_string())
        })
    }

    #[pyo3(signature = (session_id, *, aio=false, timeout=None))]
    fn close_session(
        &self,
        py: Python<'_>,
        session_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            within(
                "session/close".into(),
                timeout,
                agent.close_session(&session_id),
            )
            .await
        })
    }

    #[pyo3(signature = (session_id, *, aio=false, timeout=None))]
    fn delete_session(
        &self,
        py: Python<'_>,
        session_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            within(
                "session/delete".into(),
                timeout,
                agent.delete_session(&session_id),
            )
            .await
        })
    }

    /// A handle to an open session of this agent (sharing its log, if it is still kept).
    fn session(&self, session_id: &str) -> Option<NativeSession> {
        let session = self.agent.session(session_id)?;
        Some(NativeSession {
            opening: self.pump.opening_of(self.agent.id(), session_id),
            session,
            pump: self.pump.clone(),
        })
    }

    /// Shut the agent down (ladder to its process group; a supervised agent is not restarted);
    /// JSON `{exitCode, signal, stderrTail}`.
    #[pyo3(signature = (*, aio=false))]
    fn shutdown(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        let agent = self.agent.clone();
        let pump = self.pump.clone();
        call(py, aio, async move {
            let info = agent.shutdown().await;
            // A supervised agent's streams do not end at its `agent_exited`, and one shut down
            // between two processes emits none.
            pump.finish_agent(agent.id());
            Ok::<String, acp_host::Error>(serde_json::to_string(&info).unwrap_or_default())
        })
    }

    /// Subscribe to this agent's events from now on (ends after its `agent_exited`; a supervised
    /// agent's after its `agent_failed` or its shutdown).
    fn subscribe(&self) -> Subscription {
        self.pump.subscribe(Filter::Agent(self.agent.id()))
    }
}

#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct NativeSession {
    session: acp_host::Session,
    pump: Arc<Pump>,
    /// Keeps the session's log (its first events) while it is kept; `None` without events.
    opening: Option<Arc<OpeningHandle>>,
}

impl NativeSession {
    /// A handle without a log of the session's beginning (its streams start from now).
    pub(crate) fn live(session: acp_host::Session, pump: Arc<Pump>) -> NativeSession {
        NativeSession {
            session,
            pump,
            opening: None,
        }
    }
}

/// A turn's result as the core's one JSON shape (`TurnResult::to_json`), as text.
pub(crate) type TurnTuple = String;

pub(crate) fn turn_tuple(t: TurnResult) -> TurnTuple {
    t.to_json().to_string()
}

#[pymethods]
impl NativeSession {
    #[getter]
    fn id(&self) -> &str {
        self.session.id()
    }

    #[getter]
    fn agent_id(&self) -> u64 {
        self.session.agent().id()
    }

    /// A snapshot of the materialised session state, as JSON (camelCase).
    fn state_json(&self) -> String {
        serde_json::to_string(&self.session.state()).unwrap_or_default()
    }

    /// Send a prompt (`content_json`: an array of ACP content blocks) and wait for the turn: the
    /// core's `TurnResult::to_json()` as text. Blocking: on
    /// Ctrl-C the turn is cancelled (`session/cancel`); the core settles it within the host's
    /// cancel grace (the agent's answer or `cancelled`), waited for here at most `cancel_grace`
    /// seconds when given, then the KeyboardInterrupt is raised. Async: cancelling the task
    /// abandons the turn the same way. After `timeout` seconds the turn is cancelled as on
    /// Ctrl-C and, once it settled, the call fails with `timeout` (unless the agent's answer was
    /// another stop reason than `cancelled`: then it is returned).
    #[pyo3(signature = (content_json, *, aio=false, cancel_grace=None, timeout=None))]
    fn prompt(
        &self,
        py: Python<'_>,
        content_json: &str,
        aio: bool,
        cancel_grace: Option<f64>,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        // Kept until `prompt_returned`, which the package calls once this call is back in
        // Python, whatever its outcome (so first, before anything can fail).
        if let Some(o) = &self.opening {
            self.pump.pin_turn(o);
        }
        let timeout = opt_timeout("timeout", timeout)?;
        let content = match parse_json(py, "prompt", content_json)? {
            Value::Array(a) => a,
            _ => {
                return Err(errors::local(
                    py,
                    "invalid_argument",
                    "prompt content must be a list of content blocks",
                ));
            }
        };
        let grace = cancel_grace
            .map(|g| seconds("cancel_grace", g))
            .transpose()?;
        let session = self.session.clone();
        let pump = self.pump.clone();
        if aio {
            return call(py, true, async move {
                let t = prompt_until(&session, content, None, timeout).await?;
                pump.turn_in_streams(session.agent().id(), t.turn).await?;
                Ok(turn_tuple(t))
            });
        }
        let (abort_tx, abort_rx) = tokio::sync::oneshot::channel::<()>();
        let fut = async move {
            let t = prompt_until(&session, content, Some(abort_rx), timeout).await?;
            pump.turn_in_streams(session.agent().id(), t.turn).await?;
            Ok::<_, acp_host::Error>(turn_tuple(t))
        };
        match crate::wait(py, fut)? {
            Waited::Done(Ok(t)) => Ok(t.into_pyobject(py)?.into_any().unbind()),
            Waited::Done(Err(e)) => Err(errors::to_py(py, &e)),
            Waited::Interrupted(err, handle, rx) => {
                let _ = abort_tx.send(());
                // A second Ctrl-C is not waited for here: the core's grace is short and bounded.
                let _ = crate::detach(py, move || match grace {
                    Some(g) => drop(rx.recv_timeout(g)),
                    None => drop(rx.recv()),
                });
                handle.abort();
                Err(err)
            }
        }
    }

    /// `session/cancel`: the turn should end `cancelled`; pending permission requests of the
    /// session are answered `cancelled` at once, pending elicitations `cancel`.
    #[pyo3(signature = (*, aio=false))]
    fn cancel(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        let session = self.session.clone();
        call(py, aio, async move { session.cancel().await })
    }

    #[pyo3(signature = (mode_id, *, aio=false, timeout=None))]
    fn set_mode(
        &self,
        py: Python<'_>,
        mode_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            within(
                "session/set_mode".into(),
                timeout,
                session.set_mode(&mode_id),
            )
            .await
        })
    }

    /// The session's models as JSON `{current, available: [{id, name, description}], via}` (the
    /// core's `Models`), or `None` when the agent offers no model choice.
    fn models_json(&self) -> Option<String> {
        self.session
            .models()
            .and_then(|m| serde_json::to_string(&m).ok())
    }

    /// Switch the model: the `model` config option, else the legacy `session/set_model`.
    #[pyo3(signature = (model_id, *, aio=false, timeout=None))]
    fn set_model(
        &self,
        py: Python<'_>,
        model_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            within(
                "session/set_model".into(),
                timeout,
                session.set_model(&model_id),
            )
            .await
        })
    }

    /// `session/set_config_option`; resolves to the complete option list as JSON.
    #[pyo3(signature = (config_id, value_json, *, aio=false, timeout=None))]
    fn set_config_option(
        &self,
        py: Python<'_>,
        config_id: String,
        value_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let value = parse_json(py, "value", value_json)?;
        let session = self.session.clone();
        call(py, aio, async move {
            let set = session.set_config_option(&config_id, value);
            let v = within("session/set_config_option".into(), timeout, set).await?;
            Ok(v.to_string())
        })
    }

    #[pyo3(signature = (*, aio=false, timeout=None))]
    fn close(&self, py: Python<'_>, aio: bool, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            within("session/close".into(), timeout, session.close()).await
        })
    }

    /// A `prompt` call is back in Python (returned or raised): the log of a turn that ended
    /// meanwhile is released (streams created later start from now).
    fn prompt_returned(&self) {
        if let Some(o) = &self.opening {
            self.pump.unpin_turn(o);
        }
    }

    /// Drop the session's log (its first events, kept for streams created before its first
    /// turn): streams created later start from now.
    fn release(&self) {
        if let Some(o) = &self.opening {
            self.pump.release_open(o);
        }
    }

    /// Subscribe to this session's events: from its beginning (`session_opened`, early updates,
    /// a load's replay, ...) until its first prompt, from now on afterwards; ends after its
    /// `session_closed` (at once when it is closed already).
    fn subscribe(&self) -> Subscription {
        self.pump.subscribe(Filter::Session(
            self.session.agent().id(),
            Arc::from(self.session.id()),
        ))
    }
}

/// A prompt that is cancelled (`session/cancel`, then the core's cancel grace) when `abort`
/// fires (Ctrl-C) or `timeout` elapses; a cancelled turn that timed out fails with `timeout`.
async fn prompt_until(
    session: &acp_host::Session,
    content: Vec<Value>,
    abort: Option<tokio::sync::oneshot::Receiver<()>>,
    timeout: Option<Duration>,
) -> acp_host::Result<TurnResult> {
    let timed_out = Arc::new(AtomicBool::new(false));
    let flag = timed_out.clone();
    let stop = async move {
        let asked = async move {
            let asked = match abort {
                Some(rx) => rx.await.is_ok(),
                None => false,
            };
            if !asked {
                std::future::pending::<()>().await;
            }
        };
        let expired = async move {
            match timeout {
                Some(t) => {
                    tokio::time::sleep(t).await;
                    flag.store(true, Ordering::SeqCst);
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = asked => {}
            () = expired => {}
        }
    };
    let out = session.prompt_abortable(content, stop).await;
    match (timeout, out) {
        (Some(t), Ok(r)) if timed_out.load(Ordering::SeqCst) && r.stop_reason == "cancelled" => {
            Err(crate::timed_out("session/prompt".into(), t))
        }
        (Some(t), Err(acp_host::Error::Cancelled)) if timed_out.load(Ordering::SeqCst) => {
            Err(crate::timed_out("session/prompt".into(), t))
        }
        (_, out) => out,
    }
}

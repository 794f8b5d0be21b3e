//! `NativeHost`, `NativeAgent`: thin handles over the core's `Host` and `Agent` (`NativeSession`
//! is in `session.rs`). Aggregates cross as JSON text (the Python package parses them); every
//! operation takes `aio` (blocking with the GIL released, or an awaitable).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_host::options::{self, Face, Hooks};
use acp_host::{AgentSpec, SessionOptions};
use pyo3::prelude::*;
use serde_json::Value;

use crate::connect::Bridge;
use crate::elicitation::PyElicitor;
use crate::errors;
use crate::events::{Streams, Subscription};
use crate::log::LogBridge;
use crate::permission::{LoopSlot, PyDecider};
use crate::pool::{NativePool, Pools};
use crate::services::{PyExt, PyFs, PyTerminal};
use crate::session::NativeSession;
use crate::{call, seconds, within};

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
    streams: Arc<Streams>,
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
    fn admit<F>(&self, py: Python<'_>, aio: bool, start: F) -> PyResult<Py<PyAny>>
    where
        F: std::future::Future<Output = acp_host::Result<acp_host::Agent>> + Send + 'static,
    {
        if self.closed() {
            return Err(errors::local(py, "closed", "the host is closed"));
        }
        let streams = self.streams.clone();
        let agents = self.agents.clone();
        let closed = self.closed.clone();
        call(py, aio, async move {
            // Given up: the agent being started goes with its last handle (shut down).
            let agent = start.await?;
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
            Ok(NativeAgent { agent, streams })
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
        let _guard = crate::rt().enter();
        let host = acp_host::Host::new(config);
        let hub = host
            .events()
            .map(|s| acp_host::EventHub::start(s, host.config(), crate::rt().handle()));
        Ok(NativeHost {
            host,
            streams: Arc::new(Streams::new(hub, capacity)),
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
        let host = self.host.clone();
        self.admit(py, aio, async move {
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
        self.admit(py, aio, async move {
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
                self.streams.clone(),
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
            let receipt = host.respond_permission(request_id, option_id).await?;
            Ok(receipt.to_json().to_string())
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
                Ok(answer) => {
                    let receipt = host.respond_elicitation(request_id, answer).await?;
                    Ok(receipt.to_json().to_string())
                }
                Err(why) => {
                    // Fail-closed: the request is cancelled (unknown / already resolved ids
                    // raise their own error and change nothing).
                    host.reject_elicitation(request_id, why.clone()).await?;
                    let e = acp_host::Error::InvalidArgument(format!(
                        "{why}; the elicitation was cancelled"
                    ));
                    Err(e.rejecting(acp_host::RequestState::Unavailable))
                }
            }
        })
    }

    /// A handle to a live agent by id.
    fn agent(&self, id: u64) -> Option<NativeAgent> {
        self.host.agent(id).map(|agent| NativeAgent {
            agent,
            streams: self.streams.clone(),
        })
    }

    /// The host's events: the first stream from the host's start (less what was dropped before
    /// it, `Subscription.dropped`), later ones from now on.
    fn subscribe(&self) -> Subscription {
        self.streams.host()
    }

    /// Shut every agent down (stdin EOF → SIGTERM → SIGKILL to the process group), deliver the
    /// last events, end every subscription. Idempotent.
    #[pyo3(signature = (*, aio=false))]
    fn close(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        self.closed.store(true, Ordering::SeqCst);
        let host = self.host.clone();
        let streams = self.streams.clone();
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
            // The hub delivers what is queued (agent_exited last) and then ends every stream; a
            // stream nobody pulls does not hold `close` up, nor the others' end for long.
            streams.close();
            host.close_events();
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
    streams: Arc<Streams>,
}

impl NativeAgent {
    pub(crate) fn new(agent: acp_host::Agent, streams: Arc<Streams>) -> NativeAgent {
        NativeAgent { agent, streams }
    }

    /// An open call (`open`: the core's future), with its timeout.
    fn open_call<F>(
        &self,
        py: Python<'_>,
        aio: bool,
        what: &str,
        timeout: Option<f64>,
        open: F,
    ) -> PyResult<Py<PyAny>>
    where
        F: std::future::Future<Output = acp_host::Result<acp_host::Session>> + Send + 'static,
    {
        let timeout = opt_timeout("timeout", timeout)?;
        let streams = self.streams.clone();
        let what = what.to_owned();
        call(py, aio, async move {
            let session = within(what, timeout, open).await?;
            Ok(NativeSession::new(session, streams))
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
        self.open_call(py, aio, "session/new", timeout, async move {
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
        self.open_call(py, aio, what, timeout, async move {
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
        let streams = self.streams.clone();
        call(py, aio, async move {
            let fresh = within(
                "terminal login".into(),
                timeout,
                agent.terminal_auth(&method_id),
            )
            .await?;
            Ok(NativeAgent {
                agent: fresh,
                streams,
            })
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
        self.open_call(py, aio, "session/fork", timeout, async move {
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

    /// The unstable session methods (each needs its name in the host's `unstable`): `method` is
    /// `session/status`, `session/set_title` (`arg`: the title), `session/archive` or
    /// `session/unarchive`; JSON result (`{status, reported}`, `{title}`, `{}`).
    #[pyo3(signature = (method, session_id, arg=None, *, aio=false, timeout=None))]
    fn unstable_call(
        &self,
        py: Python<'_>,
        method: &str,
        session_id: String,
        arg: Option<String>,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let agent = self.agent.clone();
        let method = method.to_owned();
        let what = method.clone();
        call(py, aio, async move {
            let a = &agent;
            let sid = session_id.as_str();
            let work = async move {
                Ok(match method.as_str() {
                    "session/status" => {
                        serde_json::to_value(a.session_status(sid).await?).unwrap_or_default()
                    }
                    "session/set_title" => {
                        let title = a
                            .set_session_title(sid, arg.as_deref().unwrap_or_default())
                            .await?;
                        serde_json::json!({ "title": title })
                    }
                    "session/archive" => a
                        .archive_session(sid)
                        .await
                        .map(|()| serde_json::json!({}))?,
                    "session/unarchive" => a
                        .unarchive_session(sid)
                        .await
                        .map(|()| serde_json::json!({}))?,
                    other => {
                        return Err(acp_host::Error::InvalidArgument(format!(
                            "not an unstable session call: {other}"
                        )));
                    }
                })
            };
            let v = within(what, timeout, work).await?;
            Ok(v.to_string())
        })
    }

    /// `session/options` (unstable): JSON `{modes, configOptions}`.
    #[pyo3(signature = (options_json, session_id=None, *, aio=false, timeout=None))]
    fn session_options(
        &self,
        py: Python<'_>,
        options_json: &str,
        session_id: Option<String>,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let opts = session_options(py, options_json)?;
        let agent = self.agent.clone();
        call(py, aio, async move {
            let work = agent.session_options(&opts, session_id.as_deref());
            let d = within("session/options".into(), timeout, work).await?;
            Ok(serde_json::to_string(&d).unwrap_or_default())
        })
    }

    /// A handle to an open session of this agent.
    fn session(&self, session_id: &str) -> Option<NativeSession> {
        let session = self.agent.session(session_id)?;
        Some(NativeSession::new(session, self.streams.clone()))
    }

    /// Shut the agent down (ladder to its process group; a supervised agent is not restarted);
    /// JSON `{exitCode, signal, stderrTail}`.
    #[pyo3(signature = (*, aio=false))]
    fn shutdown(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        let agent = self.agent.clone();
        call(py, aio, async move {
            let info = agent.shutdown().await;
            Ok::<String, acp_host::Error>(serde_json::to_string(&info).unwrap_or_default())
        })
    }

    /// Subscribe to this agent's events from now on (ends after its `agent_exited`; a supervised
    /// agent's after its `agent_failed` or its shutdown).
    fn subscribe(&self) -> Subscription {
        self.streams.agent(self.agent.id())
    }
}

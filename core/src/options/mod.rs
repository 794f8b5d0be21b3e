//! One option table for every face. A face hands its options over as one JSON document per
//! call (the host's, an agent spec, a session's, a pool's) — Node's options object, Python's
//! keyword arguments, Kotlin's `HostOptions`, the C JSON and the CLI's flags all become the same
//! document — and the core validates it against [`table`] and builds the typed configuration.
//! So every face takes the same options, with the same ranges, defaults and `invalid_config`
//! errors (`data.path` = the full field path, e.g. `pool.maxAgents`), and docs/OPTIONS.md is
//! rendered from the same rows ([`markdown`]).
//!
//! Callables (permission handlers, service hooks) are not JSON: a face passes what it was given
//! as [`Hooks`], and [`HostOptions::with_hooks`] decides, the same way for every face, which one
//! answers.

mod check;
pub mod markdown;
pub mod table;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::auth::{TerminalAuth, TerminalAuthRunner};
use crate::elicitation::{ElicitationDecider, ElicitationHandler, ElicitationModes};
use crate::error::{Error, Result};
use crate::host::{ClientInfo, HostConfig};
use crate::orchestration::{PoolConfig, PoolMode, RestartPolicy};
use crate::permission::policy::{PRESETS, Policy, PolicyError};
use crate::permission::{PermissionDecider, PermissionHandler};
use crate::services::TerminalService;
use crate::services::{ExtHandler, ExtService, FsHandler, FsService, TerminalHandler};
use crate::{AgentSpec, SessionOptions};

use check::{bad, whole};

/// The face a document came from: options only one face takes (`services` in C) are refused
/// elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    Rust,
    C,
    Node,
    Python,
    Kotlin,
    Cli,
}

impl Face {
    pub fn name(self) -> &'static str {
        match self {
            Face::Rust => "Rust",
            Face::C => "C",
            Face::Node => "Node",
            Face::Python => "Python",
            Face::Kotlin => "Kotlin",
            Face::Cli => "CLI",
        }
    }
}

/// Parse an option document given as JSON text; text that is not JSON is `invalid_config` at
/// `$`.
pub fn document(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| bad("$", format!("not valid JSON: {e}")))
}

/// Who answers one kind of request, as the document says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// Not in the document: the face's handler when it has one, else the default.
    Unsaid,
    /// A value that needs no handler (`deny`, `manual`, `none`, `builtin`, `disabled`).
    Plain(&'static str),
    /// `handler` / `embedder`: the face must supply one.
    Hook,
}

/// The host's options, validated, waiting for the face's callables.
#[derive(Debug)]
pub struct HostOptions {
    /// Everything but the callables (permission deny/manual, elicitation none/manual,
    /// services built-in/disabled are already in place).
    pub config: HostConfig,
    permission: Who,
    elicitation: Who,
    modes: ElicitationModes,
    fs: Who,
    terminal: Who,
    ext: Who,
    terminal_auth: Who,
    /// C only: service calls delivered as `service_request` events instead of the callback.
    pub services_as_events: bool,
    log_level: crate::log::Level,
}

/// The callables a face was given. Each is used when its option is unsaid or says
/// `handler`/`embedder`; a callable given while the option says otherwise is an error (a
/// careless embedder learns at once that their handler would never be called).
#[derive(Default, Clone)]
pub struct Hooks {
    pub permission: Option<Arc<dyn PermissionDecider>>,
    pub elicitation: Option<Arc<dyn ElicitationDecider>>,
    pub fs: Option<Arc<dyn FsHandler>>,
    pub terminal: Option<Arc<dyn TerminalHandler>>,
    pub ext: Option<Arc<dyn ExtHandler>>,
    pub terminal_auth: Option<Arc<dyn TerminalAuthRunner>>,
    /// The face's log hook; gets records at `logLevel` and more severe.
    pub log: Option<Arc<dyn crate::log::LogSink>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("permission", &self.permission.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("fs", &self.fs.is_some())
            .field("terminal", &self.terminal.is_some())
            .field("ext", &self.ext.is_some())
            .field("terminal_auth", &self.terminal_auth.is_some())
            .field("log", &self.log.is_some())
            .finish()
    }
}

fn who(map: &Map<String, Value>, name: &str, hook: &str) -> Who {
    match map.get(name).and_then(Value::as_str) {
        None => Who::Unsaid,
        Some(s) if s == hook => Who::Hook,
        Some(s) => Who::Plain(
            // The table's spelling, so the value outlives the document.
            table::HOST
                .iter()
                .find(|r| r.name == name)
                .and_then(|r| match &r.ty {
                    table::Ty::Enum(values) => values.iter().copied().find(|v| *v == s),
                    _ => None,
                })
                .unwrap_or("?"),
        ),
    }
}

fn ms(v: &Value) -> Duration {
    Duration::from_millis(whole(v).unwrap_or(0))
}

/// `Some(None)` for null (no limit), `Some(Some(d))` for a number, `None` when absent.
fn opt_ms(map: &Map<String, Value>, name: &str) -> Option<Option<Duration>> {
    map.get(name).map(|v| (!v.is_null()).then(|| ms(v)))
}

fn given<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name).filter(|v| !v.is_null())
}

fn count(map: &Map<String, Value>, name: &str) -> Option<u64> {
    given(map, name).and_then(whole)
}

fn size(map: &Map<String, Value>, name: &str) -> Option<usize> {
    count(map, name).map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Validate and build the host's options.
pub fn host(doc: &Value, face: Face) -> Result<HostOptions> {
    let empty = Map::new();
    let map = check::object(doc, table::HOST, "", face)?.unwrap_or(&empty);
    let mut c = HostConfig::default();
    if let Some(info) = given(map, "clientInfo").and_then(Value::as_object) {
        if let Some(n) = info.get("name").and_then(Value::as_str) {
            c.client_info.name = n.to_owned();
        }
        if let Some(v) = info.get("version").and_then(Value::as_str) {
            c.client_info.version = v.to_owned();
        }
    }
    if let Some(p) = given(map, "policy") {
        c.policy = Some(policy(p)?);
    }
    if let Some(v) = given(map, "permissionTimeoutMs") {
        c.permission_timeout = ms(v);
    }
    if let Some(v) = given(map, "roots") {
        c.roots = strings(v).into_iter().map(PathBuf::from).collect();
    }
    if let Some(v) = given(map, "elicitationTimeoutMs") {
        c.elicitation_timeout = ms(v);
    }
    if let Some(t) = opt_ms(map, "requestTimeoutMs") {
        c.request_timeout = t;
    }
    if let Some(t) = opt_ms(map, "promptTimeoutMs") {
        c.prompt_timeout = t;
    }
    if let Some(v) = given(map, "cancelGraceMs") {
        c.cancel_grace = ms(v);
    }
    if let Some(v) = given(map, "shutdownGraceMs") {
        c.shutdown_grace = ms(v);
    }
    if let Some(b) = given(map, "events").and_then(Value::as_bool) {
        c.events_enabled = b;
    }
    if let Some(n) = size(map, "eventCapacity") {
        c.event_capacity = n;
    }
    if let Some(n) = size(map, "eventQueueBytes") {
        c.event_queue_bytes = n;
    }
    if let Some(t) = opt_ms(map, "eventStallTimeoutMs") {
        c.event_stall_timeout = t;
    }
    if let Some(b) = given(map, "progressEvents").and_then(Value::as_bool) {
        c.progress_events = b;
    }
    if let Some(b) = given(map, "wireEvents").and_then(Value::as_bool) {
        c.wire_events = b;
    }
    if let Some(r) = given(map, "record").and_then(Value::as_object) {
        let mut rec = crate::record::RecordConfig {
            dir: given(r, "dir").and_then(Value::as_str).map(PathBuf::from),
            file: given(r, "file").and_then(Value::as_str).map(PathBuf::from),
            ..crate::record::RecordConfig::default()
        };
        if rec.dir.is_some() == rec.file.is_some() {
            return Err(check::bad("record", "give one of `dir` and `file`"));
        }
        if let Some(n) = count(r, "maxBytes") {
            rec.max_bytes = n;
        }
        if let Some(b) = given(r, "redact").and_then(Value::as_bool) {
            rec.redact = b;
        }
        c.record = Some(rec);
    }
    if let Some(b) = given(map, "coalesceToolCallUpdates").and_then(Value::as_bool) {
        c.coalesce_tool_call_updates = b;
    }
    if let Some(n) = size(map, "maxLineBytes") {
        c.max_line_bytes = n;
    }
    if let Some(n) = size(map, "stderrTailBytes") {
        c.stderr_tail_bytes = n;
    }
    if let Some(n) = size(map, "maxOutboundBytes") {
        c.max_outbound_bytes = n;
    }
    if let Some(n) = size(map, "maxPendingAgentRequests") {
        c.max_pending_agent_requests = n;
    }
    if let Some(n) = size(map, "earlyUpdateLimit") {
        c.early_update_limit = n;
    }
    if let Some(l) = given(map, "fsLimits").and_then(Value::as_object) {
        if let Some(n) = count(l, "maxReadBytes") {
            c.fs_limits.max_read_bytes = n;
        }
        if let Some(n) = count(l, "maxWriteBytes") {
            c.fs_limits.max_write_bytes = n;
        }
    }
    if let Some(l) = given(map, "terminalLimits").and_then(Value::as_object) {
        if let Some(n) = count(l, "maxOutputBytes") {
            c.terminal_limits.max_output_bytes = n;
        }
        if let Some(n) = size(l, "maxTerminals") {
            c.terminal_limits.max_terminals = n;
        }
    }
    if let Some(v) = given(map, "unstable") {
        let mut names = strings(v);
        names.dedup();
        c.unstable = names;
    }
    let mut modes = ElicitationModes {
        form: true,
        url: true,
    };
    if let Some(v) = given(map, "elicitationModes") {
        let names = strings(v);
        modes = ElicitationModes {
            form: names.iter().any(|n| n == "form"),
            url: names.iter().any(|n| n == "url"),
        };
    }
    let services_as_events = map.get("services").and_then(Value::as_str) == Some("events");
    if services_as_events && !c.events_enabled {
        // Service requests would go to a stream that queues nothing: never answered.
        return Err(bad(
            "services",
            "\"events\" needs the event stream (`events` is false)",
        ));
    }
    let o = HostOptions {
        permission: who(map, "permission", "handler"),
        elicitation: who(map, "elicitation", "handler"),
        modes,
        fs: who(map, "fs", "embedder"),
        terminal: who(map, "terminal", "embedder"),
        ext: who(map, "ext", "embedder"),
        terminal_auth: who(map, "terminalAuth", "embedder"),
        services_as_events,
        log_level: map
            .get("logLevel")
            .and_then(Value::as_str)
            .and_then(crate::log::Level::parse)
            .unwrap_or(crate::log::Level::Info),
        config: c,
    };
    Ok(o.plain())
}

impl HostOptions {
    /// Put the values that need no callable in place.
    fn plain(mut self) -> HostOptions {
        let c = &mut self.config;
        if self.permission == Who::Plain("manual") {
            c.permission = PermissionHandler::Manual;
        }
        if self.elicitation == Who::Plain("manual") {
            c.elicitation = ElicitationHandler::Manual { modes: self.modes };
        }
        if self.fs == Who::Plain("disabled") {
            c.fs = FsService::Disabled;
        }
        if self.terminal == Who::Plain("disabled") {
            c.terminal = TerminalService::Disabled;
        }
        self
    }

    /// The host configuration with the face's callables in place.
    pub fn with_hooks(self, hooks: Hooks) -> Result<HostConfig> {
        let HostOptions {
            mut config,
            permission,
            elicitation,
            modes,
            fs,
            terminal,
            ext,
            terminal_auth,
            log_level,
            ..
        } = self;
        if let Some(sink) = hooks.log {
            config.log = crate::log::LogHook::new(sink, log_level);
        }
        if let Some(d) = attach(
            "permission",
            permission,
            hooks.permission,
            "a permission handler",
        )? {
            config.permission = PermissionHandler::Decider(d);
        }
        if let Some(decider) = attach(
            "elicitation",
            elicitation,
            hooks.elicitation,
            "an elicitation handler",
        )? {
            config.elicitation = ElicitationHandler::Decider { modes, decider };
        }
        if let Some(h) = attach("fs", fs, hooks.fs, "fs hooks")? {
            config.fs = FsService::Embedder(h);
        }
        if let Some(h) = attach("terminal", terminal, hooks.terminal, "terminal hooks")? {
            config.terminal = TerminalService::Embedder(h);
        }
        if let Some(h) = attach("ext", ext, hooks.ext, "an extension request handler")? {
            config.ext = ExtService::Embedder(h);
        }
        if let Some(h) = attach(
            "terminalAuth",
            terminal_auth,
            hooks.terminal_auth,
            "a terminal login runner",
        )? {
            config.terminal_auth = TerminalAuth::Runner(h);
        }
        Ok(config)
    }
}

/// The one rule for an option a callable can answer.
fn attach<T: ?Sized>(
    name: &str,
    who: Who,
    hook: Option<Arc<T>>,
    what: &str,
) -> Result<Option<Arc<T>>> {
    match (who, hook) {
        (Who::Unsaid | Who::Hook, Some(h)) => Ok(Some(h)),
        (Who::Unsaid, None) => Ok(None),
        (Who::Hook, None) => Err(bad(
            name,
            format!("says the face's own {what} answers, but none was given"),
        )),
        (Who::Plain(v), Some(_)) => Err(bad(
            name,
            format!("{what} was given, but `{name}` is \"{v}\", so it would never be called"),
        )),
        (Who::Plain(_), None) => Ok(None),
    }
}

/// A policy value: a preset name, an absolute file path, `{"file": path}` or a document.
fn policy(v: &Value) -> Result<Policy> {
    let file = match v {
        Value::String(s) if PRESETS.contains(&s.as_str()) => return Policy::preset_config(s),
        Value::String(s)
            if s.contains(['/', '\\']) || s.ends_with(".json") || s.ends_with(".toml") =>
        {
            s
        }
        Value::String(s) => {
            return Err(bad(
                "policy",
                format!(
                    "unknown preset \"{s}\"; expected one of {}, or a policy file's absolute path",
                    check::quoted(PRESETS)
                ),
            ));
        }
        Value::Object(m) if m.len() == 1 && m.contains_key("file") => match m["file"].as_str() {
            Some(s) => s,
            None => return Err(bad("policy.file", "expected an absolute path (a string)")),
        },
        doc => return Policy::from_json(&doc.to_string()).map_err(Error::from),
    };
    let at = if v.is_object() {
        "policy.file"
    } else {
        "policy"
    };
    if !Path::new(file).is_absolute() {
        return Err(bad(
            at,
            format!(
                "a policy file must be an absolute path, got `{file}` (relative paths are not resolved)"
            ),
        ));
    }
    Policy::from_file(Path::new(file)).map_err(|e: PolicyError| {
        if e.path == file {
            bad(at, format!("{file}: {}", e.message))
        } else {
            Error::from(e)
        }
    })
}

/// Validate and build an agent spec.
pub fn agent_spec(doc: &Value, face: Face) -> Result<AgentSpec> {
    let empty = Map::new();
    let map = check::object(doc, table::AGENT, "", face)?.unwrap_or(&empty);
    if let Some(r) = given(map, "replay").and_then(Value::as_object) {
        if let Some(other) = ["command", "args", "env", "cwd", "restart"]
            .into_iter()
            .find(|k| given(map, k).is_some())
        {
            return Err(bad(
                other,
                "not with `replay`: a replay plays a recording, it starts no program",
            ));
        }
        return replay(r).map(AgentSpec::replay);
    }
    let Some(command) = given(map, "command").and_then(Value::as_str) else {
        return Err(bad("command", "missing: the program to run"));
    };
    let mut spec = AgentSpec::new(command);
    if let Some(v) = given(map, "args") {
        spec.args = strings(v);
    }
    if let Some(env) = given(map, "env").and_then(Value::as_object) {
        for (k, v) in env {
            spec.env.insert(k.clone(), v.as_str().map(str::to_owned));
        }
    }
    if let Some(cwd) = given(map, "cwd").and_then(Value::as_str) {
        spec.cwd = Some(PathBuf::from(cwd));
    }
    if let Some(r) = given(map, "restart") {
        spec.restart = Some(restart_checked(r));
    }
    Ok(spec)
}

fn replay(map: &Map<String, Value>) -> Result<crate::replay::ReplayOptions> {
    let Some(file) = given(map, "file").and_then(Value::as_str) else {
        return Err(bad("replay.file", "missing: the recording to play"));
    };
    let mut o = crate::replay::ReplayOptions::new(file);
    if given(map, "pace").and_then(Value::as_str) == Some("fast") {
        o.pace = crate::replay::Pace::Fast;
    }
    if let Some(v) = map.get("waitMs") {
        o.wait = if v.is_null() { None } else { Some(ms(v)) };
    }
    o.report = given(map, "report")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    if let Some(v) = given(map, "ignore") {
        o.ignore = strings(v);
    }
    Ok(o)
}

/// Validate and build a restart policy (the `restart` of an agent spec; paths `restart.*`).
pub fn restart(doc: &Value, face: Face) -> Result<RestartPolicy> {
    check::object(doc, table::RESTART, "restart.", face)?;
    Ok(restart_checked(doc))
}

fn restart_checked(doc: &Value) -> RestartPolicy {
    let mut p = RestartPolicy::default();
    if let Some(m) = doc.as_object() {
        if let Some(n) = count(m, "maxRestarts") {
            p.max_restarts = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(v) = given(m, "backoffMs") {
            p.backoff = ms(v);
        }
        if let Some(v) = given(m, "maxBackoffMs") {
            p.max_backoff = ms(v);
        }
        if let Some(v) = given(m, "resetAfterMs") {
            p.reset_after = ms(v);
        }
    }
    p
}

/// Validate and build a session's options.
pub fn session(doc: &Value, face: Face) -> Result<SessionOptions> {
    let empty = Map::new();
    let map = check::object(doc, table::SESSION, "", face)?.unwrap_or(&empty);
    let Some(cwd) = given(map, "cwd").and_then(Value::as_str) else {
        return Err(bad("cwd", "missing: the session's working directory"));
    };
    let mut o = SessionOptions::new(cwd);
    if let Some(v) = given(map, "additionalDirectories") {
        o.additional_directories = strings(v);
    }
    if let Some(v) = given(map, "mcpServers").and_then(Value::as_array) {
        o.mcp_servers = v.clone();
    }
    Ok(o)
}

/// Validate and build a pool's settings (the document under `pool`; paths `pool.*`).
pub fn pool(spec: AgentSpec, doc: &Value, face: Face) -> Result<PoolConfig> {
    let empty = Map::new();
    let map = check::object(doc, table::POOL, "pool.", face)?.unwrap_or(&empty);
    let mut c = PoolConfig::new(spec);
    if let Some(n) = size(map, "warmSpares") {
        c.warm_spares = n;
    }
    if let Some(n) = size(map, "maxAgents") {
        c.max_agents = n;
    }
    if let Some(t) = opt_ms(map, "idleTimeoutMs") {
        c.idle_timeout = t;
    }
    let shared = map.get("mode").and_then(Value::as_str) == Some("shared");
    let per_agent = size(map, "maxSessionsPerAgent");
    c.mode = match (shared, per_agent) {
        (true, n) => PoolMode::Shared {
            max_sessions: n.unwrap_or(8),
        },
        (false, Some(_)) => {
            return Err(bad(
                "pool.maxSessionsPerAgent",
                "needs `mode: \"shared\"` (a process-per-session pool has one session per process)",
            ));
        }
        (false, None) => PoolMode::ProcessPerSession,
    };
    if c.warm_spares > c.max_agents {
        return Err(bad(
            "pool.warmSpares",
            format!("cannot exceed `maxAgents` ({})", c.max_agents),
        ));
    }
    Ok(c)
}

/// The host document that gives `config` (callables shown by what answers), e.g. for a UI's
/// settings view or to compare a face's defaults with the table's.
pub fn effective(config: &HostConfig) -> Value {
    let opt_ms = |d: Option<Duration>| d.map(|d| d.as_millis() as u64);
    let ms = |d: Duration| d.as_millis() as u64;
    let permission = match config.permission {
        PermissionHandler::DenyAll => "deny",
        PermissionHandler::Manual => "manual",
        PermissionHandler::Decider(_) => "handler",
    };
    let (elicitation, modes) = match &config.elicitation {
        ElicitationHandler::Unsupported => ("none", None),
        ElicitationHandler::Manual { modes } => ("manual", Some(*modes)),
        ElicitationHandler::Decider { modes, .. } => ("handler", Some(*modes)),
    };
    let modes = modes.unwrap_or(ElicitationModes {
        form: true,
        url: true,
    });
    let mut mode_names = Vec::new();
    if modes.form {
        mode_names.push("form");
    }
    if modes.url {
        mode_names.push("url");
    }
    let service = |builtin: bool, embedder: bool| {
        if builtin {
            "builtin"
        } else if embedder {
            "embedder"
        } else {
            "disabled"
        }
    };
    let ClientInfo { name, version } = &config.client_info;
    // No recording: no `dir` nor `file`, the other fields at their defaults.
    let r = config.record.clone().unwrap_or_default();
    let record =
        json!({ "dir": r.dir, "file": r.file, "maxBytes": r.max_bytes, "redact": r.redact });
    json!({
        "clientInfo": {"name": name, "version": version},
        "policy": config.policy.as_ref().map_or("default", |p| p.name()),
        "permission": permission,
        "permissionTimeoutMs": ms(config.permission_timeout),
        "roots": config.roots,
        "elicitation": elicitation,
        "elicitationModes": mode_names,
        "elicitationTimeoutMs": ms(config.elicitation_timeout),
        "requestTimeoutMs": opt_ms(config.request_timeout),
        "promptTimeoutMs": opt_ms(config.prompt_timeout),
        "cancelGraceMs": ms(config.cancel_grace),
        "shutdownGraceMs": ms(config.shutdown_grace),
        "events": config.events_enabled,
        "eventCapacity": config.event_capacity,
        "eventQueueBytes": config.event_queue_bytes,
        "eventStallTimeoutMs": opt_ms(config.event_stall_timeout),
        "progressEvents": config.progress_events,
        "wireEvents": config.wire_events,
        "record": record,
        "coalesceToolCallUpdates": config.coalesce_tool_call_updates,
        "maxLineBytes": config.max_line_bytes,
        "stderrTailBytes": config.stderr_tail_bytes,
        "maxOutboundBytes": config.max_outbound_bytes,
        "maxPendingAgentRequests": config.max_pending_agent_requests,
        "earlyUpdateLimit": config.early_update_limit,
        "fs": service(matches!(config.fs, FsService::Builtin), matches!(config.fs, FsService::Embedder(_))),
        "fsLimits": {
            "maxReadBytes": config.fs_limits.max_read_bytes,
            "maxWriteBytes": config.fs_limits.max_write_bytes,
        },
        "terminal": service(
            matches!(config.terminal, TerminalService::Builtin),
            matches!(config.terminal, TerminalService::Embedder(_)),
        ),
        "terminalLimits": {
            "maxOutputBytes": config.terminal_limits.max_output_bytes,
            "maxTerminals": config.terminal_limits.max_terminals,
        },
        "ext": if matches!(config.ext, ExtService::Embedder(_)) { "embedder" } else { "none" },
        "terminalAuth": if matches!(config.terminal_auth, TerminalAuth::Runner(_)) { "embedder" } else { "none" },
        "unstable": config.unstable,
        "logLevel": config.log.level().unwrap_or(crate::log::Level::Info).as_str(),
    })
}

/// The table as JSON (`[{document, name, type, default, doc}]`), for faces that generate their
/// typings or docs from it.
pub fn table_json() -> Value {
    let mut rows = Vec::new();
    for (title, _, opts, prefix) in table::DOCUMENTS {
        markdown::flatten(opts, prefix, &mut |path, opt| {
            rows.push(json!({
                "document": title,
                "path": path,
                "type": markdown::type_name(&opt.ty),
                "default": opt.default,
                "doc": opt.doc,
                "face": opt.face.map(Face::name),
            }));
        });
    }
    Value::Array(rows)
}

#[cfg(test)]
mod tests;

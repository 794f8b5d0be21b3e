//! The host configuration JSON of `acph_host_new` (documented in docs/FFI.md) and the JSON
//! arguments of the agent and session calls. Parsing is strict: an unknown field is an error, so a
//! typo cannot silently fall back to a default.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_host::permission::policy::Policy;
use acp_host::registry::{DistributionKind, InstallLimits, Platform, ResolveOptions};
use acp_host::services::{FsService, TerminalService};
use acp_host::{
    AgentSpec, ClientInfo, HostConfig, PermissionHandler, RestartPolicy, SessionOptions,
};
use serde_json::{Map, Value};

use crate::services::{Bridge, Delivery};
use crate::status::{Failure, acph_status};

/// What `acph_host_new` needs besides the core's `HostConfig`.
#[derive(Debug)]
pub(crate) struct FaceConfig {
    pub core: HostConfig,
}

/// A policy that cannot be used: `invalid_config` with the spot under `policy.` (the same path
/// every face reports, e.g. `policy.rules[0].action`).
fn policy_failure(e: acp_host::permission::policy::PolicyError) -> Failure {
    policy_config_failure(acp_host::Error::from(e))
}

fn policy_config_failure(e: acp_host::Error) -> Failure {
    core_config_failure(e, "policy")
}

/// The core's `invalid_config` as the C face's config failure (same path, same message);
/// another error (none expected) under `fallback`.
fn core_config_failure(e: acp_host::Error, fallback: &str) -> Failure {
    match e {
        acp_host::Error::InvalidConfig { path, message } => config_error(&path, message),
        other => config_error(fallback, other.to_string()),
    }
}

fn config_error(path: &str, message: impl Into<String>) -> Failure {
    let message = message.into();
    Failure::new(
        acph_status::ACPH_STATUS_INVALID_CONFIG,
        format!("invalid config: {path}: {message}"),
    )
    .with_data(serde_json::json!({ "path": path }))
}

fn arg_error(what: &str, path: &str, message: impl Into<String>) -> Failure {
    let message = message.into();
    Failure::invalid(format!("invalid {what}: {path}: {message}"))
        .with_data(serde_json::json!({ "path": path }))
}

const CONFIG_FIELDS: &[&str] = &[
    "permission",
    "policy",
    "roots",
    "permissionTimeoutMs",
    "requestTimeoutMs",
    "promptTimeoutMs",
    "shutdownGraceMs",
    "cancelGraceMs",
    "elicitation",
    "elicitationTimeoutMs",
    "eventCapacity",
    "eventQueueBytes",
    "eventStallTimeoutMs",
    "events",
    "wireEvents",
    "maxLineBytes",
    "stderrTailBytes",
    "fs",
    "terminal",
    "ext",
    "clientInfo",
    "unstable",
    "coalesceToolCallUpdates",
    "terminalAuth",
    "services",
];

fn object<'a>(
    v: &'a Value,
    fields: &[&str],
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<&'a Map<String, Value>, Failure> {
    let Some(obj) = v.as_object() else {
        return Err(err("$", "expected a JSON object".into()));
    };
    if let Some(k) = obj.keys().find(|k| !fields.contains(&k.as_str())) {
        return Err(err(
            k,
            format!("unknown field; expected one of: {}", fields.join(", ")),
        ));
    }
    Ok(obj)
}

fn u64_field(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<u64>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| err(key, "expected a non-negative integer".into())),
    }
}

/// `null` (or absent, when `absent_is_none`) means "no limit".
fn opt_ms_field(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<Option<Duration>>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(v) => v
            .as_u64()
            .map(|ms| Some(Some(Duration::from_millis(ms))))
            .ok_or_else(|| err(key, "expected a non-negative integer or null".into())),
    }
}

fn bool_field(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<bool>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| err(key, "expected true or false".into())),
    }
}

fn str_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<&'a str>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| err(key, "expected a string".into())),
    }
}

fn string_list(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<Vec<String>>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| err(&format!("{key}[{i}]"), "expected a string".into()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(err(key, "expected an array of strings".into())),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Service {
    Builtin,
    Embedder,
    Disabled,
}

fn service_field(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Service, Failure> {
    match str_field(obj, key, err)? {
        None | Some("builtin") => Ok(Service::Builtin),
        Some("embedder") => Ok(Service::Embedder),
        Some("disabled") => Ok(Service::Disabled),
        Some(other) => Err(err(
            key,
            format!(
                "unknown value \"{other}\"; expected \"builtin\", \"embedder\" or \"disabled\""
            ),
        )),
    }
}

/// Parse the configuration of `acph_host_new`. `None` (a NULL argument) is the default
/// configuration.
pub(crate) fn host_config(text: Option<&str>, bridge: &Bridge) -> Result<FaceConfig, Failure> {
    let mut core = HostConfig::default();
    let Some(text) = text else {
        return Ok(FaceConfig { core });
    };
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        Failure::new(
            acph_status::ACPH_STATUS_INVALID_CONFIG,
            format!("invalid config: $: not valid JSON: {e}"),
        )
        .with_data(serde_json::json!({ "path": "$" }))
    })?;
    let err = |p: &str, m: String| config_error(p, m);
    let obj = object(&doc, CONFIG_FIELDS, &err)?;

    core.permission = match str_field(obj, "permission", &err)? {
        None | Some("deny") => PermissionHandler::DenyAll,
        Some("manual") => PermissionHandler::Manual,
        Some(other) => {
            return Err(err(
                "permission",
                format!("unknown value \"{other}\"; expected \"deny\" or \"manual\""),
            ));
        }
    };
    if let Some(modes) = string_list(obj, "elicitation", &err)? {
        let mut m = acp_host::ElicitationModes::default();
        for (i, mode) in modes.iter().enumerate() {
            match mode.as_str() {
                "form" => m.form = true,
                "url" => m.url = true,
                other => {
                    return Err(err(
                        &format!("elicitation[{i}]"),
                        format!("unknown mode \"{other}\"; expected \"form\" or \"url\""),
                    ));
                }
            }
        }
        if m.any() {
            core.elicitation = acp_host::ElicitationHandler::Manual { modes: m };
        }
    }
    if let Some(ms) = u64_field(obj, "elicitationTimeoutMs", &err)? {
        core.elicitation_timeout = Duration::from_millis(ms);
    }
    core.policy = match obj.get("policy") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => {
            Some(Policy::preset_config(name).map_err(policy_config_failure)?)
        }
        Some(doc @ Value::Object(_)) => {
            Some(Policy::from_json(&doc.to_string()).map_err(policy_failure)?)
        }
        Some(_) => {
            return Err(err(
                "policy",
                "expected a preset name or a policy document (object)".into(),
            ));
        }
    };
    if let Some(roots) = string_list(obj, "roots", &err)? {
        for (i, r) in roots.iter().enumerate() {
            if !std::path::Path::new(r).is_absolute() {
                return Err(err(
                    &format!("roots[{i}]"),
                    format!("not an absolute path: {r}"),
                ));
            }
        }
        core.roots = roots.into_iter().map(PathBuf::from).collect();
    }
    if let Some(names) = string_list(obj, "unstable", &err)? {
        acp_host::protocol::check_opt_in(&names).map_err(|m| err("unstable", m))?;
        core.unstable = names;
    }
    if let Some(ms) = u64_field(obj, "permissionTimeoutMs", &err)? {
        core.permission_timeout = Duration::from_millis(ms);
    }
    if let Some(t) = opt_ms_field(obj, "requestTimeoutMs", &err)? {
        core.request_timeout = t;
    }
    if let Some(t) = opt_ms_field(obj, "promptTimeoutMs", &err)? {
        core.prompt_timeout = t;
    }
    if let Some(ms) = u64_field(obj, "shutdownGraceMs", &err)? {
        core.shutdown_grace = Duration::from_millis(ms);
    }
    if let Some(ms) = u64_field(obj, "cancelGraceMs", &err)? {
        core.cancel_grace = Duration::from_millis(ms);
    }
    if let Some(n) = u64_field(obj, "eventCapacity", &err)? {
        if n == 0 || n > 1 << 24 {
            return Err(err("eventCapacity", "expected 1 ..= 16777216".into()));
        }
        core.event_capacity = n as usize;
    }
    if let Some(n) = u64_field(obj, "eventQueueBytes", &err)? {
        if n < 4096 {
            return Err(err("eventQueueBytes", "expected at least 4096".into()));
        }
        core.event_queue_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(t) = opt_ms_field(obj, "eventStallTimeoutMs", &err)? {
        core.event_stall_timeout = t;
    }
    if let Some(b) = bool_field(obj, "events", &err)? {
        core.events_enabled = b;
    }
    if let Some(b) = bool_field(obj, "coalesceToolCallUpdates", &err)? {
        core.coalesce_tool_call_updates = b;
    }
    if let Some(b) = bool_field(obj, "wireEvents", &err)? {
        core.wire_events = b;
    }
    if let Some(n) = u64_field(obj, "maxLineBytes", &err)? {
        if n < 1024 {
            return Err(err("maxLineBytes", "expected at least 1024".into()));
        }
        core.max_line_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = u64_field(obj, "stderrTailBytes", &err)? {
        core.stderr_tail_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    core.fs = match service_field(obj, "fs", &err)? {
        Service::Builtin => FsService::Builtin,
        Service::Embedder => FsService::Embedder(Arc::new(bridge.clone())),
        Service::Disabled => FsService::Disabled,
    };
    core.terminal = match service_field(obj, "terminal", &err)? {
        Service::Builtin => TerminalService::Builtin,
        Service::Embedder => TerminalService::Embedder(Arc::new(bridge.clone())),
        Service::Disabled => TerminalService::Disabled,
    };
    core.ext = match str_field(obj, "ext", &err)? {
        None | Some("none") => acp_host::services::ExtService::Unsupported,
        Some("embedder") => acp_host::services::ExtService::Embedder(Arc::new(bridge.clone())),
        Some(other) => {
            return Err(err(
                "ext",
                format!("unknown value \"{other}\"; expected \"none\" or \"embedder\""),
            ));
        }
    };
    core.terminal_auth = match str_field(obj, "terminalAuth", &err)? {
        None | Some("none") => acp_host::auth::TerminalAuth::Unsupported,
        Some("embedder") => acp_host::auth::TerminalAuth::Runner(Arc::new(bridge.clone())),
        Some(other) => {
            return Err(err(
                "terminalAuth",
                format!("unknown value \"{other}\"; expected \"none\" or \"embedder\""),
            ));
        }
    };
    match str_field(obj, "services", &err)? {
        None | Some("callback") => bridge.set_delivery(Delivery::Callback),
        Some("events") => {
            // Pull-side delivery needs the event stream it is delivered through.
            if !core.events_enabled {
                return Err(err(
                    "services",
                    "\"events\" needs the event stream (\"events\": true)".into(),
                ));
            }
            bridge.set_delivery(Delivery::Events);
        }
        Some(other) => {
            return Err(err(
                "services",
                format!("unknown value \"{other}\"; expected \"callback\" or \"events\""),
            ));
        }
    }
    if let Some(info) = obj.get("clientInfo") {
        let ierr = |p: &str, m: String| config_error(&format!("clientInfo.{p}"), m);
        let info = object(info, &["name", "version"], &ierr)?;
        let mut ci = ClientInfo::default();
        if let Some(n) = str_field(info, "name", &ierr)? {
            ci.name = n.to_owned();
        }
        if let Some(v) = str_field(info, "version", &ierr)? {
            ci.version = v.to_owned();
        }
        core.client_info = ci;
    }
    Ok(FaceConfig { core })
}

/// The agent spec of `acph_host_spawn`:
/// `{"command": "...", "args": [...], "env": {"K": "v" | null}, "cwd": "/dir", "restart": {...}}`.
pub(crate) fn agent_spec(text: &str) -> Result<AgentSpec, Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("spec", &e))?;
    let err = |p: &str, m: String| arg_error("agent spec", p, m);
    let obj = object(&doc, &["command", "args", "env", "cwd", "restart"], &err)?;
    let Some(command) = str_field(obj, "command", &err)? else {
        return Err(err("command", "missing".into()));
    };
    if command.is_empty() {
        return Err(err("command", "must not be empty".into()));
    }
    let mut spec = AgentSpec::new(command);
    if let Some(args) = string_list(obj, "args", &err)? {
        spec.args = args;
    }
    match obj.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(env)) => {
            for (k, v) in env {
                match v {
                    Value::String(s) => spec = spec.env(k.clone(), s.clone()),
                    Value::Null => spec = spec.env_remove(k.clone()),
                    _ => return Err(err(&format!("env.{k}"), "expected a string or null".into())),
                }
            }
        }
        Some(_) => return Err(err("env", "expected an object".into())),
    }
    if let Some(cwd) = str_field(obj, "cwd", &err)? {
        spec = spec.cwd(cwd);
    }
    // The supervisor's policy: the core's parser, so every face accepts and refuses the same
    // documents; a bad one is `invalid_config` (the core's kind for it) under `restart`.
    match obj.get("restart") {
        None | Some(Value::Null) => {}
        Some(policy) => {
            spec = spec.restart(
                RestartPolicy::from_json(policy).map_err(|e| core_config_failure(e, "restart"))?,
            );
        }
    }
    Ok(spec)
}

/// Session options of new/load/resume:
/// `{"cwd": "/abs", "additionalDirectories": [...], "mcpServers": [...]}`.
pub(crate) fn session_options(text: &str) -> Result<SessionOptions, Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("options", &e))?;
    let err = |p: &str, m: String| arg_error("session options", p, m);
    let obj = object(&doc, &["cwd", "additionalDirectories", "mcpServers"], &err)?;
    let Some(cwd) = str_field(obj, "cwd", &err)? else {
        return Err(err("cwd", "missing".into()));
    };
    let mut options = SessionOptions::new(cwd);
    if let Some(dirs) = string_list(obj, "additionalDirectories", &err)? {
        options.additional_directories = dirs;
    }
    match obj.get("mcpServers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(servers)) => options.mcp_servers = servers.clone(),
        Some(_) => return Err(err("mcpServers", "expected an array".into())),
    }
    Ok(options)
}

/// Parameters of `session/list`: `{"cwd": "/abs"?, "cursor": "..."?}`.
pub(crate) fn list_params(text: &str) -> Result<(Option<String>, Option<String>), Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("params", &e))?;
    let err = |p: &str, m: String| arg_error("list parameters", p, m);
    let obj = object(&doc, &["cwd", "cursor"], &err)?;
    Ok((
        str_field(obj, "cwd", &err)?.map(str::to_owned),
        str_field(obj, "cursor", &err)?.map(str::to_owned),
    ))
}

/// Prompt content: a JSON array of ACP content blocks.
pub(crate) fn prompt_content(text: &str) -> Result<Vec<Value>, Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("content", &e))?;
    match doc {
        Value::Array(blocks) => Ok(blocks),
        _ => Err(Failure::invalid(
            "prompt content must be a JSON array of content blocks",
        )),
    }
}

/// Any JSON value (config option values, service results), nested at most `MAX_JSON_DEPTH`
/// levels (`invalid_argument` past it; where it goes in a message is checked where it is used).
pub(crate) fn any_json(what: &str, text: &str) -> Result<Value, Failure> {
    let value = serde_json::from_str(text).map_err(|e| Failure::json(what, &e))?;
    acp_host::wire::depth::check_fits(&value, 1, what).map_err(|e| Failure::too_deep(what, &e))?;
    Ok(value)
}

/// The pool settings of `acph_pool_new` (NULL: the defaults), over `spec`: `{"mode":
/// "process-per-session" | "shared", "maxSessionsPerAgent", "warmSpares", "maxAgents",
/// "idleTimeoutMs" (null: never)}`. The core's parser, so every face accepts and refuses the same
/// documents; a bad one is `invalid_config` under `pool`.
pub(crate) fn pool_config(
    spec: AgentSpec,
    text: Option<&str>,
) -> Result<acp_host::PoolConfig, Failure> {
    let doc = match text {
        None => Value::Object(Map::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| Failure::json("pool_json", &e))?,
    };
    acp_host::PoolConfig::from_json(spec, &doc).map_err(|e| core_config_failure(e, "pool"))
}

// ----- registry ---------------------------------------------------------------------------------

/// An optional string field where `null` also means absent (the faces' `None`/`undefined`).
fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<&'a str>, Failure> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => str_field(obj, key, err),
    }
}

fn platform_field(
    obj: &Map<String, Value>,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<Platform>, Failure> {
    opt_str(obj, "platform", err)?
        .map(|p| {
            p.parse::<Platform>()
                .map_err(|e| err("platform", e.to_string()))
        })
        .transpose()
}

/// The cache directory, made absolute so that results name the same files whatever the current
/// directory is later.
fn cache_dir_field(
    obj: &Map<String, Value>,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<PathBuf>, Failure> {
    match opt_str(obj, "cacheDir", err)? {
        None => Ok(None),
        Some("") => Err(err("cacheDir", "must not be empty".into())),
        Some(dir) => std::path::absolute(dir)
            .map(Some)
            .map_err(|e| err("cacheDir", e.to_string())),
    }
}

/// Options of `acph_registry_resolve` (NULL: every default): `{"prefer": ["binary", "npx",
/// "uvx"] | "npx", "platform": "linux-x86_64", "cacheDir": "/dir", "npxCommand": "npx",
/// "uvxCommand": "uvx"}`, as the other faces take them (`null` = absent).
pub(crate) fn resolve_options(text: Option<&str>) -> Result<ResolveOptions, Failure> {
    let doc = match text {
        None => Value::Object(Map::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| Failure::json("options_json", &e))?,
    };
    let err = |p: &str, m: String| arg_error("resolve options", p, m);
    let obj = object(
        &doc,
        &["prefer", "platform", "cacheDir", "npxCommand", "uvxCommand"],
        &err,
    )?;
    let mut options = ResolveOptions::new();
    options.platform = platform_field(obj, &err)?;
    options.cache_dir = cache_dir_field(obj, &err)?;
    let kind = |k: &str, at: &str| {
        k.parse::<DistributionKind>()
            .map_err(|e| err(at, e.to_string()))
    };
    options.prefer = match obj.get("prefer") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) => Some(vec![kind(k, "prefer")?]),
        Some(Value::Array(_)) => string_list(obj, "prefer", &err)?
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, k)| kind(k, &format!("prefer[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)?,
        Some(_) => {
            return Err(err(
                "prefer",
                "expected \"binary\", \"npx\", \"uvx\" or an array of them".into(),
            ));
        }
    };
    for (key, slot) in [
        ("npxCommand", &mut options.npx_command),
        ("uvxCommand", &mut options.uvx_command),
    ] {
        match opt_str(obj, key, &err)? {
            None => {}
            Some("") => return Err(err(key, "must not be empty".into())),
            Some(program) => *slot = program.to_owned(),
        }
    }
    Ok(options)
}

/// Where and how `acph_registry_install` / `acph_registry_is_installed` work.
#[derive(Debug)]
pub(crate) struct InstallOptions {
    pub cache_dir: PathBuf,
    pub platform: Platform,
    pub limits: InstallLimits,
}

/// Options of `acph_registry_install`: `{"cacheDir": "/dir", "platform": "linux-x86_64",
/// "maxArchiveBytes": n, "maxTotalBytes": n, "maxEntries": n, "maxDirs": n, "maxDepth": n}`
/// (`cacheDir` required; the limits only when `with_limits`, for `acph_registry_is_installed`
/// they are unknown fields).
pub(crate) fn install_options(text: &str, with_limits: bool) -> Result<InstallOptions, Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("options_json", &e))?;
    let err = |p: &str, m: String| arg_error("install options", p, m);
    let fields: &[&str] = if with_limits {
        &[
            "cacheDir",
            "platform",
            "maxArchiveBytes",
            "maxTotalBytes",
            "maxEntries",
            "maxDirs",
            "maxDepth",
        ]
    } else {
        &["cacheDir", "platform"]
    };
    let obj = object(&doc, fields, &err)?;
    let Some(cache_dir) = cache_dir_field(obj, &err)? else {
        return Err(err("cacheDir", "missing".into()));
    };
    let platform = match platform_field(obj, &err)? {
        Some(p) => p,
        None => Platform::current().ok_or_else(|| {
            Failure::new(
                acph_status::ACPH_STATUS_UNSUPPORTED,
                "this platform has no key in the registry format: pass \"platform\"",
            )
        })?,
    };
    let mut limits = InstallLimits::default();
    if let Some(n) = u64_field(obj, "maxArchiveBytes", &err)? {
        limits.max_archive_bytes = n;
    }
    if let Some(n) = u64_field(obj, "maxTotalBytes", &err)? {
        limits.max_total_bytes = n;
    }
    if let Some(n) = u64_field(obj, "maxEntries", &err)? {
        limits.max_entries = n;
    }
    if let Some(n) = u64_field(obj, "maxDirs", &err)? {
        limits.max_dirs = n;
    }
    if let Some(n) = u64_field(obj, "maxDepth", &err)? {
        limits.max_depth = n;
    }
    Ok(InstallOptions {
        cache_dir,
        platform,
        limits,
    })
}

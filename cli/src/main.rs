//! `acph`: run and inspect ACP agents from the terminal.
//!
//! ```text
//! acph run [--json] [--options FILE] [--agent-options FILE] [--session-options FILE]
//!          [--cwd DIR] [--root DIR]... [--mode MODE] [--policy FILE|PRESET]
//!          [--permission ask|allow|deny] [--elicitation ask|off] [--permission-timeout SECS]
//!          [--auth METHOD] [--timeout SECS] [--scenario NAME] [PROMPT] [-- AGENT_CMD ARGS...]
//! acph probe [--json] [--options FILE] [--agent-options FILE] [--timeout SECS] [--scenario NAME]
//!            [-- AGENT_CMD ARGS...]
//! acph replay FILE [--fast] [--report FILE] [--wait SECS|none] [--ignore PATH]...
//! acph inspect FILE [-o OUT|-] [--force]
//! ```
//!
//! Without `AGENT_CMD` the bundled mock agent (`acp-mock-agent`, next to `acph` or on PATH) runs.
//! The host serves the agent's `fs/*` and `terminal/*` requests itself, confined to the session's
//! roots (`--cwd` plus every `--root`) and governed by the permission policy (`--policy`; see
//! docs/PERMISSIONS.md); `--permission` answers what the policy leaves to the host.
//! Everything of the agent's that is printed is escaped by `acp_host::display` (bidi controls,
//! invisible and control characters as `<U+XXXX>`; docs/PERMISSIONS.md, "Showing agent text").
//! `-v` also shows the host's log on stderr (spawn, handshake, a handshake still waiting every 5 s,
//! handler failures, the agent's exit); on a terminal a transient line says what acph waits for
//! while the agent starts (`status`), and `--timeout` bounds that wait.
//! The exit status says how the turn ended or what failed (`exit::HELP`, also in `acph --help`).

mod args;
mod documents;
mod elicitation;
mod exit;
mod inspect;
mod login;
mod order;
mod permission;
mod probe;
mod render;
mod replay;
mod signals;
mod status;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_host::auth::TerminalAuth;
use acp_host::options::{self, Face};
use acp_host::{
    Agent, AgentSpec, ElicitationHandler, Error, Host, HostConfig, PermissionHandler, Session,
    SessionOptions,
};
use clap::Parser;
use serde_json::Value;
use tokio::sync::watch;

use crate::args::{AgentArgs, Cli, Command, RunArgs};
use crate::elicitation::ElicitationMode;
use crate::permission::{PermissionMode, PromptGate};
use crate::render::{Out, Renderer, SharedOut, eprint_line, flat_line, lock, one_line};
use crate::signals::{Signals, interrupted, interruptible, next_interrupt, watch_interrupts};

/// The bundled default agent.
const MOCK_AGENT: &str = "acp-mock-agent";
/// How long to wait for the last events (`agent_exited`) once the agent was shut down.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a command failed: printed as one line `acph: ...` on stderr.
#[derive(Debug)]
enum Failure {
    Core(Error),
    /// May quote the agent: bounded to one short line.
    Message(String),
    /// Stopped by a signal; the exit status.
    Interrupted(i32),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

impl Failure {
    fn exit_code(&self) -> i32 {
        match self {
            Failure::Interrupted(code) => *code,
            Failure::Core(e) if e.kind() == "timeout" => exit::TIMEOUT,
            _ => exit::FAILED,
        }
    }

    /// The one line, with a hint where the category has one.
    fn line(&self, agent: Option<&Agent>) -> String {
        match self {
            Failure::Interrupted(130) => "interrupted".to_owned(),
            Failure::Interrupted(_) => "terminated by a signal".to_owned(),
            Failure::Message(m) => one_line(m),
            // Our own text about the user's options (it may quote a long file name): never
            // shortened.
            Failure::Core(e) if e.kind() == "invalid_config" => flat_line(&e.to_string()),
            // Typed, with where the limit comes from.
            Failure::Core(e) if e.kind() == "timeout" => format!(
                "timeout: {} (--timeout SECS sets the limit)",
                one_line(&e.to_string())
            ),
            Failure::Core(e) => {
                let mut line = one_line(&e.to_string());
                if e.kind() == "auth_required" {
                    let methods: Vec<String> = agent
                        .and_then(Agent::info)
                        .map(|i| {
                            i.auth_methods
                                .iter()
                                .filter_map(|m| m.get("id").and_then(Value::as_str))
                                .map(one_line)
                                .collect()
                        })
                        .unwrap_or_default();
                    if !methods.is_empty() {
                        line.push_str(&format!(
                            " (authenticate with --auth METHOD; the agent offers: {})",
                            methods.join(", ")
                        ));
                    }
                }
                line
            }
        }
    }
}

fn main() {
    let cli = Cli::parse();
    // Reads a file and writes one: no runtime, no agent.
    if let Command::Inspect(args) = &cli.command {
        std::process::exit(inspect::run(args));
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprint_line(&format!("acph: cannot start the async runtime: {e}"));
            std::process::exit(1);
        }
    };
    let code = rt.block_on(async move {
        let interrupts = watch_interrupts();
        match cli.command {
            Command::Run(args) => run(*args, cli.verbose, interrupts).await,
            Command::Probe(args) => probe::probe(args, cli.verbose, interrupts).await,
            Command::Replay(args) => replay::replay(args).await,
            // Run above, before the runtime.
            Command::Inspect(_) => exit::FAILED,
        }
    });
    let _ = std::io::stdout().flush();
    // Exit with the runtime still alive: dropping it would wait for a permission prompt still
    // blocked reading the terminal.
    std::process::exit(code);
}

/// The agent to spawn: the `--agent-options` document with AGENT_CMD, else its own command,
/// else the bundled mock (with `--scenario`).
fn agent_spec(args: &AgentArgs) -> Result<AgentSpec, Failure> {
    let doc = documents::read("--agent-options", args.agent_options.as_deref())?;
    if let Some((cmd, rest)) = args.agent_cmd.split_first() {
        if args.scenario.is_some() {
            return Err(Failure::Message(
                "--scenario only applies to the bundled mock agent; pass options to your agent after `--`"
                    .into(),
            ));
        }
        return Ok(documents::agent(doc, Some((cmd.clone(), rest.to_vec())))?);
    }
    if (doc.contains_key("command") || doc.contains_key("replay")) && args.scenario.is_none() {
        return Ok(documents::agent(doc, None)?);
    }
    let mock = find_mock().map_err(Failure::Message)?;
    let mut mock_args = Vec::new();
    if let Some(s) = &args.scenario {
        mock_args = vec!["--scenario".to_owned(), s.clone()];
    }
    Ok(documents::agent(
        doc,
        Some((mock.to_string_lossy().into_owned(), mock_args)),
    )?)
}

/// `acp-mock-agent` next to the `acph` executable (also behind a symlink), else on PATH.
fn find_mock() -> Result<PathBuf, String> {
    let name = format!("{MOCK_AGENT}{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().ok();
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(exe) = &exe {
        dirs.extend(exe.parent().map(Path::to_path_buf));
        if let Ok(real) = exe.canonicalize() {
            dirs.extend(real.parent().map(Path::to_path_buf));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()));
    }
    dirs.into_iter()
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            let here = exe
                .as_deref()
                .and_then(Path::parent)
                .map(|d| format!(" ({})", d.display()))
                .unwrap_or_default();
            format!(
                "the bundled mock agent `{MOCK_AGENT}` was not found next to acph{here} or on PATH; \
                 build it (`cargo build -p acp-mock-agent`) or name an agent after `--`"
            )
        })
}

/// A directory named on the command line, made absolute against the working directory; one
/// with `..` components is resolved (the core refuses `..` in a path, as in every face).
fn directory(flag: &str, d: &Path) -> Result<String, String> {
    let abs = documents::absolute(flag, d)?;
    let dotdot = Path::new(&abs)
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    if dotdot {
        return d
            .canonicalize()
            .map_err(|e| format!("{flag} {}: {e}", d.display()))
            .map(|p| p.to_string_lossy().into_owned());
    }
    Ok(abs)
}

/// `--verbose`: the host's log records (`logLevel`, default info) on stderr, so an agent that
/// keeps the host waiting (never answering `initialize`) is seen at once and every 5 s.
fn verbose_log(verbose: bool) -> Option<std::sync::Arc<dyn acp_host::log::LogSink>> {
    verbose.then(|| {
        let sink = |r: &acp_host::log::LogRecord| {
            eprint_line(&format!(
                "[{}] {}: {}",
                r.level.as_str(),
                r.target,
                render::clean(&r.message)
            ));
        };
        std::sync::Arc::new(sink) as std::sync::Arc<dyn acp_host::log::LogSink>
    })
}

/// The host options: `--options` with the flags on top. A handler of the CLI's answers only
/// what the document leaves to it (an explicit flag replaces the document's choice).
fn host_config(
    args: &RunArgs,
    out: &SharedOut,
    order: &order::SharedOrder,
    verbose: bool,
) -> Result<HostConfig, Failure> {
    let mut doc = host_document(&args.host)?;
    if let Some(p) = &args.policy {
        doc.insert(
            "policy".into(),
            documents::policy(p).map_err(Failure::Message)?,
        );
    }
    if !args.roots.is_empty() {
        let roots = args
            .roots
            .iter()
            .map(|d| directory("--root", d))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Failure::Message)?;
        doc.insert("roots".into(), Value::from(roots));
    }
    if let Some(file) = &args.record {
        // The option takes an absolute path; a relative one is the user's, from here.
        let file = std::path::absolute(file)
            .map_err(|e| Failure::Message(format!("--record {}: {e}", file.display())))?;
        // The core never writes over a file (it would log and not record): say so before starting.
        if file.exists() {
            return Err(Failure::Message(format!(
                "--record {}: the file exists (a recording is never written over)",
                file.display()
            )));
        }
        let mut record = doc
            .remove("record")
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        record.remove("dir");
        record.insert(
            "file".into(),
            Value::from(file.to_string_lossy().into_owned()),
        );
        doc.insert("record".into(), Value::Object(record));
    }
    if let Some(t) = args.permission_timeout {
        doc.insert(
            "permissionTimeoutMs".into(),
            Value::from(t.as_millis() as u64),
        );
    }
    let gate = PromptGate::default();
    let mut hooks = options::Hooks::default();
    if args.permission.is_some() || !doc.contains_key("permission") {
        let mode = args
            .permission
            .unwrap_or_else(PermissionMode::default_for_stdin);
        match permission::handler(mode, out.clone(), gate.clone(), order.clone()) {
            PermissionHandler::Decider(d) => {
                doc.remove("permission");
                hooks.permission = Some(d);
            }
            // No decider: the core denies what the policy leaves to the host, and without
            // --policy it picks `deny-all`.
            _ => {
                doc.insert("permission".into(), Value::from("deny"));
            }
        }
    }
    if args.elicitation.is_some() || !doc.contains_key("elicitation") {
        let mode = args
            .elicitation
            .unwrap_or_else(ElicitationMode::default_for_stdin);
        match elicitation::handler(mode, out.clone(), gate) {
            ElicitationHandler::Decider { modes, decider } => {
                doc.insert("elicitation".into(), Value::from("handler"));
                let mut names = Vec::new();
                if modes.form {
                    names.push("form");
                }
                if modes.url {
                    names.push("url");
                }
                doc.insert("elicitationModes".into(), Value::from(names));
                hooks.elicitation = Some(decider);
            }
            _ => {
                doc.insert("elicitation".into(), Value::from("none"));
            }
        }
    }
    hooks.log = verbose_log(verbose);
    if !doc.contains_key("terminalAuth")
        && let TerminalAuth::Runner(r) = login::runner(args.json)
    {
        hooks.terminal_auth = Some(r);
    }
    Ok(options::host(&Value::Object(doc), Face::Cli)?.with_hooks(hooks)?)
}

/// The `--options` document with `--timeout` on top (the host's `requestTimeoutMs`: it bounds
/// `initialize` and the other requests of the start; the core stops an agent whose handshake
/// times out).
fn host_document(args: &args::HostArgs) -> Result<serde_json::Map<String, Value>, Failure> {
    let mut doc = documents::read("--options", args.options.as_deref())?;
    if let Some(t) = args.timeout {
        let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1);
        doc.insert("requestTimeoutMs".into(), Value::from(ms));
    }
    status::request_events(&mut doc);
    Ok(doc)
}

/// `command arg...` of an agent spec, for one line.
fn command_line(spec: &AgentSpec) -> String {
    let mut line = spec.command.clone();
    for a in &spec.args {
        line.push(' ');
        line.push_str(a);
    }
    one_line(&line)
}

/// Print the failure line (after whatever stdout already shows) and return the exit code.
fn fail(out: Option<&SharedOut>, failure: &Failure, agent: Option<&Agent>) -> i32 {
    if let Some(out) = out {
        let mut o = lock(out);
        o.newline();
        o.flush();
    }
    let _ = std::io::stdout().flush();
    eprint_line(&format!("acph: {}", failure.line(agent)));
    failure.exit_code()
}

async fn run(args: RunArgs, verbose: bool, mut interrupts: watch::Receiver<Signals>) -> i32 {
    // Everything from the command line is checked before anything is spawned: the host, agent
    // and session documents, by the core, as for every face.
    let out = Out::shared();
    let order = order::PromptOrder::shared();
    let checked = (|| {
        let config = host_config(&args, &out, &order, verbose)?;
        let spec = agent_spec(&args.agent)?;
        let doc = documents::read("--session-options", args.session_options.as_deref())?;
        let cwd = match &args.cwd {
            Some(d) => Some(directory("--cwd", d).map_err(Failure::Message)?),
            None => None,
        };
        let session = documents::session(doc, cwd)?;
        Ok::<_, Failure>((config, spec, session))
    })();
    let (config, spec, session_options) = match checked {
        Ok(c) => c,
        Err(f) => return fail(None, &f, None),
    };
    let host = Host::new(config);
    let Some(events) = host.events() else {
        return fail(
            None,
            &Failure::Message("the host's event stream is unavailable".into()),
            None,
        );
    };
    // Pulled concurrently with everything else: the queue is bounded and a stalled reader would
    // stall the agent.
    let relaunching = render::Relaunching::default();
    let renderer = Renderer::new(
        out.clone(),
        args.json,
        verbose,
        relaunching.clone(),
        order,
        command_line(&spec),
    );
    let printer = tokio::spawn(renderer.pump(events));

    let mut agent = None;
    let result = drive(
        &host,
        spec,
        &args,
        session_options,
        &out,
        &mut agent,
        &mut interrupts,
        &relaunching,
    )
    .await;
    let drain = match &agent {
        Some(a) => {
            // Every event up to the end: shut the agent down, then its `agent_exited` ends the
            // printer.
            a.shutdown().await;
            DRAIN_TIMEOUT
        }
        None if matches!(result, Err(Failure::Interrupted(_))) => Duration::from_secs(2),
        None => DRAIN_TIMEOUT,
    };
    drop(host);
    let _ = tokio::time::timeout(drain, printer).await;
    match result {
        Ok(reason) => {
            {
                let mut o = lock(&out);
                o.newline();
                o.flush();
            }
            let code = exit::for_stop_reason(&reason);
            if code != exit::OK {
                // The transcript says `[turn ended: ...]`; this line is for --json and scripts.
                eprint_line(&format!("acph: the turn ended with {}", one_line(&reason)));
            }
            code
        }
        Err(f) => fail(Some(&out), &f, agent.as_ref()),
    }
}

/// Spawn, authenticate, open the session, switch mode, prompt. Leaves the agent in `agent_slot`
/// so the caller shuts it down whatever happened.
#[allow(clippy::too_many_arguments)]
async fn drive(
    host: &Host,
    spec: AgentSpec,
    args: &RunArgs,
    options: SessionOptions,
    out: &SharedOut,
    agent_slot: &mut Option<Agent>,
    interrupts: &mut watch::Receiver<Signals>,
    relaunching: &render::Relaunching,
) -> Result<String, Failure> {
    let mut agent = interruptible(host.spawn(spec), interrupts).await?;
    *agent_slot = Some(agent.clone());
    let terminal = login::terminal_methods(&agent);
    if let Some(method) = &args.auth {
        if terminal.contains(method) {
            agent = relaunch(&agent, method, relaunching, interrupts).await?;
            *agent_slot = Some(agent.clone());
        } else {
            interruptible(agent.authenticate(method), interrupts).await?;
        }
    }
    let session = match interruptible(agent.new_session(options.clone()), interrupts).await {
        Err(Failure::Core(e)) if e.kind() == "auth_required" && args.auth.is_none() => {
            use std::io::IsTerminal;
            match terminal.as_slice() {
                [only] if std::io::stdin().is_terminal() => {
                    eprint_line("acph: the agent needs a login");
                    agent = relaunch(&agent, only, relaunching, interrupts).await?;
                    *agent_slot = Some(agent.clone());
                    // The call that failed, once more, on the relaunched agent.
                    interruptible(agent.new_session(options), interrupts).await?
                }
                _ => return Err(Failure::Core(e)),
            }
        }
        r => r?,
    };
    if let Some(mode) = &args.mode {
        switch_mode(&session, mode, out, args.json, interrupts).await?;
    }

    let prompt = session.prompt_text(&args.prompt);
    tokio::pin!(prompt);
    let mut cancelling = false;
    loop {
        tokio::select! {
            r = &mut prompt => {
                return match r {
                    // The stop reason decides the exit status (`exit::for_stop_reason`).
                    Ok(turn) => Ok(turn.stop_reason),
                    // Ctrl-C, and the agent did not end the turn in time: still a cancelled turn.
                    Err(e) if cancelling && e.kind() == "cancelled" => {
                        Err(Failure::Interrupted(exit::INTERRUPTED))
                    }
                    Err(e) => Err(Failure::Core(e)),
                };
            }
            s = next_interrupt(interrupts) => {
                if cancelling || s.terminate.is_some() {
                    return Err(interrupted(s));
                }
                cancelling = true;
                {
                    let mut o = lock(out);
                    o.newline();
                    o.flush();
                }
                eprint_line("acph: cancelling the turn (Ctrl-C again to stop the agent)");
                if let Err(e) = session.cancel().await {
                    return Err(Failure::Core(e));
                }
            }
        }
    }
}

/// A terminal login, then the relaunched agent. The old agent's `agent_exited` must not end the
/// output, so it is marked before the login runs (and unmarked if the login fails: it stays).
async fn relaunch(
    agent: &Agent,
    method: &str,
    relaunching: &render::Relaunching,
    interrupts: &mut watch::Receiver<Signals>,
) -> Result<Agent, Failure> {
    let mark = |on: bool| {
        if let Ok(mut r) = relaunching.lock() {
            if on {
                r.insert(agent.id());
            } else {
                r.remove(&agent.id());
            }
        }
    };
    mark(true);
    let result = interruptible(agent.terminal_auth(method), interrupts).await;
    if result.is_err() {
        mark(false);
    }
    result
}

/// `session/set_mode` when the session's `modes` offer the id, else the `category: "mode"`
/// config option.
async fn switch_mode(
    session: &Session,
    mode: &str,
    out: &SharedOut,
    json: bool,
    interrupts: &mut watch::Receiver<Signals>,
) -> Result<(), Failure> {
    let state = session.state();
    let mode_ids: Vec<String> = state
        .modes
        .as_ref()
        .and_then(|m| m.get("availableModes"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if mode_ids.iter().any(|m| m == mode) {
        // The agent reports the switch with `current_mode_update`.
        return interruptible(session.set_mode(mode), interrupts).await;
    }
    let option = state
        .config_options
        .as_ref()
        .and_then(Value::as_array)
        .and_then(|o| {
            o.iter()
                .find(|x| x.get("category").and_then(Value::as_str) == Some("mode"))
        })
        .cloned();
    let Some(option) = option else {
        let available = if mode_ids.is_empty() {
            "the agent offers no modes".to_owned()
        } else {
            format!("available: {}", mode_ids.join(", "))
        };
        return Err(Failure::Message(format!(
            "unknown mode `{mode}` ({available})"
        )));
    };
    let values = select_values(&option);
    if !values.iter().any(|v| v == mode) {
        return Err(Failure::Message(format!(
            "unknown mode `{mode}` (available: {})",
            values.join(", ")
        )));
    }
    let id = option.get("id").and_then(Value::as_str).unwrap_or("mode");
    interruptible(session.set_config_option(id, Value::from(mode)), interrupts).await?;
    if !json {
        // No update event follows a config option change; say it here.
        let mut o = lock(out);
        o.line(&format!("[mode] {}", one_line(mode)), false);
        o.flush();
    }
    Ok(())
}

/// The values of a select config option (flat or grouped).
fn select_values(option: &Value) -> Vec<String> {
    let mut values = Vec::new();
    for o in option
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(v) = o.get("value").and_then(Value::as_str) {
            values.push(v.to_owned());
        }
        for g in o
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(v) = g.get("value").and_then(Value::as_str) {
                values.push(v.to_owned());
            }
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_secs;
    use crate::probe::flatten;

    #[test]
    fn cli_parses_prompt_and_agent_command() {
        let cli = Cli::try_parse_from([
            "acph", "run", "--json", "--mode", "code", "hi there", "--", "agent", "--flag",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert!(run.json);
        assert_eq!(run.prompt, "hi there");
        assert_eq!(run.agent.agent_cmd, ["agent", "--flag"]);
        let cli = Cli::try_parse_from(["acph", "run"]).unwrap_or_else(|e| panic!("{e}"));
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.prompt, "Hello");
        assert!(run.agent.agent_cmd.is_empty());
        assert!(run.policy.is_none() && run.roots.is_empty());
        let cli = Cli::try_parse_from([
            "acph",
            "run",
            "--root",
            "a",
            "--policy",
            "read-only",
            "--root",
            "/b",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.roots, [PathBuf::from("a"), PathBuf::from("/b")]);
        assert_eq!(run.policy.as_deref(), Some(Path::new("read-only")));
    }

    #[test]
    fn policy_argument_is_a_preset_or_a_file() {
        use acp_host::permission::policy::PRESETS;
        for preset in PRESETS {
            assert_eq!(documents::policy(Path::new(preset)).unwrap(), *preset);
        }
        // Anything else names a file, made absolute; the core reads (or refuses) it.
        let v = documents::policy(Path::new("policies/p.json")).unwrap();
        let file = v["file"].as_str().unwrap();
        assert!(
            Path::new(file).is_absolute() && file.ends_with("p.json"),
            "{v}"
        );
        let doc = serde_json::json!({"policy": {"file": "/nonexistent/acph-policy.json"}});
        let e = options::host(&doc, Face::Cli).unwrap_err();
        assert_eq!(e.data()["path"], "policy.file");
        assert!(
            e.to_string().contains("/nonexistent/acph-policy.json"),
            "{e}"
        );
    }

    #[test]
    fn scenario_with_agent_command_is_refused() {
        let args = AgentArgs {
            scenario: Some("x".into()),
            agent_options: None,
            agent_cmd: vec!["agent".into()],
        };
        assert!(agent_spec(&args).is_err());
    }

    #[test]
    fn secs_parse() {
        assert_eq!(parse_secs("1.5").ok(), Some(Duration::from_millis(1500)));
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("nan").is_err());
        assert!(parse_secs("x").is_err());
    }

    #[test]
    fn flatten_marks_empty_objects_supported() {
        let v = serde_json::json!({"a": {"b": true, "c": {}}, "d": "x"});
        let mut out = Vec::new();
        flatten("", &v, &mut out);
        assert_eq!(
            out,
            [
                ("a.b".to_owned(), "true".to_owned()),
                ("a.c".to_owned(), "supported".to_owned()),
                ("d".to_owned(), "x".to_owned())
            ]
        );
    }

    #[test]
    fn grouped_select_values() {
        let v = serde_json::json!({"options": [{"value": "a"}, {"group": "g", "options": [{"value": "b"}]}]});
        assert_eq!(select_values(&v), ["a", "b"]);
    }
}

//! `acph`'s command line: the subcommands and their flags (clap).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::elicitation::ElicitationMode;
use crate::permission::PermissionMode;

/// `acph --version`: the crate version and the ACP protocol version it speaks.
pub(crate) fn version_text() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{} (ACP protocol version {})",
            env!("CARGO_PKG_VERSION"),
            acp_host::PROTOCOL_VERSION
        )
    });
    &TEXT
}

/// `acph --help`'s end: the default agent, then the exit status table ([`crate::exit::HELP`]).
fn after_help() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "Without an AGENT_CMD after `--`, the bundled mock agent (acp-mock-agent) runs.\n\n{}",
            crate::exit::HELP
        )
    });
    &TEXT
}

#[derive(Debug, Parser)]
#[command(
    name = "acph",
    version = version_text(),
    about = "Run and inspect ACP (Agent Client Protocol) agents from the terminal",
    after_help = after_help()
)]
pub(crate) struct Cli {
    /// Also show the agent's stderr lines (on stderr) and a few more host events
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Spawn an agent, open a session, send one prompt and stream the turn
    Run(Box<RunArgs>),
    /// Handshake only: print the protocol version, agent info, capabilities and auth methods
    Probe(ProbeArgs),
    /// Be the agent of a recording (docs/RECORDING.md): a stdio ACP agent any host can spawn,
    /// which answers from the recording and reports where the host diverges (on stderr)
    Replay(ReplayArgs),
    /// Write a recording (`acph run --record FILE`) as one self-contained HTML page
    ///
    /// The page shows the connection's timeline (turns, the agent's text, tool calls and diffs,
    /// permissions and who decided, elicitations, terminals, stderr, protocol errors) and every
    /// wire message, linked both ways; it fetches nothing. docs/RECORDING.md, "Inspecting a
    /// recording".
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The recording (`acph run --record FILE`, or the `record` host option)
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Send each message as soon as what precedes it has happened, not at the recorded pace
    #[arg(long)]
    pub(crate) fast: bool,
    /// Write the report (JSON: every divergence, with the fields that differ) to FILE at the end
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// How long a recorded host message is waited for before it is reported missing
    /// (`none`: until the host closes the connection)
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_wait)]
    pub(crate) wait: Wait,
    /// A field never compared, as a divergence names it (`params.prompt`); repeatable
    #[arg(long, value_name = "PATH")]
    pub(crate) ignore: Vec<String>,
}

/// `--wait`: seconds, or `none`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait(pub(crate) Option<Duration>);

fn parse_wait(s: &str) -> Result<Wait, String> {
    if s == "none" {
        return Ok(Wait(None));
    }
    parse_secs(s).map(|d| Wait(Some(d)))
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The recording (docs/RECORDING.md)
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Where to write the page, `-` for stdout; an existing file is refused without --force
    /// [default: FILE.html]
    #[arg(short, long, value_name = "OUT")]
    pub(crate) output: Option<PathBuf>,
    /// Write over OUT when it exists
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Print every event as one JSON object per line (NDJSON) on stdout, and nothing else
    #[arg(long)]
    pub(crate) json: bool,
    /// Working directory of the session, also its sandbox root [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Another directory the agent's fs/* and terminal/* requests may use (repeatable)
    #[arg(long = "root", value_name = "DIR")]
    pub(crate) roots: Vec<PathBuf>,
    /// Switch the session to this mode before prompting
    #[arg(long, value_name = "MODE")]
    pub(crate) mode: Option<String>,
    /// Permission policy: a JSON policy file, or a preset: deny-all, read-only, ask (confine with
    /// deny-all/read-only plus allow rules) [default: deny-all with --permission deny, else ask]
    #[arg(
        long,
        value_name = "FILE|PRESET",
        long_help = "Permission policy: rules that decide the agent's permission requests and its \
                     fs/* and\nterminal/* requests before anyone is asked (docs/PERMISSIONS.md). \
                     FILE is a JSON policy\ndocument; an argument that is not an existing file \
                     names a preset:\n  \
                     deny-all   grant nothing the agent asks for; serve its file reads only\n  \
                     read-only  allow read/search/think/fetch tool calls; deny edits, commands, \
                     writes\n  \
                     ask        leave tool calls to --permission; serve reads, writes and \
                     terminals\n\
                     Writes under .git are always denied, and so are terminals whose env sets \
                     code-loading\nvariables (LD_PRELOAD, BASH_ENV, GIT_CONFIG_*, PATH, ...) \
                     unless an allow rule names them.\n\
                     To confine an unattended agent, use an allow-list: deny-all or read-only \
                     plus \"allow\"\nrules for the commands you expect. Deny rules on \
                     command strings (\"rm *\") are a speed\nbump: they see through common \
                     wrappers (sudo, timeout, nice, env, sh -c, ...) but not\neverything. \
                     A bad file is an error (exit 1).\n\
                     [default: deny-all with --permission deny, else ask]"
    )]
    pub(crate) policy: Option<PathBuf>,
    /// Who answers the permission requests the policy leaves to the host
    /// [default: ask when stdin is a terminal, else deny]
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) permission: Option<PermissionMode>,
    /// Who answers the agent's elicitations (forms, URL consent): ask on the terminal, or off
    /// (not advertised). A URL is shown whole with its host on a line of its own; one that does
    /// not parse or is not http(s) is declined without asking [default: ask when stdin is a
    /// terminal, else off]
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) elicitation: Option<ElicitationMode>,
    /// Deny permission requests nobody answered within SECS seconds [default: 300]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub(crate) permission_timeout: Option<Duration>,
    /// Record the connection to FILE (created; never over an existing file): the wire both ways
    /// and the events, secrets redacted (docs/RECORDING.md; the `record` host option)
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// Authenticate with this auth method (see `acph probe`) before opening the session; a
    /// terminal login runs in this terminal, then the agent is relaunched. Without it, an agent
    /// that answers "authentication required" and offers exactly one terminal login gets that
    /// login when stdin is a terminal
    #[arg(long, value_name = "METHOD")]
    pub(crate) auth: Option<String>,
    /// Session options as a JSON document (docs/OPTIONS.md); --cwd sets its `cwd`
    #[arg(long, value_name = "FILE")]
    pub(crate) session_options: Option<PathBuf>,
    /// The prompt text
    #[arg(value_name = "PROMPT", default_value = "Hello")]
    pub(crate) prompt: String,
    #[command(flatten)]
    pub(crate) host: HostArgs,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

#[derive(Debug, Args)]
pub(crate) struct HostArgs {
    /// Host options as a JSON document (docs/OPTIONS.md: every option of every face); the flags
    /// set theirs on top
    #[arg(long, value_name = "FILE")]
    pub(crate) options: Option<PathBuf>,
    /// Give up when the agent does not answer initialize, or a later request other than the
    /// prompt (authenticate, session/new, ...), within SECS seconds: one `acph: timeout: ...`
    /// line, exit 124, the agent stopped. While it starts, a line on the terminal says what acph
    /// waits for [default: the `requestTimeoutMs` option, 120]
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub(crate) timeout: Option<Duration>,
}

#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    /// Print one JSON object {protocolVersion, agentInfo, agentCapabilities, authMethods}
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) host: HostArgs,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// Scenario of the bundled mock agent (passed on as `--scenario NAME`; not with AGENT_CMD)
    #[arg(long, value_name = "NAME")]
    pub(crate) scenario: Option<String>,
    /// The agent spec as a JSON document (docs/OPTIONS.md: command, args, env, cwd, restart);
    /// AGENT_CMD after `--` replaces its command and args
    #[arg(long, value_name = "FILE")]
    pub(crate) agent_options: Option<PathBuf>,
    /// The agent command and its arguments, after `--` [default: the bundled acp-mock-agent]
    #[arg(last = true, value_name = "AGENT_CMD")]
    pub(crate) agent_cmd: Vec<String>,
}

pub(crate) fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if secs.is_nan() || secs <= 0.0 {
        return Err("must be more than 0 seconds".into());
    }
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

/// `--timeout`: the range of the host's `requestTimeoutMs` (1 ms ..= 30 days), so a bad value is
/// a usage error naming the flag.
pub(crate) fn parse_timeout(s: &str) -> Result<Duration, String> {
    const MAX: Duration = Duration::from_secs(30 * 24 * 3600);
    let d = parse_secs(s)?;
    if d < Duration::from_millis(1) {
        return Err("must be at least 0.001 seconds".into());
    }
    if d > MAX {
        return Err(format!(
            "must be at most {} seconds (30 days)",
            MAX.as_secs()
        ));
    }
    Ok(d)
}

//! `acp-bench-rust`: the Rust clients of the side-by-side benchmark (`scripts/bench-compare`).
//!
//! ```text
//! acp-bench-rust CLIENT WORKLOAD --agent PATH --workspace DIR [--n N] [--file PATH]
//!   CLIENT    floor | host
//!   WORKLOAD  permission | read
//! ```
//!
//! Each run spawns the agent (`acp-bench-agent`), initializes, opens one session in `--workspace`
//! and sends one prompt naming the workload; the agent times every round trip itself and returns
//! the statistics, which this prints as one JSON line on stdout (with `client` and `workload`).
//!
//! - `floor`: a bare blocking client: `std::process`, one `BufReader` line loop, a borrowed
//!   envelope parse (`method`/`id` only) and a hand-written answer. No runtime, no tasks, no
//!   policy: the least any client can do, the anchor every ratio is taken against.
//! - `host`: acp-host's Rust API: a `PermissionDecider` that answers `allow-once` at once
//!   (permission) or the built-in sandboxed fs service (read).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark command: its output is the point"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use acp_host::{AgentSpec, Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

struct Args {
    client: String,
    workload: String,
    agent: PathBuf,
    workspace: PathBuf,
    n: u64,
    file: Option<PathBuf>,
}

const USAGE: &str = "usage: acp-bench-rust floor|host permission|read --agent PATH \
                     --workspace DIR [--n N] [--file PATH]";

fn parse_args() -> Result<Args, BoxError> {
    let mut it = std::env::args().skip(1);
    let client = it.next().ok_or(USAGE)?;
    let workload = it.next().ok_or(USAGE)?;
    let mut args = Args {
        client,
        workload,
        agent: PathBuf::new(),
        workspace: PathBuf::new(),
        n: 2000,
        file: None,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag}: missing value"));
        match flag.as_str() {
            "--agent" => args.agent = PathBuf::from(value()?),
            "--workspace" => args.workspace = PathBuf::from(value()?),
            "--n" => args.n = value()?.replace('_', "").parse()?,
            "--file" => args.file = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument `{flag}`\n{USAGE}").into()),
        }
    }
    if args.agent.as_os_str().is_empty() || args.workspace.as_os_str().is_empty() {
        return Err(USAGE.into());
    }
    Ok(args)
}

fn prompt_text(args: &Args) -> Result<String, BoxError> {
    Ok(match args.workload.as_str() {
        "permission" => format!("permission {}", args.n),
        "read" => {
            let file = args.file.as_ref().ok_or("read needs --file")?;
            format!("read {} {}", args.n, file.display())
        }
        other => return Err(format!("unknown workload `{other}`\n{USAGE}").into()),
    })
}

fn main() {
    let result = parse_args().and_then(|args| match args.client.as_str() {
        "floor" => floor(&args),
        "host" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(BoxError::from)
            .and_then(|rt| rt.block_on(host(&args))),
        other => Err(format!("unknown client `{other}`\n{USAGE}").into()),
    });
    match result {
        Ok(mut stats) => {
            if stats["failures"].as_u64() != Some(0) {
                eprintln!("acp-bench-rust: the agent counted failures: {stats}");
                std::process::exit(1);
            }
            stats["workload"] = json!(parse_args().map(|a| a.workload).unwrap_or_default());
            stats["client"] = json!(parse_args().map(|a| a.client).unwrap_or_default());
            println!("{stats}");
        }
        Err(e) => {
            eprintln!("acp-bench-rust: {e}");
            std::process::exit(1);
        }
    }
}

/// The parts of a line the floor client looks at; everything else stays unparsed.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    method: Option<&'a str>,
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ReadParams<'a> {
    #[serde(borrow)]
    path: std::borrow::Cow<'a, str>,
}

fn floor(args: &Args) -> Result<Value, BoxError> {
    let text = prompt_text(args)?;
    let mut child = Command::new(&args.agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().ok_or("no stdout")?);
    let mut send = |v: &Value| -> std::io::Result<()> {
        let mut b = serde_json::to_vec(v)?;
        b.push(b'\n');
        stdin.write_all(&b)?;
        stdin.flush()
    };
    let mut line = String::new();
    let wait_result = |stdout: &mut BufReader<_>, line: &mut String| -> Result<(), BoxError> {
        line.clear();
        if stdout.read_line(line)? == 0 {
            return Err("agent closed stdout".into());
        }
        Ok(())
    };
    send(&json!({"jsonrpc":"2.0","id":1,"method":"initialize",
        "params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}))?;
    wait_result(&mut stdout, &mut line)?;
    send(&json!({"jsonrpc":"2.0","id":2,"method":"session/new",
        "params":{"cwd": args.workspace, "mcpServers": []}}))?;
    wait_result(&mut stdout, &mut line)?;
    let session: Value = serde_json::from_str(&line)?;
    let session = session["result"]["sessionId"].clone();
    send(&json!({"jsonrpc":"2.0","id":3,"method":"session/prompt",
        "params":{"sessionId": session, "prompt":[{"type":"text","text": text}]}}))?;
    let mut reply = Vec::with_capacity(4096);
    let stats = loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            return Err("agent closed stdout mid-turn".into());
        }
        let env: Envelope<'_> = serde_json::from_str(&line)?;
        match (env.method, env.id) {
            (Some("session/request_permission"), Some(id)) => {
                reply.clear();
                reply.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                reply.extend_from_slice(id.get().as_bytes());
                reply.extend_from_slice(
                    b",\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow-once\"}}}\n",
                );
                stdin.write_all(&reply)?;
                stdin.flush()?;
            }
            (Some("fs/read_text_file"), Some(id)) => {
                let params: ReadParams<'_> =
                    serde_json::from_str(env.params.ok_or("no params")?.get())?;
                let content = std::fs::read_to_string(params.path.as_ref())?;
                reply.clear();
                reply.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                reply.extend_from_slice(id.get().as_bytes());
                reply.extend_from_slice(b",\"result\":{\"content\":");
                serde_json::to_writer(&mut reply, &content)?;
                reply.extend_from_slice(b"}}\n");
                stdin.write_all(&reply)?;
                stdin.flush()?;
            }
            (None, Some(id)) if id.get() == "3" => {
                let result: Value = serde_json::from_str(env.result.ok_or("prompt failed")?.get())?;
                break result["_meta"]["bench"].clone();
            }
            _ => {}
        }
    };
    drop(stdin);
    child.wait()?;
    Ok(stats)
}

async fn host(args: &Args) -> Result<Value, BoxError> {
    let text = prompt_text(args)?;
    let decider = |_req: PermissionRequest| async { Ok(Some("allow-once".to_owned())) };
    let host = Host::new(HostConfig {
        events_enabled: false,
        permission: PermissionHandler::Decider(Arc::new(decider)),
        ..HostConfig::default()
    });
    let agent = host
        .spawn(AgentSpec::new(args.agent.to_string_lossy()))
        .await?;
    let session = agent
        .new_session(SessionOptions::new(args.workspace.to_string_lossy()))
        .await?;
    let turn = session.prompt_text(&text).await?;
    agent.shutdown().await;
    drop(session);
    host.shutdown().await;
    if turn.stop_reason != "end_turn" {
        return Err(format!("turn ended with {}", turn.stop_reason).into());
    }
    Ok(turn.raw["_meta"]["bench"].clone())
}

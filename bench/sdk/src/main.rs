//! `acp-bench-rust-sdk`: the official Rust ACP SDK (`agent-client-protocol` 5.2.0, pinned) as a
//! client in the side-by-side benchmark (`scripts/bench-compare`).
//!
//! ```text
//! acp-bench-rust-sdk sdk WORKLOAD --agent PATH [--workspace DIR] [--n N] [--file PATH]
//!   WORKLOAD  permission | read | flood | spawn   (as acp-bench-rust; see bench/src/common.rs)
//! ```
//!
//! Written as the SDK's own examples (`yolo_one_shot_client`) write a client: `Client.v1()` with
//! typed handlers (`on_receive_request` for `session/request_permission`, answered with the
//! `allow_once` option at once, and for `fs/read_text_file`, answered by reading the file;
//! `on_receive_notification` for `session/update`), connected to an `AcpAgent` (the SDK spawns
//! the agent in a process group of its own and speaks over its stdio), requests sent with
//! `send_request(..).block_task()` from the `connect_with` foreground.
//!
//! The SDK 5.x has no `Client` trait to implement (0.x's `ClientSideConnection`): the handlers
//! above are its client API. Its dispatch loop runs each notification handler to completion
//! before it routes the next message, so when the prompt's response is back every update of the
//! turn has been counted.
//!
//! A workspace of its own (`bench/sdk/`): the SDK pins `agent-client-protocol-schema = "=1.17.0"`
//! and acp-host a newer 1.x; one graph cannot hold both.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark command: its output is the point"
)]

#[path = "../../src/common.rs"]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation, InitializeRequest,
    NewSessionRequest, PermissionOptionKind, PromptRequest, PromptResponse, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    StopReason, TextContent,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client};
use serde_json::Value;

use common::{Args, BoxError, SpawnSample};

const USAGE: &str = "usage: acp-bench-rust-sdk sdk permission|read|flood|spawn --agent PATH \
                     [--workspace DIR] [--n N] [--file PATH]";

fn main() {
    let args = match common::parse_args(USAGE, &["sdk"]) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("acp-bench-rust-sdk: {e}");
            std::process::exit(2);
        }
    };
    // As the SDK's examples run it: `#[tokio::main]`, the multi-threaded runtime.
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(BoxError::from)
        .and_then(|rt| rt.block_on(run(&args)));
    common::finish("acp-bench-rust-sdk", &args, result);
}

async fn run(args: &Args) -> Result<Value, BoxError> {
    match args.workload.as_str() {
        "permission" | "read" => round_trips(args).await,
        "flood" => flood(args).await,
        "spawn" => spawn(args).await,
        other => Err(format!("unknown workload `{other}`").into()),
    }
}

fn initialize_request() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
        )
        .client_info(Implementation::new("acp-bench-sdk", "0"))
}

/// initialize + session/new in `cwd`: the new session's id, and when initialize was answered.
async fn open_session(
    cx: &ConnectionTo<Agent>,
    cwd: &Path,
) -> agent_client_protocol::Result<(SessionId, Instant)> {
    cx.send_request(initialize_request()).block_task().await?;
    let initialized = Instant::now();
    let session = cx
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?;
    Ok((session.session_id, initialized))
}

async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: SessionId,
    text: String,
) -> agent_client_protocol::Result<PromptResponse> {
    cx.send_request(PromptRequest::new(
        session,
        vec![ContentBlock::Text(TextContent::new(text))],
    ))
    .block_task()
    .await
}

fn agent_process(agent: &Path, args: &[String]) -> AcpAgent {
    AcpAgent::new(AcpAgentConfig::new(agent).args(args))
}

async fn round_trips(args: &Args) -> Result<Value, BoxError> {
    let text = common::prompt_text(args)?;
    let cwd = args.workspace.clone();
    let response = Client
        .v1()
        .name("acp-bench-sdk")
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let option = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .map(|o| o.option_id.clone());
                responder.respond(RequestPermissionResponse::new(match option {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                }))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let content = std::fs::read_to_string(&request.path)
                    .map_err(agent_client_protocol::Error::into_internal_error)?;
                responder.respond(ReadTextFileResponse::new(content))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            agent_process(&args.agent, &[]),
            async move |cx: ConnectionTo<Agent>| {
                let (session, _) = open_session(&cx, &cwd).await?;
                prompt(&cx, session, text).await
            },
        )
        .await?;
    if response.stop_reason != StopReason::EndTurn {
        return Err(format!("turn ended with {:?}", response.stop_reason).into());
    }
    Ok(response
        .meta
        .and_then(|mut m| m.remove("bench"))
        .ok_or("the prompt response has no _meta.bench")?)
}

async fn flood(args: &Args) -> Result<Value, BoxError> {
    let idle = common::status_kib("VmRSS:");
    let counted = Arc::new(AtomicU64::new(0));
    let counter = counted.clone();
    let cwd = args.workspace.clone();
    let (response, updates, seconds, cpu) = Client
        .v1()
        .name("acp-bench-sdk")
        .on_receive_notification(
            async move |_update: SessionNotification, _cx| {
                counter.fetch_add(1, Ordering::Relaxed);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent_process(&args.agent, &["--flood".to_owned(), args.n.to_string()]),
            async move |cx: ConnectionTo<Agent>| {
                let (session, _) = open_session(&cx, &cwd).await?;
                let before = counted.load(Ordering::Relaxed);
                let cpu0 = common::cpu_seconds();
                let start = Instant::now();
                let response = prompt(&cx, session, "flood".to_owned()).await?;
                let seconds = start.elapsed().as_secs_f64();
                let cpu = common::cpu_seconds() - cpu0;
                let updates = counted.load(Ordering::Relaxed) - before;
                Ok((response, updates, seconds, cpu))
            },
        )
        .await?;
    if response.stop_reason != StopReason::EndTurn {
        return Err(format!("turn ended with {:?}", response.stop_reason).into());
    }
    Ok(common::flood_stats(updates, seconds, cpu, idle))
}

async fn spawn(args: &Args) -> Result<Value, BoxError> {
    let mut samples = Vec::with_capacity(usize::try_from(args.n).unwrap_or(0));
    for _ in 0..args.n {
        let cwd = args.workspace.clone();
        let start = Instant::now();
        // `connect_with` returns once the foreground is done and the agent, its stdin closed,
        // has exited: the sample is taken inside, at session/new's answer.
        let elapsed = Client
            .v1()
            .name("acp-bench-sdk")
            .connect_with(
                agent_process(&args.agent, &[]),
                async move |cx: ConnectionTo<Agent>| {
                    let (_, initialized) = open_session(&cx, &cwd).await?;
                    Ok(SpawnSample {
                        initialized: initialized - start,
                        session: start.elapsed(),
                    })
                },
            )
            .await?;
        samples.push(elapsed);
    }
    Ok(common::spawn_stats(&samples))
}

//! The floor client's round trips on the runtime acp-host uses: tokio's multi-thread scheduler,
//! `tokio::process` pipes (readiness through epoll), one task, the same borrowed envelope parse
//! and hand-written answers as [`super::floor`]. Not an anchor: it shows what the runtime's wake
//! path alone costs, so a reader can tell it from what acp-host does on top
//! (docs/BENCHMARKS.md). Round trips only (`permission`, `read`).

use std::process::Stdio;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};

use crate::common::{self, Args, BoxError};
use crate::floor::{Envelope, reply_to};

pub async fn run(args: &Args) -> Result<Value, BoxError> {
    match args.workload.as_str() {
        "permission" | "read" => round_trips(args).await,
        other => Err(format!("tokio-floor runs round trips only, not `{other}`").into()),
    }
}

struct Conn {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    reply: Vec<u8>,
}

impl Conn {
    async fn send(&mut self, v: &Value) -> Result<(), BoxError> {
        let mut b = serde_json::to_vec(v)?;
        b.push(b'\n');
        self.stdin.write_all(&b).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// As [`super::floor`]'s `wait`: lines until the response to `id`, answering on the way.
    async fn wait(&mut self, id: u64) -> Result<Value, BoxError> {
        let want = id.to_string();
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line).await? == 0 {
                return Err(format!("agent closed stdout before answering request {id}").into());
            }
            let env: Envelope<'_> = serde_json::from_str(&self.line)?;
            let Some(method) = env.method else {
                if env.id.map(RawValue::get) == Some(want.as_str()) {
                    if let Some(err) = env.error {
                        return Err(format!("request {id} failed: {}", err.get()).into());
                    }
                    return Ok(serde_json::from_str(env.result.ok_or("no result")?.get())?);
                }
                continue;
            };
            if !reply_to(method, &env, &mut self.reply)? {
                continue;
            }
            self.stdin.write_all(&self.reply).await?;
            self.stdin.flush().await?;
        }
    }
}

async fn round_trips(args: &Args) -> Result<Value, BoxError> {
    let text = common::prompt_text(args)?;
    let mut child = Command::new(&args.agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", args.agent.display()))?;
    let mut conn = Conn {
        stdin: child.stdin.take().ok_or("no stdin")?,
        stdout: BufReader::with_capacity(1 << 16, child.stdout.take().ok_or("no stdout")?),
        line: String::with_capacity(1024),
        reply: Vec::with_capacity(4096),
    };
    conn.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true}},
            "clientInfo": {"name": "acp-bench-tokio-floor", "version": "0"},
        }}),
    )
    .await?;
    conn.wait(1).await?;
    conn.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": args.workspace, "mcpServers": []}}))
        .await?;
    let session = conn.wait(2).await?["sessionId"]
        .as_str()
        .ok_or("session/new result has no sessionId")?
        .to_owned();
    conn.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}),
    )
    .await?;
    let result = conn.wait(3).await?;
    drop(conn);
    let status = child.wait().await?;
    if !status.success() {
        return Err(format!("agent exited with {status}").into());
    }
    Ok(result["_meta"]["bench"].clone())
}

//! The floor client: the least any ACP client can do, and the anchor of every ratio.
//!
//! One blocking thread: `std::process` pipes, a `BufReader` line loop, every line parsed into a
//! borrowed [`Envelope`] (`method`, `id`, `params`, `result`, `error` as `&str`/`&RawValue`
//! borrowing the line; nothing else is looked at), answers to the agent's requests written by
//! hand. For the flood this is "the borrowed-envelope loop".

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::common::{self, Args, BoxError, SpawnSample};

pub fn run(args: &Args) -> Result<Value, BoxError> {
    match args.workload.as_str() {
        "permission" | "read" => round_trips(args),
        "flood" => flood(args),
        "spawn" => spawn(args),
        other => Err(format!("unknown workload `{other}`").into()),
    }
}

/// The parts of a line the floor client looks at; everything else stays unparsed.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(borrow)]
    pub method: Option<&'a str>,
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ReadParams<'a> {
    #[serde(borrow)]
    path: std::borrow::Cow<'a, str>,
}

/// One agent process and its pipes.
struct Conn {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
    reply: Vec<u8>,
    /// `session/update` notifications seen so far.
    updates: u64,
}

impl Conn {
    fn spawn(agent: &Path, args: &[&str]) -> Result<Conn, BoxError> {
        let mut child = Command::new(agent)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", agent.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().ok_or("no stdout")?);
        Ok(Conn {
            child,
            stdin: Some(stdin),
            stdout,
            line: String::with_capacity(1024),
            reply: Vec::with_capacity(4096),
            updates: 0,
        })
    }

    fn send(&mut self, v: &Value) -> Result<(), BoxError> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        let mut b = serde_json::to_vec(v)?;
        b.push(b'\n');
        stdin.write_all(&b)?;
        stdin.flush()?;
        Ok(())
    }

    /// initialize (id 1) and session/new (id 2) in `cwd`; the session id. `initialized` (when
    /// given) is set when initialize is answered.
    fn open_session(
        &mut self,
        cwd: &Path,
        initialized: Option<&mut Instant>,
    ) -> Result<String, BoxError> {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": true}},
                "clientInfo": {"name": "acp-bench-floor", "version": "0"},
            }}),
        )?;
        self.wait(1)?;
        if let Some(at) = initialized {
            *at = Instant::now();
        }
        self.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []}}))?;
        let result = self.wait(2)?;
        Ok(result["sessionId"]
            .as_str()
            .ok_or("session/new result has no sessionId")?
            .to_owned())
    }

    /// Reads lines until the response to `id`, answering the agent's requests on the way and
    /// counting `session/update`s; the response's `result`.
    fn wait(&mut self, id: u64) -> Result<Value, BoxError> {
        let want = id.to_string();
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
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
            if method == "session/update" && env.id.is_none() {
                self.updates += 1;
            } else if reply_to(method, &env, &mut self.reply)? {
                self.write_reply()?;
            }
        }
    }

    fn write_reply(&mut self) -> Result<(), BoxError> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(&self.reply)?;
        stdin.flush()?;
        Ok(())
    }

    /// Closes the agent's stdin (ACP's stdio shutdown) and waits for it to exit.
    fn close(mut self) -> Result<(), BoxError> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            return Err(format!("agent exited with {status}").into());
        }
        Ok(())
    }
}

/// The floor's answer to an agent's request, written by hand into `reply` (cleared first):
/// `allow-once` for a permission, the file (read blocking) for `fs/read_text_file`. `false` for a
/// notification (nothing to answer); an error for any other request.
pub(crate) fn reply_to(
    method: &str,
    env: &Envelope<'_>,
    reply: &mut Vec<u8>,
) -> Result<bool, BoxError> {
    let Some(rid) = env.id else {
        return Ok(false);
    };
    reply.clear();
    reply.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    reply.extend_from_slice(rid.get().as_bytes());
    match method {
        "session/request_permission" => reply.extend_from_slice(
            b",\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow-once\"}}}\n",
        ),
        "fs/read_text_file" => {
            let params: ReadParams<'_> =
                serde_json::from_str(env.params.ok_or("no params")?.get())?;
            let content = std::fs::read_to_string(params.path.as_ref())?;
            reply.extend_from_slice(b",\"result\":{\"content\":");
            serde_json::to_writer(&mut *reply, &content)?;
            reply.extend_from_slice(b"}}\n");
        }
        other => return Err(format!("unexpected request {other} ({})", rid.get()).into()),
    }
    Ok(true)
}

fn prompt(session: &str, id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
}

fn round_trips(args: &Args) -> Result<Value, BoxError> {
    let text = common::prompt_text(args)?;
    let mut conn = Conn::spawn(&args.agent, &[])?;
    let session = conn.open_session(&args.workspace, None)?;
    conn.send(&prompt(&session, 3, &text))?;
    let result = conn.wait(3)?;
    conn.close()?;
    Ok(result["_meta"]["bench"].clone())
}

fn flood(args: &Args) -> Result<Value, BoxError> {
    let idle = common::status_kib("VmRSS:");
    let mut conn = Conn::spawn(&args.agent, &["--flood", &args.n.to_string()])?;
    let session = conn.open_session(&args.workspace, None)?;
    let updates0 = conn.updates;
    let cpu0 = common::cpu_seconds();
    let start = Instant::now();
    conn.send(&prompt(&session, 3, "flood"))?;
    let result = conn.wait(3)?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = common::cpu_seconds() - cpu0;
    let updates = conn.updates - updates0;
    conn.close()?;
    if result["stopReason"] != "end_turn" {
        return Err(format!("prompt result: {result}").into());
    }
    Ok(common::flood_stats(updates, seconds, cpu, idle))
}

fn spawn(args: &Args) -> Result<Value, BoxError> {
    let mut samples = Vec::with_capacity(usize::try_from(args.n).unwrap_or(0));
    for _ in 0..args.n {
        let start = Instant::now();
        let mut initialized = start;
        let mut conn = Conn::spawn(&args.agent, &[])?;
        conn.open_session(&args.workspace, Some(&mut initialized))?;
        samples.push(SpawnSample {
            initialized: initialized - start,
            session: start.elapsed(),
        });
        conn.close()?;
    }
    Ok(common::spawn_stats(&samples))
}

//! The wire harness: bytes through `LineReader` (in chunks of any size) and the decoder, checked
//! against a reference model. Shared by `core/tests/integration/fuzz_wire.rs` (proptest) and
//! `fuzz/fuzz_targets/wire_decode.rs` (libFuzzer); a violated invariant is an `Err`.

use std::pin::Pin;
use std::task::{Context, Poll};

use acp_host::wire::message::{self, Incoming, Interner};
use acp_host::wire::{Frame, LineReader};
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `data` in reads of the given sizes (cycled), returning `Pending` (with an immediate
/// wake) before every other read, so every split point and every resume path is exercised.
pub struct Chunked {
    data: Vec<u8>,
    pos: usize,
    chunks: Vec<usize>,
    next: usize,
    stall: bool,
}

impl Chunked {
    pub fn new(data: &[u8], chunks: &[usize]) -> Self {
        let chunks: Vec<usize> = chunks.iter().map(|&c| c.max(1)).collect();
        Chunked {
            data: data.to_vec(),
            pos: 0,
            chunks: if chunks.is_empty() {
                vec![usize::MAX]
            } else {
                chunks
            },
            next: 0,
            stall: false,
        }
    }
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        this.stall = !this.stall;
        if this.stall && this.pos < this.data.len() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let size = this.chunks[this.next % this.chunks.len()];
        this.next += 1;
        let n = size.min(buf.remaining()).min(this.data.len() - this.pos);
        buf.put_slice(&this.data[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// The reference model of the framing: split on `\n`; a segment longer than `max_line` (counting
/// a trailing `\r`) is `TooLong` with its full length; else one trailing `\r` is stripped; an empty
/// segment after the last `\n` is nothing.
pub fn model_frames(data: &[u8], max_line: usize) -> Vec<Frame> {
    let max_line = max_line.max(1);
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if segments.last().is_some_and(|s| s.is_empty()) {
        segments.pop();
    }
    for seg in segments {
        if seg.len() > max_line {
            out.push(Frame::TooLong {
                len: seg.len() as u64,
            });
        } else {
            let line = seg.strip_suffix(b"\r").unwrap_or(seg);
            out.push(Frame::Line(line.to_vec()));
        }
    }
    out
}

/// Frames from a real `LineReader` fed in `chunks`. `buffered` mixes `next_frame_ref` with
/// `next_buffered_ref` the way the connection's reader task does.
pub async fn reader_frames(
    data: &[u8],
    chunks: &[usize],
    max_line: usize,
    buffered: bool,
) -> Vec<Frame> {
    let mut reader = LineReader::new(Chunked::new(data, chunks), max_line);
    let mut out = Vec::new();
    loop {
        match reader.next_frame().await {
            Ok(Some(f)) => out.push(f),
            Ok(None) | Err(_) => break,
        }
        if buffered {
            while let Some(f) = reader.next_buffered() {
                out.push(f);
            }
        }
    }
    out
}

/// What the connection makes of one frame (the reader task's rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    Blank,
    TooLong(u64),
    Noise,
    Update {
        session: String,
        kind: String,
    },
    Request {
        id: String,
        method: String,
    },
    Notification {
        method: String,
    },
    Response {
        id: String,
        ok: bool,
    },
    Invalid,
    /// Nested deeper than `MAX_JSON_DEPTH`: refused, nothing of it forwarded.
    TooDeep {
        id: Option<String>,
        method: Option<String>,
    },
}

/// How deep JSON text nests (brackets in strings skipped): the plain reference for the
/// decoder's check.
pub fn depth_of(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_str, mut escaped) = (0usize, 0, false, false);
    for b in text.bytes() {
        match (in_str, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_str = false,
            (true, false, _) => {}
            (false, _, b'"') => in_str = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Decode one frame like the reader task does (blank lines skipped, invalid UTF-8 decoded lossily)
/// and check what each decoded message promises.
pub fn decode_frame(frame: &Frame, interner: &mut Interner) -> Result<Decoded, String> {
    let bytes = match frame {
        Frame::TooLong { len } => return Ok(Decoded::TooLong(*len)),
        Frame::Line(bytes) => bytes,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Decoded::Blank);
    }
    let text = String::from_utf8_lossy(bytes);
    let decoded = message::decode_with(&text, interner);
    let fresh = message::decode(&text);
    let is_json = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
    let out = match decoded {
        Err(_) if is_json => return Err(format!("valid JSON reported as noise: {text:?}")),
        Err(_) => Decoded::Noise,
        Ok(_) if !is_json => return Err(format!("invalid JSON decoded as a message: {text:?}")),
        Ok(msg) => summarize(&msg)?,
    };
    // Exactly the JSON nested deeper than the limit is refused; nothing deeper goes on.
    if is_json {
        let deep = depth_of(&text) > acp_host::wire::MAX_JSON_DEPTH;
        if deep != matches!(out, Decoded::TooDeep { .. }) {
            return Err(format!(
                "nesting {} (limit {}) decoded as {out:?}: {text:.200}",
                depth_of(&text),
                acp_host::wire::MAX_JSON_DEPTH
            ));
        }
    }
    // The interner is a cache: it must not change what a line means.
    let again = match fresh {
        Err(_) => Decoded::Noise,
        Ok(msg) => summarize(&msg)?,
    };
    if again != out {
        return Err(format!("interned decode {out:?} != fresh decode {again:?}"));
    }
    Ok(out)
}

fn summarize(msg: &Incoming) -> Result<Decoded, String> {
    Ok(match msg {
        Incoming::Update {
            session_id,
            update_kind,
            update,
        } => {
            let v: serde_json::Value = serde_json::from_str(update.get())
                .map_err(|e| format!("update payload is not JSON: {e}"))?;
            if !v
                .get("sessionUpdate")
                .is_some_and(serde_json::Value::is_string)
            {
                return Err(format!("update without a string sessionUpdate: {v}"));
            }
            Decoded::Update {
                session: session_id.to_string(),
                kind: update_kind.to_string(),
            }
        }
        Incoming::Request { id, method, params } => {
            check_echo(id)?;
            check_raw(params.as_deref())?;
            Decoded::Request {
                id: id.json().to_owned(),
                method: method.to_string(),
            }
        }
        Incoming::Notification { method, params } => {
            check_raw(params.as_deref())?;
            Decoded::Notification {
                method: method.to_string(),
            }
        }
        Incoming::Response { id, result } => {
            if id.json() != "null" {
                check_echo(id)?;
            }
            if let Ok(raw) = result {
                check_raw(Some(raw))?;
            }
            Decoded::Response {
                id: id.json().to_owned(),
                ok: result.is_ok(),
            }
        }
        // It answers request `id`, as a failure (neither `result` nor `error`).
        Incoming::MalformedResponse { id, .. } => {
            check_echo(id)?;
            Decoded::Response {
                id: id.json().to_owned(),
                ok: false,
            }
        }
        Incoming::Invalid { .. } => Decoded::Invalid,
        Incoming::TooDeep { id, method } => {
            if let Some(id) = id {
                check_echo(id)?;
            }
            Decoded::TooDeep {
                id: id.as_ref().map(|i| i.json().to_owned()),
                method: method.as_deref().map(str::to_owned),
            }
        }
    })
}

/// The host answers a request by echoing its id verbatim: that answer must be one valid JSON line
/// with the same id.
fn check_echo(id: &acp_host::wire::RawId) -> Result<(), String> {
    let result = serde_json::value::RawValue::from_string("{}".to_owned())
        .map_err(|e| format!("raw value: {e}"))?;
    let err = acp_host::wire::RpcError {
        code: -32601,
        message: "x".into(),
        data: None,
    };
    for line in [
        message::result_line(id, &result),
        message::error_line(id, &err),
    ] {
        if line.contains('\n') {
            return Err(format!("answer spans lines: {line:?}"));
        }
        // Compared as text: the id is echoed verbatim, and serde_json's `Value` cannot hold every
        // valid JSON number (`1e400`), so the answer is only checked to be well-formed JSON.
        #[derive(serde::Deserialize)]
        struct Answer<'a> {
            #[serde(borrow)]
            id: &'a serde_json::value::RawValue,
        }
        let answer: Answer<'_> =
            serde_json::from_str(&line).map_err(|e| format!("answer {line:?} is not JSON: {e}"))?;
        if answer.id.get() != id.json() {
            return Err(format!("answer {line:?} does not carry id {}", id.json()));
        }
    }
    Ok(())
}

fn check_raw(raw: Option<&serde_json::value::RawValue>) -> Result<(), String> {
    match raw {
        Some(r) => serde_json::from_str::<serde::de::IgnoredAny>(r.get())
            .map(|_| ())
            .map_err(|e| format!("payload {:?} is not JSON: {e}", r.get())),
        None => Ok(()),
    }
}

/// The whole wire check for one input: the reader (in `chunks`) agrees with the model and with
/// itself read in one piece, every line is accounted for, no line passes the bound, and every
/// frame decodes without a broken promise. Returns the decoded frames.
pub async fn check_wire(
    data: &[u8],
    chunks: &[usize],
    max_line: usize,
    buffered: bool,
) -> Result<Vec<Decoded>, String> {
    let model = model_frames(data, max_line);
    let got = reader_frames(data, chunks, max_line, buffered).await;
    if got != model {
        return Err(format!(
            "framing differs from the model (chunks {chunks:?}, max {max_line}):\n got   {got:?}\n model {model:?}"
        ));
    }
    let whole = reader_frames(data, &[usize::MAX], max_line, !buffered).await;
    if whole != got {
        return Err("split points changed the frames".into());
    }
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    let tail = usize::from(!data.is_empty() && !data.ends_with(b"\n"));
    if got.len() != newlines + tail {
        return Err(format!(
            "{} frames for {newlines} newlines (+{tail} tail)",
            got.len()
        ));
    }
    let mut interner = Interner::default();
    let mut out = Vec::with_capacity(got.len());
    for f in &got {
        if let Frame::Line(l) = f
            && l.len() > max_line.max(1)
        {
            return Err(format!(
                "a {}-byte line passed the {max_line} bound",
                l.len()
            ));
        }
        out.push(decode_frame(f, &mut interner)?);
    }
    Ok(out)
}

/// A current-thread runtime to drive the async reader from sync harnesses.
pub fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("tokio runtime: {e}"),
    }
}

/// Entry point for libFuzzer: the first bytes pick the bound, the chunk sizes and the read mode.
pub fn fuzz_one(rt: &tokio::runtime::Runtime, data: &[u8]) -> Result<(), String> {
    let (head, body) = data.split_at(data.len().min(4));
    let max_line = head.first().map_or(64, |&b| 1 + usize::from(b) * 4);
    let chunks: Vec<usize> = head.iter().skip(1).map(|&b| 1 + usize::from(b)).collect();
    let buffered = head.get(3).is_some_and(|b| b & 1 == 1);
    rt.block_on(check_wire(body, &chunks, max_line, buffered))
        .map(|_| ())
}

//! Reading a recording (docs/RECORDING.md) into what a replay needs: the header and, in file
//! order, the wire messages both ways, the agent's stderr and stdout noise lines, and how the
//! agent's process ended. Events other than those are the host's view and are not replayed.
//!
//! A recording is input from anyone (a bug report's attachment): every defect is a typed error
//! naming the line, never a panic, and a file or line past the bounds below is refused before it
//! is held in memory.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::record::format::{self, EventData};

/// The largest recording read (twice the recorder's default bound; it is held parsed, a few
/// times its size in memory).
pub const MAX_FILE_BYTES: u64 = 512 << 20;
/// The longest line read (a wire message is bounded by the host's `maxLineBytes`, 64 MiB at most).
const MAX_LINE_BYTES: usize = 80 << 20;

/// A recording, read and checked.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Where it was read from.
    pub path: PathBuf,
    /// The first line (`acpRecording`, `acpHost`, `platform`, `initialize`, …).
    pub header: Value,
    /// What the replay plays and expects, in file order.
    pub entries: Vec<Entry>,
    /// The file has its `end` line (a file without it was cut short).
    pub ended: bool,
    /// It reached its `maxBytes` (a `truncated` line): what followed was not recorded.
    pub truncated: bool,
    /// Lines the recorder dropped to keep up (`gap` lines); what they held cannot be replayed.
    pub dropped_lines: u64,
    /// The entry of each wire line, in file order (what a version 2 event's `wire` names).
    wires: Vec<usize>,
}

/// One thing of the recording, with its file line (1-based) and time `t`.
#[derive(Debug, Clone)]
pub struct Entry {
    pub line: usize,
    pub t: f64,
    pub what: What,
}

/// What an entry is.
#[derive(Debug, Clone)]
pub enum What {
    /// A message the agent sent (the replay sends it).
    Agent(Value),
    /// A message the agent sent with bytes that are not UTF-8 (recorded as U+FFFD): played
    /// with an invalid byte for each.
    AgentLossy(Value),
    /// A message the host sent (the replay expects it).
    Host(Value),
    /// A line of the agent's stderr (from an `agent_stderr` event): `start`, then filler up to
    /// `bytes` (a line over the host's bound was recorded as its length only).
    Stderr { start: String, bytes: u64 },
    /// A non-JSON line on the agent's stdout (from a `protocol_noise` event: its first 1 KiB,
    /// then filler up to its length).
    Noise { start: String, bytes: u64 },
    /// A line over the host's bound (a `line_too_long` protocol error): that many bytes.
    TooLong { bytes: u64 },
    /// The agent's process ended on its own (`agent_exited` with reason `exited`).
    Exited { code: Option<i32> },
}

impl Recording {
    /// Read and check the recording at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Recording> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| {
            Error::InvalidArgument(format!("cannot open the recording {}: {e}", path.display()))
        })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if size > MAX_FILE_BYTES {
            return Err(bad(
                path,
                0,
                format!("{size} bytes, more than the {MAX_FILE_BYTES}-byte bound of a replay"),
            ));
        }
        Recording::read(path, file)
    }

    /// Read a recording from `input` (`path` names it in errors).
    pub fn read(path: &Path, input: impl Read) -> Result<Recording> {
        let mut reader = BufReader::new(input.take(MAX_FILE_BYTES + 1));
        let mut rec = Recording {
            path: path.to_owned(),
            header: Value::Null,
            entries: Vec::new(),
            ended: false,
            truncated: false,
            dropped_lines: 0,
            wires: Vec::new(),
        };
        let mut buf = Vec::new();
        let mut n = 0;
        loop {
            buf.clear();
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| bad(path, n + 1, format!("cannot be read: {e}")))?;
            if read == 0 {
                break;
            }
            n += 1;
            if buf.len() > MAX_LINE_BYTES {
                return Err(bad(path, n, format!("longer than {MAX_LINE_BYTES} bytes")));
            }
            let text = std::str::from_utf8(&buf).map_err(|_| bad(path, n, "not UTF-8".into()))?;
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            let line: Value =
                serde_json::from_str(text).map_err(|e| bad(path, n, format!("not JSON ({e})")))?;
            if n == 1 {
                rec.header = header(path, line)?;
                continue;
            }
            if rec.ended {
                return Err(bad(path, n, "follows the `end` line".into()));
            }
            rec.take(path, n, line)?;
        }
        if n == 0 {
            return Err(bad(path, 0, "empty: not a recording".into()));
        }
        Ok(rec)
    }

    fn take(&mut self, path: &Path, n: usize, line: Value) -> Result<()> {
        let Value::Object(map) = line else {
            return Err(bad(path, n, "not a JSON object".into()));
        };
        if map.contains_key("end") {
            self.ended = true;
            return Ok(());
        }
        if let Some(gap) = map.get("gap") {
            self.dropped_lines += gap["droppedLines"].as_u64().unwrap_or(0);
            return Ok(());
        }
        if map.contains_key("truncated") {
            self.truncated = true;
            return Ok(());
        }
        let t = match map.get("t").and_then(Value::as_f64) {
            Some(t) if t.is_finite() && t >= 0.0 => t,
            _ => {
                return Err(bad(
                    path,
                    n,
                    "has no time `t` (a non-negative number)".into(),
                ));
            }
        };
        let what = if let Some(dir) = map.get("dir") {
            // Any JSON: an agent's line that parsed but is no JSON-RPC message is played as is.
            let Some(msg) = map.get("msg").cloned() else {
                return Err(bad(path, n, "has no `msg`".into()));
            };
            // Format 3: the update's event folded into its line (the host's view: checked, not
            // replayed).
            if let Some(event) = map.get("event") {
                format::folded_event(dir.as_str().unwrap_or_default(), &msg, event)
                    .map_err(|e| bad(path, n, e))?;
            }
            self.wires.push(self.entries.len());
            match dir.as_str() {
                Some("in") => What::Agent(msg),
                Some("out") => What::Host(msg),
                _ => {
                    return Err(bad(
                        path,
                        n,
                        "its `dir` is neither \"in\" nor \"out\"".into(),
                    ));
                }
            }
        } else if let Some(event) = map.get("event") {
            let Value::Object(event) = event else {
                return Err(bad(path, n, "its `event` is not an object".into()));
            };
            let data = self.event_data(event).map_err(|e| bad(path, n, e))?;
            match event.get("kind").and_then(Value::as_str) {
                Some("agent_stderr") => {
                    match (data["line"].as_str(), data["omittedBytes"].as_u64()) {
                        (_, Some(bytes)) => What::Stderr {
                            start: String::new(),
                            bytes: bytes.min(MAX_FILLER),
                        },
                        (Some(line), None) => What::Stderr {
                            start: line.into(),
                            bytes: line.len() as u64,
                        },
                        _ => return Ok(()),
                    }
                }
                Some("protocol_noise") => match data["line"].as_str() {
                    Some(line) => What::Noise {
                        start: line.into(),
                        bytes: data["bytes"].as_u64().unwrap_or(0).min(MAX_FILLER),
                    },
                    None => return Ok(()),
                },
                Some("protocol_error") if data["reason"] == "line_too_long" => What::TooLong {
                    bytes: data["bytes"].as_u64().unwrap_or(0).min(MAX_FILLER),
                },
                // The line before it reached the host with invalid UTF-8: played so again.
                Some("protocol_error") if data["reason"] == "invalid_utf8" => {
                    if let Some(last) = self.entries.last_mut()
                        && let What::Agent(msg) = &last.what
                    {
                        last.what = What::AgentLossy(msg.clone());
                    }
                    return Ok(());
                }
                Some("agent_exited") if data["reason"] == "exited" => What::Exited {
                    code: data["exitCode"]
                        .as_i64()
                        .and_then(|c| i32::try_from(c).ok()),
                },
                Some(_) => return Ok(()),
                None => return Err(bad(path, n, "its `event` has no `kind`".into())),
            }
        } else {
            return Err(bad(
                path,
                n,
                "is none of a wire, event, gap, truncated or end line".into(),
            ));
        };
        self.entries.push(Entry { line: n, t, what });
        Ok(())
    }

    /// An event line's `data`: in the line, or (format 2) in the wire line it refers to.
    fn event_data<'a>(
        &'a self,
        event: &'a Map<String, Value>,
    ) -> std::result::Result<&'a Value, String> {
        match format::event_data(event)? {
            EventData::Inline(data) => Ok(data),
            EventData::Wire(i) => {
                let line = self
                    .wires
                    .get(i)
                    .and_then(|&e| self.entries.get(e))
                    .and_then(|e| match &e.what {
                        What::Agent(msg) | What::AgentLossy(msg) => Some(("in", msg)),
                        What::Host(msg) => Some(("out", msg)),
                        _ => None,
                    });
                format::referenced_data(event, i, line)
            }
        }
    }
}

/// The longest line a replay writes from a recorded length (input from anyone).
const MAX_FILLER: u64 = 1 << 30;

fn header(path: &Path, line: Value) -> Result<Value> {
    match line.get("acpRecording").and_then(Value::as_u64) {
        Some(v) if format::readable(v) => Ok(line),
        Some(v) => Err(bad(
            path,
            1,
            format!(
                "format version {v}; this host reads versions {} to {}",
                format::OLDEST_READ,
                format::FORMAT_VERSION
            ),
        )),
        None => Err(bad(
            path,
            1,
            "not a recording header (no `acpRecording`)".into(),
        )),
    }
}

fn bad(path: &Path, line: usize, message: String) -> Error {
    let at = if line == 0 {
        String::new()
    } else {
        format!(" line {line}")
    };
    Error::InvalidArgument(format!("the recording {}{at}: {message}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = concat!(
        r#"{"acpRecording":1,"acpHost":"0.1.0","initialize":null}"#,
        "\n",
        r#"{"t":0.001,"dir":"out","msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}"#,
        "\n",
        r#"{"t":0.002,"dir":"in","msg":{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}}"#,
        "\n",
        r#"{"t":0.003,"event":{"kind":"agent_stderr","data":{"line":"hi"}}}"#,
        "\n",
        r#"{"t":0.004,"event":{"kind":"protocol_noise","data":{"line":"junk","bytes":9}}}"#,
        "\n",
        r#"{"t":0.005,"gap":{"droppedLines":3}}"#,
        "\n",
        r#"{"t":0.006,"event":{"kind":"agent_exited","data":{"reason":"exited","exitCode":3}}}"#,
        "\n",
        r#"{"t":0.007,"end":{"lines":7}}"#,
        "\n",
    );

    #[test]
    fn a_recording_reads_into_what_a_replay_plays() {
        let rec = Recording::read(Path::new("r"), GOOD.as_bytes()).unwrap();
        assert!(rec.ended && !rec.truncated);
        assert_eq!(rec.dropped_lines, 3);
        let kinds: Vec<String> = rec
            .entries
            .iter()
            .map(|e| match &e.what {
                What::Host(_) => "host".into(),
                What::Agent(_) => "agent".into(),
                What::Stderr { start, bytes } => format!("stderr {start} {bytes}"),
                What::Noise { start, bytes } => format!("noise {start} {bytes}"),
                What::Exited { code } => format!("exited {code:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "host",
                "agent",
                "stderr hi 2",
                "noise junk 9",
                "exited Some(3)"
            ]
        );
    }

    /// Any cut and any flipped byte of a recording: a typed error or a recording, never a panic.
    #[test]
    fn every_cut_and_flipped_byte_is_an_error_or_a_recording() {
        let bytes = GOOD.as_bytes();
        for cut in 0..bytes.len() {
            let _ = Recording::read(Path::new("r"), &bytes[..cut]);
        }
        for at in 0..bytes.len() {
            for flip in [0x00, 0x22, 0x7b, 0xff] {
                let mut b = bytes.to_vec();
                b[at] = flip;
                if let Err(e) = Recording::read(Path::new("r"), b.as_slice()) {
                    assert_eq!(e.kind(), "invalid_argument");
                    assert!(e.to_string().contains("the recording r"), "{e}");
                }
            }
        }
    }

    /// Format 2: an update's event refers to its wire line.
    const GOOD_V2: &str = concat!(
        r#"{"acpRecording":2,"acpHost":"0.1.0","initialize":null}"#,
        "\n",
        r#"{"t":0.001,"dir":"out","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#,
        "\n",
        r#"{"t":0.002,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}}"#,
        "\n",
        r#"{"t":0.002,"event":{"kind":"session_update","session":"s","turn":1,"wire":1}}"#,
        "\n",
        r#"{"t":0.003,"dir":"in","msg":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}}"#,
        "\n",
        r#"{"t":0.007,"end":{"lines":4}}"#,
        "\n",
    );

    #[test]
    fn a_version_2_recording_reads_and_a_reference_that_does_not_hold_is_refused() {
        let rec = Recording::read(Path::new("r"), GOOD_V2.as_bytes()).unwrap();
        assert!(rec.ended);
        assert_eq!(rec.entries.len(), 3, "the wire lines");
        for (bad_ref, why) in [
            (r#""wire":0"#, "wire line 0, a message of the host's"),
            (
                r#""wire":2"#,
                "wire line 2, which is not in the file before it",
            ),
            (r#""wire":99"#, "wire line 99, which is not in the file"),
            (r#""wire":1,"data":{}"#, "both `data` and `wire`"),
            (r#""wire":"1""#, "not the index of a wire line"),
        ] {
            let text = GOOD_V2.replace(r#""wire":1"#, bad_ref);
            let err = Recording::read(Path::new("r"), text.as_bytes()).unwrap_err();
            assert_eq!(err.kind(), "invalid_argument");
            let msg = err.to_string();
            assert!(
                msg.contains("the recording r line 4") && msg.contains(why),
                "{msg}"
            );
        }
        let other = GOOD_V2.replace(r#""session":"s","turn""#, r#""session":"t","turn""#);
        let err = Recording::read(Path::new("r"), other.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("another session"), "{err}");
        let err =
            Recording::read(Path::new("r"), b"{\"acpRecording\":4}\n".as_slice()).unwrap_err();
        assert!(err.to_string().contains("versions 1 to 3"), "{err}");
    }

    /// Format 3: an update's event folded into its wire line.
    const GOOD_V3: &str = concat!(
        r#"{"acpRecording":3,"acpHost":"0.1.0","initialize":null}"#,
        "\n",
        r#"{"t":0.001,"dir":"out","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#,
        "\n",
        r#"{"t":0.002,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}},"event":{"turn":1}}"#,
        "\n",
        r#"{"t":0.003,"dir":"in","msg":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}}"#,
        "\n",
        r#"{"t":0.007,"end":{"lines":4}}"#,
        "\n",
    );

    #[test]
    fn a_version_3_recording_reads_and_a_folded_event_that_does_not_fit_its_line_is_refused() {
        let rec = Recording::read(Path::new("r"), GOOD_V3.as_bytes()).unwrap();
        assert!(rec.ended);
        assert_eq!(rec.entries.len(), 3, "the wire lines");
        assert!(matches!(&rec.entries[1].what, What::Agent(m) if m["method"] == "session/update"));
        for (from, to, why) in [
            (
                r#""event":{"turn":1}"#,
                r#""event":{"turn":"1"}"#,
                "not a turn number",
            ),
            (
                r#""event":{"turn":1}"#,
                r#""event":{"wire":1}"#,
                "only `turn` and `replay`",
            ),
            (r#""event":{"turn":1}"#, r#""event":7"#, "not an object"),
            (
                r#""sessionId":"s","update""#,
                r#""update""#,
                "no `sessionId`",
            ),
            (r#"}}},"event""#, r#"},"x":1}},"event""#, ""),
        ] {
            let text = GOOD_V3.replace(from, to);
            match Recording::read(Path::new("r"), text.as_bytes()) {
                Err(err) => {
                    let msg = err.to_string();
                    assert!(!why.is_empty(), "{msg}");
                    assert!(
                        msg.contains("the recording r line 3") && msg.contains(why),
                        "{msg}"
                    );
                }
                Ok(_) => assert!(why.is_empty(), "{to} was read"),
            }
        }
        let host = GOOD_V3.replace(
            r#""params":{"sessionId":"s","prompt":[]}}}"#,
            r#""params":{"sessionId":"s","prompt":[]}},"event":{}}"#,
        );
        let err = Recording::read(Path::new("r"), host.as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("line 2") && err.to_string().contains("the host's"),
            "{err}"
        );
    }

    #[test]
    fn every_cut_and_flipped_byte_of_a_version_2_recording_is_an_error_or_a_recording() {
        let bytes = GOOD_V2.as_bytes();
        for cut in 0..bytes.len() {
            let _ = Recording::read(Path::new("r"), &bytes[..cut]);
        }
        for at in 0..bytes.len() {
            for flip in [0x00, 0x22, 0x30, 0x39, 0x7b, 0xff] {
                let mut b = bytes.to_vec();
                b[at] = flip;
                if let Err(e) = Recording::read(Path::new("r"), b.as_slice()) {
                    assert_eq!(e.kind(), "invalid_argument");
                }
            }
        }
    }

    #[test]
    fn hostile_lengths_are_bounded_not_allocated() {
        let text = concat!(
            r#"{"acpRecording":1}"#,
            "\n",
            r#"{"t":1e300,"event":{"kind":"protocol_noise","data":{"line":"x","bytes":18446744073709551615}}}"#,
            "\n",
            r#"{"t":2,"event":{"kind":"agent_stderr","data":{"line":"","omittedBytes":18446744073709551615}}}"#,
            "\n",
        );
        let rec = Recording::read(Path::new("r"), text.as_bytes()).unwrap();
        for e in &rec.entries {
            match &e.what {
                What::Noise { bytes, .. } | What::Stderr { bytes, .. } => {
                    assert!(*bytes <= MAX_FILLER)
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

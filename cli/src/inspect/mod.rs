//! `acph inspect FILE [-o OUT] [--force]`: one self-contained HTML page from a recording
//! (docs/RECORDING.md, "Inspecting a recording").
//!
//! The recording is read line by line (each line bounded, [`MAX_LINE`]) into the rows of
//! `model.rs`; `html.rs` writes them once, as JSON inside the page, and the page's script
//! renders them. A file that is not a recording (no header, another format version) is an error;
//! a bad line after the header is skipped and shown in the timeline with its line number, so a
//! recording cut short mid-line still gives its report.

mod diff;
mod html;
mod model;
mod parts;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use acp_host::record::format;
use serde_json::{Value, json};

use crate::args::InspectArgs;
use crate::exit;
use crate::render::{eprint_line, flat_line};

/// The longest line read: a wire line holds one agent message (the host's line limit is 64 MiB
/// by default) plus its envelope. Longer lines are skipped (and shown as skipped), never held.
const MAX_LINE: usize = 80 << 20;
/// Skipped lines shown one by one; past this only their count is.
const MAX_SKIPPED_SHOWN: usize = 1000;

/// What `acph inspect` tells the user on success.
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) output: Option<PathBuf>,
    pub(crate) wire: usize,
    pub(crate) events: usize,
    pub(crate) skipped: usize,
    pub(crate) ended: bool,
}

/// `acph inspect`: the exit status; one line on stderr either way.
pub(crate) fn run(args: &InspectArgs) -> i32 {
    match inspect(args) {
        Ok(done) => {
            let to = done
                .output
                .as_ref()
                .map_or_else(|| "stdout".to_owned(), |p| p.display().to_string());
            let mut line = format!(
                "acph: wrote {to}: {} wire messages, {} events",
                done.wire, done.events
            );
            if done.skipped > 0 {
                line.push_str(&format!(", {} lines skipped", done.skipped));
            }
            if !done.ended {
                line.push_str("; the recording has no end line (cut short)");
            }
            eprint_line(&line);
            exit::OK
        }
        Err(e) => {
            eprint_line(&format!("acph: inspect: {}", flat_line(&e)));
            exit::FAILED
        }
    }
}

/// Run `acph inspect`: Err is the one line for `acph: ...`.
fn inspect(args: &InspectArgs) -> Result<Done, String> {
    let input = &args.file;
    let output = match args.output.as_deref() {
        Some(p) if p == Path::new("-") => None,
        Some(p) => Some(p.to_path_buf()),
        None => {
            let mut name = input.as_os_str().to_owned();
            name.push(".html");
            Some(PathBuf::from(name))
        }
    };
    // Refused before reading anything: the recording may be large.
    if let Some(out) = &output
        && !args.force
        && out.exists()
    {
        return Err(format!(
            "{}: the file exists (--force writes over it)",
            out.display()
        ));
    }
    // Not even with --force: the page would replace the recording it was made from.
    if let Some(out) = &output
        && let (Ok(a), Ok(b)) = (out.canonicalize(), input.canonicalize())
        && a == b
    {
        return Err(format!("{}: that is the recording itself", out.display()));
    }
    let file = File::open(input).map_err(|e| format!("{}: {e}", input.display()))?;
    let report = read(BufReader::new(file)).map_err(|e| format!("{}: {e}", input.display()))?;
    let name = input.file_name().unwrap_or(input.as_os_str());
    let name = name.to_string_lossy();
    let page = |w: &mut dyn Write| html::write_page(w, |d| report.write_json(d, &name));
    match &output {
        None => {
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            page(&mut stdout)
                .and_then(|()| stdout.flush())
                .map_err(|e| format!("writing the report to stdout: {e}"))?;
        }
        Some(out) => {
            write_new(out, args.force, page).map_err(|e| format!("{}: {e}", out.display()))?
        }
    }
    Ok(Done {
        output,
        ..report.done
    })
}

/// Create `path` (never over an existing file unless `force`) and write it; removed again when
/// writing fails.
fn write_new(
    path: &Path,
    force: bool,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let f = if force {
        File::create(path)?
    } else {
        File::options().write(true).create_new(true).open(path)?
    };
    let mut w = std::io::BufWriter::new(f);
    let written = write(&mut w)
        .and_then(|()| w.into_inner().map_err(|e| e.into_error()))
        .and_then(|f| f.sync_all());
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// A recording read: the model of its page and what to tell the user.
#[derive(Debug)]
pub(crate) struct Report {
    model: model::Model,
    header: Value,
    summary: Value,
    done: Done,
}

impl Report {
    /// The page's data (`file`: the recording's name, shown on the page).
    fn write_json(&self, out: &mut dyn Write, file: &str) -> std::io::Result<()> {
        self.model
            .write_json(out, &self.header, &self.summary, file)
    }
}

/// One line, at most `MAX_LINE` bytes kept: Ok(None) at the end of the file; the bool says
/// whether the line ended with `\n`; an over-long line comes back empty with its length.
fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<(bool, usize)>> {
    buf.clear();
    let mut len = 0usize;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok((len > 0).then_some((false, len)));
        }
        let (take, newline) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let body = if newline { &chunk[..take - 1] } else { chunk };
        len = len.saturating_add(body.len());
        if len <= MAX_LINE {
            buf.extend_from_slice(body);
        } else {
            buf.clear();
        }
        r.consume(take);
        if newline {
            return Ok(Some((true, len)));
        }
    }
}

/// Read a recording into the page's model.
pub(crate) fn read(mut r: impl BufRead) -> Result<Report, String> {
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    // The header: the first line that is not blank.
    let header = loop {
        line_no += 1;
        let Some((_, len)) = next_line(&mut r, &mut buf).map_err(|e| e.to_string())? else {
            return Err(if line_no == 1 {
                "the file is empty: not a recording (docs/RECORDING.md)".to_owned()
            } else {
                "no header line: not a recording (docs/RECORDING.md)".to_owned()
            });
        };
        if len > MAX_LINE {
            return Err(format!(
                "line {line_no} is longer than {} MiB: not a recording header",
                MAX_LINE >> 20
            ));
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        break serde_json::from_slice::<Value>(&buf).map_err(|e| {
            format!("line {line_no} is not JSON ({e}): not a recording (docs/RECORDING.md)")
        })?;
    };
    match header.get("acpRecording") {
        Some(v) if v.as_u64().is_some_and(format::readable) => {}
        Some(v) => {
            return Err(format!(
                "recording format version {v} is not one this acph reads (versions {} to {})",
                format::OLDEST_READ,
                format::FORMAT_VERSION
            ));
        }
        None => {
            return Err(format!(
                "line {line_no} has no `acpRecording`: not a recording header (docs/RECORDING.md)"
            ));
        }
    }
    let mut model = model::Model::default();
    let mut skipped = 0usize;
    let mut end: Option<Value> = None;
    let mut skip = |model: &mut model::Model, line: usize, why: String| {
        skipped += 1;
        if skipped <= MAX_SKIPPED_SHOWN {
            let t = model.last_t();
            model.mark("skipped", t, format!("Line {line} skipped: {why}"), None);
        }
    };
    loop {
        line_no += 1;
        let Some((complete, len)) = next_line(&mut r, &mut buf).map_err(|e| e.to_string())? else {
            break;
        };
        if len > MAX_LINE {
            skip(
                &mut model,
                line_no,
                format!("longer than {} MiB", MAX_LINE >> 20),
            );
            continue;
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: Value = match serde_json::from_slice(&buf) {
            Ok(v) => v,
            Err(_) if !complete => {
                skip(
                    &mut model,
                    line_no,
                    "cut off in the middle (the file ends here)".into(),
                );
                continue;
            }
            Err(e) => {
                skip(&mut model, line_no, format!("not JSON ({e})"));
                continue;
            }
        };
        let Some(o) = v.as_object() else {
            skip(&mut model, line_no, "not a JSON object".into());
            continue;
        };
        if end.is_some() {
            skip(&mut model, line_no, "after the end line".into());
            continue;
        }
        let t = o.get("t").and_then(Value::as_f64).filter(|t| t.is_finite());
        if let Some(e) = o.get("end") {
            let t = t.unwrap_or_else(|| model.last_t());
            model.mark("end", t, "End of the recording".into(), Some(e));
            end = Some(e.clone());
        } else if let Some(g) = o.get("gap") {
            let n = g
                .get("droppedLines")
                .map(Value::to_string)
                .unwrap_or_default();
            let t = t.unwrap_or_else(|| model.last_t());
            model.mark(
                "gap",
                t,
                format!("Gap: {n} lines dropped (the disk fell behind)"),
                Some(g),
            );
        } else if let Some(tr) = o.get("truncated") {
            let t = t.unwrap_or_else(|| model.last_t());
            model.mark(
                "truncated",
                t,
                "Truncated: the recording reached its size bound".into(),
                Some(tr),
            );
        } else if let (Some(t), Some(dir), Some(msg)) =
            (t, o.get("dir").and_then(Value::as_str), o.get("msg"))
        {
            let dir = match dir {
                "in" => "in",
                "out" => "out",
                _ => {
                    skip(
                        &mut model,
                        line_no,
                        "a wire line's dir is neither in nor out".into(),
                    );
                    continue;
                }
            };
            // Format 3: the update's event folded into its wire line.
            let folded = o.get("event").map(|ev| format::folded_event(dir, msg, ev));
            model.wire(t, dir, msg.clone());
            match folded {
                Some(Ok((ev, data))) => {
                    let idx = model.wire_count() - 1;
                    model.event(t, &ev, data, Some(idx));
                }
                Some(Err(why)) => skip(&mut model, line_no, why),
                None => {}
            }
        } else if let (Some(t), Some(Value::Object(ev))) = (t, o.get("event")) {
            match model.event_data(ev) {
                Ok((data, from)) => model.event(t, ev, &data, from),
                Err(why) => skip(&mut model, line_no, why),
            }
        } else if t.is_none() && (o.contains_key("dir") || o.contains_key("event")) {
            skip(&mut model, line_no, "no time `t`".into());
        } else {
            skip(
                &mut model,
                line_no,
                "not a wire, event, gap, truncated or end line".into(),
            );
        }
    }
    if skipped > MAX_SKIPPED_SHOWN {
        let t = model.last_t();
        model.mark(
            "skipped",
            t,
            format!("{} more lines skipped", skipped - MAX_SKIPPED_SHOWN),
            None,
        );
    }
    if end.is_none() {
        let t = model.last_t();
        model.mark(
            "cut_short",
            t,
            "No end line: the recording was cut short (the recording process died or the file was cut)".into(),
            None,
        );
    }
    model.link_answers();
    let done = Done {
        output: None,
        wire: model.wire_count(),
        events: model.events,
        skipped,
        ended: end.is_some(),
    };
    let summary = json!({
        "lines": line_no - 1,
        "events": model.events,
        "skipped": skipped,
        "ended": end.is_some(),
        "end": end,
    });
    Ok(Report {
        model,
        header,
        summary,
        done,
    })
}

/// Read a whole recording held in memory (tests).
#[cfg(test)]
fn read_str(s: &str) -> Result<Value, String> {
    let report = read(std::io::Cursor::new(s.as_bytes().to_vec()))?;
    let mut out = Vec::new();
    report
        .write_json(&mut out, "test.jsonl")
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&out).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

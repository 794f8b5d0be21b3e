//! What acph is waiting for while the agent starts ("starting X…", "waiting for X to answer
//! initialize…"), from the host's `progress` events: one line on stderr that is replaced in
//! place and erased once the handshake ends (or before anything else is written), so it never
//! mixes with the transcript, a prompt or an error line. For people only: nothing when stderr is
//! not a terminal (scripts and logs see no change).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use serde_json::Value;

use crate::render::full_line;

static TTY: LazyLock<bool> = LazyLock::new(|| std::io::stderr().is_terminal());
/// Whether a status line is on the screen (the cursor is at its end).
static SHOWN: AtomicBool = AtomicBool::new(false);
/// No more status lines: what they were about is over (`finish`).
static FINISHED: AtomicBool = AtomicBool::new(false);
/// Serializes show and clear (the renderer and the command's task both write); holds the name
/// of the program being started (the spawn's `progress` event names it).
static LOCK: Mutex<String> = Mutex::new(String::new());

/// Longest program name shown: the line must not wrap, or erasing it would leave a row behind.
const MAX_NAME: usize = 24;

fn show(text: impl FnOnce(&str) -> String) {
    if !*TTY {
        return;
    }
    let program = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if FINISHED.load(Ordering::SeqCst) {
        return;
    }
    let text = text(&program);
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[K{text}");
    let _ = e.flush();
    SHOWN.store(true, Ordering::SeqCst);
}

/// Erase the status line, if one is shown; called before anything else is written.
pub fn clear() {
    if !SHOWN.load(Ordering::SeqCst) {
        return;
    }
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if SHOWN.swap(false, Ordering::SeqCst) {
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[K");
        let _ = e.flush();
    }
}

/// Events the CLI asked for only to show status lines: not printed as `--json` lines.
static OWN_EVENTS: AtomicBool = AtomicBool::new(false);

/// Ask the host for `progress` events (the `progressEvents` option) when a status line can be
/// shown and the options document does not decide.
pub fn request_events(doc: &mut serde_json::Map<String, Value>) {
    if *TTY && !doc.contains_key("progressEvents") {
        doc.insert("progressEvents".into(), Value::from(true));
        OWN_EVENTS.store(true, Ordering::SeqCst);
    }
}

/// Whether `progress` events are only there for the status line (`request_events`).
pub fn own_events() -> bool {
    OWN_EVENTS.load(Ordering::SeqCst)
}

/// Erase the status line and show no more: the start is over (a late `progress` event, read by
/// a task that lags behind, must not draw over what follows).
pub fn finish() {
    {
        let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        FINISHED.store(true, Ordering::SeqCst);
    }
    clear();
}

/// The program's file name, for a status line (a full path would not fit).
fn program_name(command: &str) -> String {
    let name = std::path::Path::new(command)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| command.to_owned());
    let name = full_line(&name);
    if name.chars().count() <= MAX_NAME {
        return name;
    }
    let mut short: String = name.chars().take(MAX_NAME - 1).collect();
    short.push('…');
    short
}

/// A `progress` event's `data`: the spawn and the handshake are shown while they run.
pub fn progress(data: &Value) {
    if !*TTY {
        return;
    }
    let field = |k: &str| data.get(k).and_then(Value::as_str);
    match (field("phase"), field("stage")) {
        (Some("spawn"), Some("started")) => {
            let name = program_name(field("message").unwrap_or("the agent"));
            *LOCK.lock().unwrap_or_else(|p| p.into_inner()) = name;
            show(|program| format!("acph: starting {program}…"))
        }
        (Some("handshake"), Some("started" | "waiting")) => {
            let secs = data.get("elapsedMs").and_then(Value::as_u64).unwrap_or(0) / 1000;
            show(|program| {
                let mut line = format!("acph: waiting for {program} to answer initialize…");
                if secs > 0 {
                    line.push_str(&format!(" ({secs} s)"));
                }
                line
            })
        }
        (Some("spawn" | "handshake"), Some("done" | "failed")) => clear(),
        _ => {}
    }
}

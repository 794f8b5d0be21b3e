//! Shared helpers for the core's integration tests: the mock agent, event collection, process
//! table checks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod fake;
pub mod scenario;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use acp_host::{AgentSpec, Event, EventKind, EventStream, PermissionHandler, PermissionRequest};

/// Path of the mock agent binary; built once if missing.
pub fn mock_agent() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Ok(p) = std::env::var("ACP_MOCK_AGENT") {
            return PathBuf::from(p);
        }
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| manifest.join("..").join("target"));
        let path = target
            .join("debug")
            .join(format!("acp-mock-agent{}", std::env::consts::EXE_SUFFIX));
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "acp-mock-agent"])
            .current_dir(manifest.join(".."))
            .status()
            .expect("cargo build -p acp-mock-agent");
        assert!(status.success(), "building the mock agent failed");
        path
    })
    .clone()
}

pub fn mock(scenario: Option<&str>) -> AgentSpec {
    // The mock's login state comes from the environment: a test never inherits it.
    let mut spec = AgentSpec::new(mock_agent().to_string_lossy().into_owned())
        .env_remove("ACP_MOCK_CREDENTIALS")
        .env_remove("ACP_MOCK_LOGIN_FAIL");
    if let Some(s) = scenario {
        spec = spec.args(["--scenario", s]);
    }
    spec
}

/// `path` resolved as `canonicalize` does, in the form a user or agent writes it: on Windows
/// without the verbatim prefix (`\\?\C:\dir` is `C:\dir`), in which `/` and `..` are not
/// read as separators and parents.
pub fn canonical(path: &std::path::Path) -> String {
    let full = path.canonicalize().unwrap().to_string_lossy().into_owned();
    match full.strip_prefix(r"\\?\") {
        Some(plain) if plain.as_bytes().get(1) == Some(&b':') => plain.to_owned(),
        _ => full,
    }
}

pub fn tmp_cwd() -> String {
    std::env::temp_dir().to_string_lossy().into_owned()
}

/// Pull events until `stop` matches (inclusive) or the timeout elapses (then panic with what we got).
pub async fn collect_until(
    events: &mut EventStream,
    timeout: Duration,
    stop: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(ev)) => {
                let done = stop(&ev);
                got.push(ev);
                if done {
                    return got;
                }
            }
            Ok(None) => return got,
            Err(_) => panic!(
                "timed out waiting for an event; got kinds: {:?}",
                got.iter().map(describe).collect::<Vec<_>>()
            ),
        }
    }
}

/// Drain whatever is ready right now (after a short settle).
pub async fn drain(events: &mut EventStream, settle: Duration) -> Vec<Event> {
    let mut got = Vec::new();
    while let Ok(Some(ev)) = tokio::time::timeout(settle, events.next()).await {
        got.push(ev);
    }
    got
}

pub fn describe(ev: &Event) -> String {
    match ev.update_kind() {
        Some(k) => format!("{}:{k}", ev.kind),
        None => ev.kind.to_string(),
    }
}

pub fn kinds(events: &[Event]) -> Vec<String> {
    events.iter().map(describe).collect()
}

pub fn of_kind(events: &[Event], kind: EventKind) -> Vec<&Event> {
    events.iter().filter(|e| e.kind == kind).collect()
}

pub fn assert_seq_strictly_increasing(events: &[Event]) {
    for w in events.windows(2) {
        assert!(
            w[0].seq < w[1].seq,
            "seq not increasing: {} then {}",
            w[0].seq,
            w[1].seq
        );
    }
}

/// Whether a process with this pid exists and is not a zombie (other Unix: no /proc, so ps(1),
/// which macOS and the BSDs all have).
#[cfg(all(unix, not(target_os = "linux")))]
pub fn alive(pid: u32) -> bool {
    let out = std::process::Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output();
    match out {
        Ok(out) => {
            let state = String::from_utf8_lossy(&out.stdout);
            let state = state.trim();
            !state.is_empty() && !state.starts_with('Z')
        }
        Err(_) => false,
    }
}

/// Whether a process with this pid exists and is not a zombie.
#[cfg(target_os = "linux")]
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// Windows: whether a process with this pid exists and has not exited (a process handle, ours
/// included, keeps an exited process's pid from being reused).
#[cfg(windows)]
#[allow(unsafe_code)]
pub fn alive(pid: u32) -> bool {
    use windows::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: OpenProcess returns a handle we own; GetExitCodeProcess writes one u32 we own;
    // the handle is closed once, after its last use.
    unsafe {
        let Ok(handle) = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, false, pid) else {
            return false;
        };
        let mut code = 0u32;
        let queried = GetExitCodeProcess(handle, &mut code).is_ok();
        let _ = CloseHandle(handle);
        queried && code == STILL_ACTIVE.0 as u32
    }
}

/// Wait until the pid is gone (bounded).
pub async fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

pub fn agent_pid(events: &[Event]) -> u32 {
    let ready = events
        .iter()
        .find(|e| e.kind == EventKind::AgentReady)
        .expect("agent_ready event");
    ready.data_value()["pid"]
        .as_u64()
        .expect("pid in agent_ready") as u32
}

/// A host decider that picks the agent's `allow_once` option (denies when there is none).
pub fn allow_once() -> PermissionHandler {
    PermissionHandler::Decider(std::sync::Arc::new(|req: PermissionRequest| async move {
        Ok(req
            .option_of_kind("allow_once")
            .map(|o| o.option_id.clone()))
    }))
}

/// Another process (a Python child) holding a lease on a file: `write` (broken by any open,
/// `exec` included) or `read` (broken by an open for writing). A cooperative holder gives it back
/// when the kernel tells it to (as an NFS server or Samba does); the other ignores the break, so
/// the kernel waits out `lease-break-time` (45 s) before taking it away. Either says `break` on
/// its stdout when told.
#[cfg(target_os = "linux")]
pub struct LeaseHolder {
    child: std::process::Child,
    /// The holder's lines, read by a thread of their own: a wait for one is bounded.
    lines: std::sync::mpsc::Receiver<String>,
}

#[cfg(target_os = "linux")]
impl LeaseHolder {
    /// `None` (with a note) where a lease cannot be taken: no python3, or a file system or
    /// setting that refuses leases.
    #[allow(clippy::print_stderr)] // a test that checks nothing says so
    pub fn take(path: &std::path::Path, kind: &str, cooperative: bool) -> Option<LeaseHolder> {
        use std::process::{Command, Stdio};
        let holder = r#"
import fcntl, os, signal, sys
path, kind, cooperative = sys.argv[1], sys.argv[2], sys.argv[3] == "yes"
fd = os.open(path, os.O_WRONLY if kind == "write" else os.O_RDONLY)
setlease = getattr(fcntl, "F_SETLEASE", 1024)
def told(*_):
    if cooperative:
        fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
    print("break", flush=True)
signal.signal(signal.SIGIO, told)
try:
    fcntl.fcntl(fd, setlease, fcntl.F_WRLCK if kind == "write" else fcntl.F_RDLCK)
except OSError as e:
    print("unsupported", e, flush=True)
    sys.exit(0)
print("leased", flush=True)
sys.stdin.read()
"#;
        let spawned = Command::new("python3")
            .args(["-c", holder])
            .arg(path)
            .arg(kind)
            .arg(if cooperative { "yes" } else { "no" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = spawned else {
            eprintln!("skipped: no python3 to hold a lease");
            return None;
        };
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line.trim().to_owned()).is_err() {
                    break;
                }
            }
        });
        let mut holder = LeaseHolder { child, lines };
        let line = holder.line();
        if line != "leased" {
            eprintln!("skipped: no lease here ({line})");
            holder.release();
            return None;
        }
        Some(holder)
    }

    /// The holder's next line (empty if it said nothing for 20 s or ended).
    fn line(&mut self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_default()
    }

    /// Blocks until the holder was told to give its lease back (someone is opening the file);
    /// fails after 20 s without.
    pub fn wait_for_break(&mut self) {
        assert_eq!(self.line(), "break", "the lease holder was never told");
    }

    /// The holder is killed (its lease goes with it).
    pub fn release(self) {}
}

/// Killed, not told by closing its input: a process forked meanwhile that is still in its `exec`
/// holds a copy of that pipe.
#[cfg(target_os = "linux")]
impl Drop for LeaseHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command running this test binary again (the host process of the killed-host tests). Under
/// an emulator the kernel cannot start the binary by itself (qemu-user without binfmt_misc:
/// scripts/test-arm64), `ACP_TEST_SELF_RUNNER` names the emulator and its arguments, separated by
/// whitespace; the emulated host is then that one process, as it would be natively.
pub fn self_command() -> std::process::Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let runner = std::env::var("ACP_TEST_SELF_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(words).arg(exe);
            cmd
        }
        None => std::process::Command::new(exe),
    }
}

/// The name libtest knows a test by in this binary (`module::test`, the crate left off), from
/// the calling module's `module_path!()`: what a test that re-runs this binary passes with
/// `--exact`.
pub fn test_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

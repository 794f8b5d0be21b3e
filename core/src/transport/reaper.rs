//! Unix: a tiny reaper in every process group we create takes the whole group down when the host
//! dies, however it dies (SIGKILL, crash, OOM kill).
//!
//! The host holds the only write end of one "lifeline" pipe for the life of the process (a
//! static, never written, never closed; close-on-exec, so no spawned program inherits it). Each
//! reaper is a `/bin/sh` that joins the group and blocks reading the pipe; it reads end-of-file
//! exactly when the kernel has closed the host's descriptors, i.e. when the host is gone, and
//! then SIGKILLs its own process group (`kill -9 0`). Being a member keeps the group id reserved
//! while it waits, so the signal can never reach a recycled group.
//!
//! On the normal paths nothing changes: the group is killed by the supervisor (leader exited,
//! handle dropped, shutdown ladder), and the reaper dies with it. It ignores SIGTERM, so the
//! ladder's SIGTERM step leaves it in place until the final SIGKILL.
//!
//! The reaper double-forks (the `sh` we start puts it in the background and exits), so it is not
//! our child: the supervisors' waits are unaffected and init reaps it. Limits: an agent's process
//! that leaves the group (`setsid`, `setpgid`) or changes its user escapes the kill; a fork of
//! the host without exec (e.g. Python's `multiprocessing` "fork" method) holds a copy of the
//! write end, and the reaper then fires only once those forks are gone too; without `/bin/sh` we
//! spawn no reaper (a `tracing` warning), and only the group leader is covered (Linux
//! `PR_SET_PDEATHSIG`). The reaper is forked just after the group's leader (on Linux by the
//! spawner thread once the caller has its child): a host SIGKILLed in between leaves what the
//! leader started in that instant.

use std::io::{self, PipeReader, PipeWriter};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Joins the group, keeps the pipe on fd 3 (a background list's stdin would be /dev/null), and
/// waits in the background so that the `sh` we started can exit at once.
const SCRIPT: &str = "# acp-host reaper: SIGKILLs this process group when the host exits
exec 3<&0 </dev/null
(trap '' HUP INT QUIT TERM; read -r _line <&3; kill -9 0) &
";

/// The lifeline: the read end is duplicated into each reaper, the write end is never touched.
static LIFELINE: OnceLock<Option<(PipeReader, PipeWriter)>> = OnceLock::new();

/// Put a reaper into the process group `pgid` (led by the process we just spawned). Best effort:
/// a failure is logged, the process keeps running (covered by the other mechanisms).
pub(super) fn attach(pgid: u32) {
    if let Err(e) = try_attach(pgid) {
        tracing::warn!(pgid, error = %e, "no reaper for this process group: it may outlive a host that is killed");
    }
}

fn try_attach(pgid: u32) -> io::Result<()> {
    let pgid = i32::try_from(pgid).map_err(io::Error::other)?;
    if pgid <= 1 {
        return Err(io::Error::other("not a process group we created"));
    }
    let lifeline = LIFELINE.get_or_init(|| std::io::pipe().ok());
    let Some((reader, _writer)) = lifeline else {
        return Err(io::Error::other("could not create the lifeline pipe"));
    };
    let shell = Command::new("/bin/sh")
        .args(["-c", SCRIPT, "acp-host-reaper"])
        .stdin(Stdio::from(reader.try_clone()?))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_clear()
        .current_dir("/")
        .process_group(pgid)
        .spawn()?;
    // The shell has joined the group once it is spawned (`setpgid` runs before its exec); its
    // exit (a millisecond or two later, once the background reaper is started) is waited for
    // off the caller's path: waiting here was most of the time from spawn to `initialize`.
    let wait = move || {
        let mut shell = shell;
        match shell.wait() {
            Ok(status) if !status.success() => {
                tracing::warn!(pgid, %status, "reaper shell failed: this process group may outlive a host that is killed");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(pgid, error = %e, "reaper shell: wait failed"),
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(wait)),
        Err(_) => wait(),
    }
    Ok(())
}

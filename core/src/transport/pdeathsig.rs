//! Linux: a spawned process gets SIGKILL from the kernel when the host dies, however it dies.
//!
//! This is the crate's only `unsafe` (the lint is `deny` crate-wide and allowed on this module
//! alone). `pre_exec` is unsafe because its closure runs in the child between `fork` and `exec`,
//! where a multi-threaded parent's other threads may have held locks (malloc's among them) at
//! the moment of the fork: only async-signal-safe calls are allowed there.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the process, so
//! every caller must fork from the never-exiting spawner thread (`spawner.rs`).

use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::Signal;
use nix::unistd::{getpid, getppid};

/// Make the kernel SIGKILL the child when its parent (the spawner thread of this process) dies.
pub(super) fn die_with_host(cmd: &mut tokio::process::Command) {
    // Read before the fork: in the child, `getppid()` must still name this process.
    let host = getpid();
    // SAFETY: the closure only makes two system calls, prctl(2) and getppid(2), both
    // async-signal-safe, through nix's thin wrappers (no allocation, no lock: `set_pdeathsig` is
    // one `libc::prctl` call and an errno read, `getppid` one `libc::getppid`). Turning an errno
    // into `io::Error` (`from_raw_os_error`) does not allocate either. It captures one `Pid`
    // (Copy) and touches no other memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            // The host may have died between fork and prctl: the death signal is then never
            // sent, and we have been reparented already. Refuse to exec (std reports the error to
            // the parent, if any, and the child `_exit`s).
            if getppid() != host {
                return Err(std::io::Error::from(nix::errno::Errno::ESRCH));
            }
            Ok(())
        });
    }
}

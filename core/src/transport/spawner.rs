//! Linux: every agent and terminal is forked by a dedicated thread that never exits (one for
//! agents, one for terminals).
//!
//! `PR_SET_PDEATHSIG` (see `pdeathsig.rs`) fires when the thread that forked the child exits.
//! Tokio forks from whatever thread polls the spawning task: a worker, a blocking-pool thread
//! (which exits after being idle), or an embedder's thread inside `block_on` (a C caller's
//! short-lived pthread, a Python thread, a runtime a face shuts down). Any of those exiting would
//! kill a healthy agent. The spawner thread is started lazily, is never joined, and its request
//! channel is held by a static, so it lives exactly as long as the process.
//!
//! A spawn waits for the child's `exec`, which can itself wait: a program file under a lease its
//! holder does not give back holds the `exec` for the kernel's `lease-break-time` (45 s by
//! default). An agent can stage that for the commands it asks to run, so terminals have their own
//! thread: such a terminal delays other terminals, never an agent's spawn or restart.
//!
//! The spawn itself runs inside the caller's runtime (`Handle::enter`), so tokio's child
//! registration (and reaping) belongs to the caller's runtime as before.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, PoisonError, mpsc};

use process_wrap::tokio::ChildWrapper;
use tokio::runtime::Handle;

use super::Spawner;

type Spawned = io::Result<Box<dyn ChildWrapper>>;

struct Job {
    spawn: Box<dyn FnOnce() -> Spawned + Send>,
    /// Run with the child's pid once the caller has its child (off the caller's path).
    then: fn(u32),
    handle: Handle,
    reply: mpsc::SyncSender<Spawned>,
}

static SPAWNERS: [Mutex<Option<mpsc::Sender<Job>>>; 2] = [Mutex::new(None), Mutex::new(None)];

/// Run `spawn` on the spawner thread, inside the caller's runtime; blocks for the fork and exec.
/// Then, on that thread after the caller has the child, `then(pid)` (the reaper's attachment:
/// serialized with the spawns, so it is never overtaken by a later one).
pub(super) fn on_spawner_thread(
    which: Spawner,
    spawn: impl FnOnce() -> Spawned + Send + 'static,
    then: fn(u32),
) -> Spawned {
    let handle = Handle::try_current().map_err(io::Error::other)?;
    let (reply, answer) = mpsc::sync_channel(1);
    let job = Job {
        spawn: Box::new(spawn),
        then,
        handle,
        reply,
    };
    sender(which)?
        .send(job)
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread dropped the request"))?
}

fn sender(which: Spawner) -> io::Result<mpsc::Sender<Job>> {
    let (index, name) = match which {
        Spawner::Agents => (0, "acp-host-spawner"),
        Spawner::Terminals => (1, "acp-host-terminal-spawner"),
    };
    let mut slot = SPAWNERS[index]
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(tx) = slot.as_ref() {
        return Ok(tx.clone());
    }
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || serve(rx))?;
    *slot = Some(tx.clone());
    Ok(tx)
}

/// The thread's body. `recv` never fails: the static keeps a sender for the process's lifetime.
fn serve(rx: mpsc::Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        let Job {
            spawn,
            then,
            handle,
            reply,
        } = job;
        let _runtime = handle.enter();
        // A panic must not end this thread: that would SIGKILL every child it forked.
        let spawned = catch_unwind(AssertUnwindSafe(spawn))
            .unwrap_or_else(|_| Err(io::Error::other("spawning the process panicked")));
        let pid = spawned.as_ref().ok().and_then(|child| child.id());
        // The caller may have gone (its thread unwound); the child is then dropped, killed.
        let _ = reply.send(spawned);
        if let Some(pid) = pid {
            let _ = catch_unwind(AssertUnwindSafe(|| then(pid)));
        }
        drop(_runtime);
        drop(handle);
    }
}

//! Ctrl-C and terminating signals, as a watch channel the commands select on.

use std::io::Write;

use tokio::sync::watch;

use crate::Failure;
use crate::render::eprint_line;

/// Signals seen so far. The first Ctrl-C cancels the turn, the second stops the agent, the third
/// exits at once; SIGTERM/SIGHUP stop the agent (process-group shutdown) and exit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Signals {
    pub(crate) ctrl_c: u32,
    /// Exit status for a terminating signal (128 + number).
    pub(crate) terminate: Option<i32>,
}

pub(crate) fn watch_interrupts() -> watch::Receiver<Signals> {
    let (tx, rx) = watch::channel(Signals::default());
    let tx = std::sync::Arc::new(tx);
    let ctrl_c_tx = tx.clone();
    tokio::spawn(async move {
        let mut count = 0u32;
        while tokio::signal::ctrl_c().await.is_ok() {
            count += 1;
            if count >= 3 {
                let _ = std::io::stdout().flush();
                eprint_line("acph: interrupted");
                std::process::exit(130);
            }
            ctrl_c_tx.send_modify(|s| s.ctrl_c = count);
        }
        // No signal handling available: keep the sender so receivers simply never fire.
        std::future::pending::<()>().await;
    });
    #[cfg(unix)]
    for (kind, code) in [
        (tokio::signal::unix::SignalKind::terminate(), 143),
        (tokio::signal::unix::SignalKind::hangup(), 129),
    ] {
        let tx = tx.clone();
        tokio::spawn(async move {
            if let Ok(mut sig) = tokio::signal::unix::signal(kind) {
                while sig.recv().await.is_some() {
                    tx.send_modify(|s| s.terminate = Some(code));
                }
            }
            std::future::pending::<()>().await;
        });
    }
    rx
}

/// The next signal (never returns when signals are unavailable).
pub(crate) async fn next_interrupt(rx: &mut watch::Receiver<Signals>) -> Signals {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
    *rx.borrow_and_update()
}

pub(crate) fn interrupted(s: Signals) -> Failure {
    Failure::Interrupted(s.terminate.unwrap_or(130))
}

/// Run `fut` unless Ctrl-C is pressed first.
pub(crate) async fn interruptible<T>(
    fut: impl Future<Output = acp_host::Result<T>>,
    rx: &mut watch::Receiver<Signals>,
) -> Result<T, Failure> {
    tokio::select! {
        r = fut => r.map_err(Failure::Core),
        s = next_interrupt(rx) => Err(interrupted(s)),
    }
}

//! The one tokio runtime the core runs on, and the adapter that lets the foreign side's executor
//! (Kotlin coroutines, Swift tasks) poll core futures: every poll, and the drop of an abandoned
//! future (a cancelled coroutine), happens inside the runtime's context, so the core's timers,
//! spawns and drop guards (an abandoned prompt sends `session/cancel`) work on any thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

pub(crate) fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        // Building a runtime fails only when the OS refuses threads; nothing can run then.
        #[allow(clippy::expect_used)]
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("acp-host")
            .build()
            .expect("acp-host: cannot start the tokio runtime")
    })
}

/// A future polled and dropped inside [`rt`]'s context.
pub(crate) struct OnRt<F: Future> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> Future for OnRt<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _enter = rt().enter();
        match self.inner.as_mut() {
            Some(f) => {
                let out = f.as_mut().poll(cx);
                if out.is_ready() {
                    self.inner = None;
                }
                out
            }
            None => Poll::Pending,
        }
    }
}

impl<F: Future> Drop for OnRt<F> {
    fn drop(&mut self) {
        if self.inner.is_some() {
            let _enter = rt().enter();
            self.inner = None;
        }
    }
}

/// Run `f` on the core's runtime context (see [`OnRt`]).
pub(crate) fn on_rt<F: Future>(f: F) -> OnRt<F> {
    OnRt {
        inner: Some(Box::pin(f)),
    }
}

/// Run `f` to completion from a thread outside the runtime (a `Drop` on a foreign thread), or
/// detach it when already inside the runtime (blocking there would stall a worker).
pub(crate) fn finish_or_detach<F>(f: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        rt().spawn(f);
    } else {
        rt().block_on(f);
    }
}

impl<F: Future> std::fmt::Debug for OnRt<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnRt(..)")
    }
}

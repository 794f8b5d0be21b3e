//! Abort handles: the facade registers one per call that takes an `AbortSignal` and fires it
//! when the signal aborts; the call's future is dropped then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use napi::bindgen_prelude::Result;
use napi_derive::napi;
use tokio::sync::watch;

use crate::{core_err, err_json};

pub(crate) fn aborts() -> &'static Mutex<HashMap<u32, watch::Sender<bool>>> {
    static ABORTS: OnceLock<Mutex<HashMap<u32, watch::Sender<bool>>>> = OnceLock::new();
    ABORTS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Register an abort handle for one call; pass its id to the call, fire it with `abortFire`,
/// release it with `abortRelease` when the call settled.
#[napi]
pub fn abort_create() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    let (tx, _) = watch::channel(false);
    if let Ok(mut m) = aborts().lock() {
        m.insert(id, tx);
    }
    id
}

#[napi]
pub fn abort_fire(id: u32) {
    if let Ok(m) = aborts().lock()
        && let Some(tx) = m.get(&id)
    {
        tx.send_replace(true);
    }
}

#[napi]
pub fn abort_release(id: u32) {
    if let Ok(mut m) = aborts().lock() {
        m.remove(&id);
    }
}

/// Run `fut` unless the abort handle `abort` fires first (then the future is dropped, which tells
/// the agent with `$/cancel_request`, and the call fails with `cancelled`).
pub(crate) async fn abortable<T>(
    abort: Option<u32>,
    fut: impl std::future::Future<Output = acp_host::Result<T>>,
) -> Result<T> {
    let rx = abort.and_then(|id| aborts().lock().ok()?.get(&id).map(|tx| tx.subscribe()));
    let Some(mut rx) = rx else {
        return fut.await.map_err(core_err);
    };
    tokio::select! {
        r = fut => r.map_err(core_err),
        _ = rx.wait_for(|a| *a) => Err(err_json("cancelled", "aborted by the caller")),
    }
}

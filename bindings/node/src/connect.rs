//! `host.connect(stream)`: ACP over a byte stream the embedder owns (a socket, a container's or
//! an ssh channel's stdio). The core speaks over one end of a bounded in-memory pipe
//! (`tokio::io::duplex`); the facade pumps the embedder's Node stream into the other end
//! (`push`, which waits while the pipe is full: backpressure) and out of it (`read`, which it
//! calls only when the Node writable has room). So neither direction buffers more than the pipe
//! holds plus one chunk. `end` is the embedder's stream ending (the agent sees EOF: its calls fail
//! with `agent_exited` at once); `close` drops both ends (a stream error, or the embedder's
//! writable gone).

use std::sync::{Arc, Mutex};

use acp_host::Host;
use napi::Env;
use napi::bindgen_prelude::{Buffer, PromiseRaw, Result};
use napi_derive::napi;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::watch;

use crate::{NativeAgent, abortable};

/// Bytes the pipe holds per direction: the most either direction buffers in the addon.
const PIPE_BYTES: usize = 64 * 1024;

/// One connection's JS end.
#[napi]
#[derive(Debug)]
pub struct NativeConnection {
    host: Host,
    /// The core's end, taken by `handshake`.
    core_side: Mutex<Option<DuplexStream>>,
    /// What the embedder's stream read goes in here.
    inbound: Arc<tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>>,
    /// What the core writes comes out here.
    outbound: Arc<tokio::sync::Mutex<Option<ReadHalf<DuplexStream>>>>,
    closed: watch::Sender<bool>,
}

impl NativeConnection {
    pub(crate) fn new(host: Host) -> Self {
        let (core_side, js_side) = tokio::io::duplex(PIPE_BYTES);
        let (out, inb) = tokio::io::split(js_side);
        NativeConnection {
            host,
            core_side: Mutex::new(Some(core_side)),
            inbound: Arc::new(tokio::sync::Mutex::new(Some(inb))),
            outbound: Arc::new(tokio::sync::Mutex::new(Some(out))),
            closed: watch::channel(false).0,
        }
    }
}

#[napi]
impl NativeConnection {
    /// Initialize the agent on the other end (`Host::connect`); once.
    #[napi]
    pub async fn handshake(&self, abort: Option<u32>) -> Result<NativeAgent> {
        let side = self
            .core_side
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .ok_or_else(|| crate::invalid("this connection was used already"))?;
        let (r, w) = tokio::io::split(side);
        let host = self.host.clone();
        let agent = abortable(abort, async move { host.connect(r, w).await }).await?;
        Ok(NativeAgent {
            agent,
            supervised: false,
        })
    }

    /// Bytes the embedder's stream read, for the agent. Resolves once they are in the pipe
    /// (waits while it is full); `false` when the agent's end is gone (stop reading).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn push<'env>(&self, env: &'env Env, chunk: Buffer) -> Result<PromiseRaw<'env, bool>> {
        let bytes = chunk.to_vec();
        let inbound = self.inbound.clone();
        let mut closed = self.closed.subscribe();
        env.spawn_future(async move {
            let mut guard = inbound.lock().await;
            let Some(w) = guard.as_mut() else {
                return Ok(false);
            };
            tokio::select! {
                r = w.write_all(&bytes) => Ok(r.is_ok()),
                _ = closed.wait_for(|c| *c) => Ok(false),
            }
        })
    }

    /// The embedder's stream ended: the agent reads EOF.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn end<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let inbound = self.inbound.clone();
        env.spawn_future(async move {
            if let Some(mut w) = inbound.lock().await.take() {
                let _ = w.shutdown().await;
            }
            Ok(())
        })
    }

    /// The next bytes the agent's side wrote (at most 64 KiB), or `null` once it closed.
    #[napi(ts_return_type = "Promise<Buffer | null>")]
    pub fn read<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<Buffer>>> {
        let outbound = self.outbound.clone();
        let mut closed = self.closed.subscribe();
        env.spawn_future(async move {
            let mut guard = outbound.lock().await;
            let Some(r) = guard.as_mut() else {
                return Ok(None);
            };
            let mut buf = vec![0u8; PIPE_BYTES];
            let n = tokio::select! {
                n = r.read(&mut buf) => n.unwrap_or(0),
                _ = closed.wait_for(|c| *c) => 0,
            };
            if n == 0 {
                guard.take();
                return Ok(None);
            }
            buf.truncate(n);
            Ok(Some(Buffer::from(buf)))
        })
    }

    /// Drop both ends (the embedder's stream failed): the agent reads EOF and its writes fail.
    #[napi]
    pub fn close(&self) {
        self.closed.send_replace(true);
        let (inbound, outbound) = (self.inbound.clone(), self.outbound.clone());
        napi::bindgen_prelude::spawn(async move {
            inbound.lock().await.take();
            outbound.lock().await.take();
        });
    }
}

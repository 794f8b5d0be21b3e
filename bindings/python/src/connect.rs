//! `connect`: ACP over a byte stream the embedder already has (a socket, an SSH channel, a
//! container's stdio), through the core's `Host::connect`.
//!
//! The core reads and writes one end of an in-memory pipe ([`Bridge`]); the package moves bytes
//! between the other end and the embedder's stream (threads for sockets and file objects, tasks
//! for asyncio streams). Each direction holds at most [`BRIDGE_BYTES`]: `feed` waits while the
//! core has not read what came before (so the embedder's stream is not read any faster than the
//! agent's messages are taken: backpressure, no unbounded buffer), and the core's writes wait
//! while `drain` has not taken theirs. One mechanism for every kind of stream, in safe code: a
//! socket is the package's `dup` of it, read and written with its own methods.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::Mutex as AsyncMutex;

use crate::call;

/// Bytes each direction of a bridge holds.
pub(crate) const BRIDGE_BYTES: usize = 64 * 1024;

/// The core's ends of a bridge: what it reads (the agent's bytes) and where it writes.
pub(crate) type CoreEnds = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// Bytes for Python (`bytes`, not a list of ints).
pub(crate) struct Bytes(Vec<u8>);

impl<'py> IntoPyObject<'py> for Bytes {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = std::convert::Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(PyBytes::new(py, &self.0))
    }
}

fn gone() -> acp_host::Error {
    acp_host::Error::Closed("the agent's connection is closed".into())
}

/// One in-memory pipe between the embedder's stream (the package's side) and the core.
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct Bridge {
    /// The agent's bytes, written by the package (`None` once it said EOF).
    feed: Arc<AsyncMutex<Option<WriteHalf<DuplexStream>>>>,
    /// The host's bytes for the agent, read by the package.
    drain: Arc<AsyncMutex<ReadHalf<DuplexStream>>>,
    /// Taken by `NativeHost.connect_bridge`.
    core: Mutex<Option<CoreEnds>>,
}

impl Bridge {
    /// The core's ends (once: a bridge carries one connection).
    pub(crate) fn take_core(&self) -> Option<CoreEnds> {
        self.core.lock().ok().and_then(|mut c| c.take())
    }
}

#[pymethods]
impl Bridge {
    #[new]
    fn new() -> Bridge {
        let (core, ours) = tokio::io::duplex(BRIDGE_BYTES);
        let (core_r, core_w) = tokio::io::split(core);
        let (our_r, our_w) = tokio::io::split(ours);
        Bridge {
            feed: Arc::new(AsyncMutex::new(Some(our_w))),
            drain: Arc::new(AsyncMutex::new(our_r)),
            core: Mutex::new(Some((core_r, core_w))),
        }
    }

    /// Hand the agent's bytes to the host; waits while the host has not read what came before.
    /// Fails with `closed` once the connection is gone.
    #[pyo3(signature = (data, *, aio=false))]
    fn feed(&self, py: Python<'_>, data: Vec<u8>, aio: bool) -> PyResult<Py<PyAny>> {
        let feed = self.feed.clone();
        call(py, aio, async move {
            let mut w = feed.lock().await;
            let w = w.as_mut().ok_or_else(gone)?;
            w.write_all(&data).await.map_err(|_| gone())?;
            w.flush().await.map_err(|_| gone())
        })
    }

    /// The agent's stream ended (EOF, or an error reading it): the host sees the agent gone.
    #[pyo3(signature = (*, aio=false))]
    fn feed_eof(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        let feed = self.feed.clone();
        call(py, aio, async move {
            if let Some(mut w) = feed.lock().await.take() {
                let _ = w.shutdown().await;
            }
            Ok::<(), acp_host::Error>(())
        })
    }

    /// Up to `limit` bytes the host wrote for the agent (waits for some); `b""` once the host
    /// closed the connection (the agent was shut down, or the host closed).
    #[pyo3(signature = (limit=BRIDGE_BYTES, *, aio=false))]
    fn drain(&self, py: Python<'_>, limit: usize, aio: bool) -> PyResult<Py<PyAny>> {
        let drain = self.drain.clone();
        let limit = limit.clamp(1, BRIDGE_BYTES);
        call(py, aio, async move {
            let mut buf = vec![0u8; limit];
            let n = drain.lock().await.read(&mut buf).await.unwrap_or(0);
            buf.truncate(n);
            Ok::<Bytes, acp_host::Error>(Bytes(buf))
        })
    }
}

//! `Host.connect`: ACP over a byte stream the embedder owns (a socket, a container's stdio, an
//! SSH channel), given as a `ByteStream` foreign trait with blocking methods. Two threads of
//! ours call it — one reading, one writing — and bridge it into the core's async reader and
//! writer through small in-memory pipes, so a slow side is felt as backpressure (at most
//! `PIPE_BYTES` plus one chunk is in flight each way) and nothing is buffered without bound.
//! EOF and errors cross both ways: the peer's EOF or a read error ends the core's reader (the
//! agent is gone: calls in flight fail `agent_exited`) and closes the stream; a write error or
//! the core closing the connection closes it too (`close_stream()`, once, which must also
//! unblock a `read` in progress).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use crate::handlers::HandlerError;
use crate::runtime::rt;

/// Bytes each pipe holds between the embedder's stream and the core.
const PIPE_BYTES: usize = 64 * 1024;
/// The most one `read` asks for.
const CHUNK: u32 = 64 * 1024;

/// A bidirectional byte stream the embedder provides for `Host.connect`. Its methods are called
/// on threads of the library's own (never on the caller's), and may block. Kotlin:
/// `host.connect(input, output)` or `host.connect(socket)` build one.
#[uniffi::export(with_foreign)]
pub trait ByteStream: Send + Sync {
    /// Block until at least one byte is available and return up to `max` bytes; an empty
    /// array is the end of the stream. What it throws ends the connection like an EOF.
    fn read(&self, max: u32) -> Result<Vec<u8>, HandlerError>;
    /// Write all of `data` and flush it, blocking while the peer is slow. What it throws
    /// ends the connection.
    fn write(&self, data: Vec<u8>) -> Result<(), HandlerError>;
    /// Close both directions (the connection is over). Must make a blocked `read` return or
    /// throw. Called once; what it throws is ignored.
    fn close_stream(&self) -> Result<(), HandlerError>;
}

/// Start the two pump threads; the core's reader and writer for `Host::connect`.
pub(crate) fn bridge(stream: Arc<dyn ByteStream>) -> std::io::Result<(DuplexStream, DuplexStream)> {
    let (core_reader, mut feed) = tokio::io::duplex(PIPE_BYTES);
    let (core_writer, mut drain) = tokio::io::duplex(PIPE_BYTES);
    let closer = Arc::new(Closer {
        stream: stream.clone(),
        done: AtomicBool::new(false),
    });
    let (s, close_r, close_w) = (stream.clone(), closer.clone(), closer);
    std::thread::Builder::new()
        .name("acp-host-connect-read".into())
        .spawn(move || {
            // Ends (dropping `feed`: EOF for the core) at the peer's EOF, on a read error, or
            // when the core no longer reads.
            while let Ok(bytes) = s.read(CHUNK) {
                if bytes.is_empty() || rt().block_on(feed.write_all(&bytes)).is_err() {
                    break;
                }
            }
            let _ = rt().block_on(feed.shutdown());
            // The peer is gone: the connection is over both ways.
            close_r.close();
        })?;
    std::thread::Builder::new()
        .name("acp-host-connect-write".into())
        .spawn(move || {
            let mut buf = vec![0u8; PIPE_BYTES];
            loop {
                match rt().block_on(drain.read(&mut buf)) {
                    Ok(n) if n > 0 => {
                        if stream.write(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    // The core closed its writer: the connection is over.
                    _ => break,
                }
            }
            // Dropping `drain` fails the core's next write; `close_stream` ends the reader thread's
            // blocked `read`.
            drop(drain);
            close_w.close();
        })?;
    Ok((core_reader, core_writer))
}

/// `close_stream` called once, by whichever side ends first.
struct Closer {
    stream: Arc<dyn ByteStream>,
    done: AtomicBool,
}

impl Closer {
    fn close(&self) {
        if !self.done.swap(true, Ordering::SeqCst) {
            let _ = self.stream.close_stream();
        }
    }
}

//! The byte stream of `acph_host_connect`: descriptors the embedder opened (a socket, a pipe
//! pair to a container's stdio, an SSH channel's pipes) turned into the reader and writer the
//! core's `Host::connect` takes. The only module that adopts raw descriptors/handles.
//!
//! Ownership passes here once [`adopt`] succeeds: the descriptors are closed when the
//! connection ends (the agent shut down or released, the peer gone, the host freed). Before that
//! (a bad descriptor), they are left exactly as they were.
//!
//! - Unix: file descriptors, made non-blocking and polled by the runtime (`AsyncFd`). One
//!   descriptor for both directions (a socket) is registered once and shared by both halves;
//!   closing the writing half of a socket sends EOF (`shutdown(SHUT_WR)`).
//! - Windows: a `SOCKET` is read and written with blocking `recv`/`send`, a `HANDLE` with blocking
//!   `ReadFile`/`WriteFile`, each direction on a library thread of its own, bridged to the runtime
//!   through an in-memory pipe.

use tokio::io::{AsyncRead, AsyncWrite};

use crate::status::Failure;

/// The two halves handed to `Host::connect`.
pub(crate) type Halves = (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
);

fn bad(what: &str, why: impl std::fmt::Display) -> Failure {
    Failure::invalid(format!("{what}: {why}"))
}

#[cfg(unix)]
mod imp {
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, ready};

    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use tokio::io::unix::AsyncFd;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::runtime::Handle;

    use super::{Halves, bad};
    use crate::status::Failure;

    /// One direction (or both) of an adopted descriptor.
    #[derive(Debug, Clone)]
    struct Half(Arc<AsyncFd<OwnedFd>>);

    /// `raw` as an open descriptor of this process, with its status flags.
    fn check(raw: isize, what: &str) -> Result<(RawFd, OFlag), Failure> {
        let fd = RawFd::try_from(raw)
            .ok()
            .filter(|fd| *fd >= 0)
            .ok_or_else(|| bad(what, format!("{raw} is not a file descriptor")))?;
        // SAFETY: only borrowed for the fcntl; a descriptor that is not open is EBADF, not UB.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let flags = fcntl(borrowed, FcntlArg::F_GETFL)
            .map_err(|e| bad(what, format!("descriptor {fd} is not open ({e})")))?;
        Ok((fd, OFlag::from_bits_truncate(flags)))
    }

    /// Give a descriptor back to the caller as it was (its old status flags).
    fn give_back(owned: OwnedFd, flags: OFlag) {
        let _ = fcntl(&owned, FcntlArg::F_SETFL(flags));
        let _ = owned.into_raw_fd();
    }

    /// Make `fd` non-blocking and register it with the runtime; on failure it is left as it was
    /// and still the caller's.
    fn register(fd: RawFd, flags: OFlag, what: &str) -> Result<Half, Failure> {
        // SAFETY: checked open; the caller hands it over (acph_host_connect's contract). Every
        // failure below gives it back without closing it.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        if let Err(e) = fcntl(&owned, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)) {
            give_back(owned, flags);
            return Err(bad(
                what,
                format!("cannot make descriptor {fd} non-blocking ({e})"),
            ));
        }
        // SAFETY: an `OwnedFd` keeps its descriptor open and the same until it is dropped.
        match unsafe { AsyncFd::register(owned) } {
            Ok(a) => Ok(Half(Arc::new(a))),
            Err(e) => {
                let (owned, e) = e.into_parts();
                give_back(owned, flags);
                Err(bad(
                    what,
                    format!("descriptor {fd} cannot be polled (a regular file?): {e}"),
                ))
            }
        }
    }

    pub(super) fn adopt(rt: &Handle, read: isize, write: isize) -> Result<Halves, Failure> {
        let (rfd, rflags) = check(read, "read_fd")?;
        let (wfd, wflags) = check(write, "write_fd")?;
        if rflags & OFlag::O_ACCMODE == OFlag::O_WRONLY {
            return Err(bad(
                "read_fd",
                format!("descriptor {rfd} is open for writing only"),
            ));
        }
        if wflags & OFlag::O_ACCMODE == OFlag::O_RDONLY {
            return Err(bad(
                "write_fd",
                format!("descriptor {wfd} is open for reading only"),
            ));
        }
        // The reactor registration needs the runtime's context.
        let _enter = rt.enter();
        let reader = register(rfd, rflags, "read_fd")?;
        let writer = if wfd == rfd {
            reader.clone()
        } else {
            match register(wfd, wflags, "write_fd") {
                Ok(w) => w,
                Err(e) => {
                    // Nothing may be taken on failure: the read descriptor goes back too.
                    if let Ok(a) = Arc::try_unwrap(reader.0) {
                        give_back(a.into_inner(), rflags);
                    }
                    return Err(e);
                }
            }
        };
        Ok((Box::new(reader), Box::new(writer)))
    }

    fn is_socket(fd: BorrowedFd<'_>) -> bool {
        nix::sys::stat::fstat(fd)
            .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFSOCK)
    }

    impl AsyncRead for Half {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            loop {
                let mut guard = ready!(self.0.poll_read_ready(cx))?;
                let unfilled = buf.initialize_unfilled();
                match guard.try_io(|fd| nix::unistd::read(fd, unfilled).map_err(io::Error::from)) {
                    Ok(Ok(n)) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Ok(Err(e)) => return Poll::Ready(Err(e)),
                    Err(_would_block) => continue,
                }
            }
        }
    }

    impl AsyncWrite for Half {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            loop {
                let mut guard = ready!(self.0.poll_write_ready(cx))?;
                match guard.try_io(|fd| nix::unistd::write(fd, data).map_err(io::Error::from)) {
                    Ok(r) => return Poll::Ready(r),
                    Err(_would_block) => continue,
                }
            }
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        /// The host is done writing: a socket's peer sees EOF even while the reading half (the
        /// same descriptor) stays open; any other descriptor is closed when its half is dropped.
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            let fd = self.0.get_ref().as_fd();
            if is_socket(fd) {
                // SAFETY: a plain syscall on a descriptor this half owns.
                let _ = unsafe { nix::libc::shutdown(fd.as_raw_fd(), nix::libc::SHUT_WR) };
            }
            Poll::Ready(Ok(()))
        }
    }
}

#[cfg(windows)]
mod imp {
    use std::io::{Read, Write};
    use std::mem::ManuallyDrop;
    use std::os::windows::io::{FromRawHandle, FromRawSocket, RawHandle, RawSocket};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::runtime::Handle;

    use super::{Halves, bad};
    use crate::status::Failure;

    /// A `SOCKET`, or a `HANDLE` of anything `ReadFile`/`WriteFile` work on.
    enum Io {
        Socket(std::net::TcpStream),
        File(std::fs::File),
    }

    impl Io {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self {
                Io::Socket(s) => s.read(buf),
                Io::File(f) => f.read(buf),
            }
        }
        fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
            match self {
                Io::Socket(s) => s.write_all(buf),
                Io::File(f) => f.write_all(buf),
            }
        }
        fn close_write(&mut self) {
            if let Io::Socket(s) = self {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
        }
    }

    /// A socket answers `SO_ERROR`; a handle that is not a socket does not (WSAENOTSOCK).
    fn is_socket(raw: u64) -> bool {
        // SAFETY: only queried; ManuallyDrop keeps it from being closed here.
        let s =
            ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_socket(raw as RawSocket) });
        s.take_error().is_ok()
    }

    fn check(raw: isize, what: &str) -> Result<u64, Failure> {
        // INVALID_HANDLE_VALUE (-1), NULL and INVALID_SOCKET (~0) name nothing.
        if raw == 0 || raw == -1 {
            return Err(bad(what, format!("{raw} is not a handle or socket")));
        }
        Ok(raw as u64)
    }

    fn open(raw: u64, what: &str) -> Result<Io, Failure> {
        if is_socket(raw) {
            // SAFETY: a socket of this process, handed over by the caller.
            return Ok(Io::Socket(unsafe {
                std::net::TcpStream::from_raw_socket(raw as RawSocket)
            }));
        }
        let mut flags = 0u32;
        // SAFETY: a query on a value the caller says is a handle; a bad one is an error.
        let ok = unsafe {
            windows::Win32::Foundation::GetHandleInformation(
                windows::Win32::Foundation::HANDLE(raw as isize as *mut std::ffi::c_void),
                &mut flags,
            )
        };
        if ok.is_err() {
            return Err(bad(
                what,
                format!("{raw:#x} is not an open handle or socket"),
            ));
        }
        // SAFETY: an open handle of this process, handed over by the caller.
        Ok(Io::File(unsafe {
            std::fs::File::from_raw_handle(raw as RawHandle)
        }))
    }

    fn dup(io: &Io) -> std::io::Result<Io> {
        match io {
            Io::Socket(s) => s.try_clone().map(Io::Socket),
            Io::File(f) => f.try_clone().map(Io::File),
        }
    }

    pub(super) fn adopt(rt: &Handle, read: isize, write: isize) -> Result<Halves, Failure> {
        let r = check(read, "read_fd")?;
        let w = check(write, "write_fd")?;
        // Validate both before taking either: a failure leaves both with the caller.
        let r_sock = is_socket(r);
        let w_sock = is_socket(w);
        for (raw, sock, what) in [(r, r_sock, "read_fd"), (w, w_sock, "write_fd")] {
            if !sock {
                let mut flags = 0u32;
                // SAFETY: a query; a bad value is an error.
                let ok = unsafe {
                    windows::Win32::Foundation::GetHandleInformation(
                        windows::Win32::Foundation::HANDLE(raw as isize as *mut std::ffi::c_void),
                        &mut flags,
                    )
                };
                if ok.is_err() {
                    return Err(bad(
                        what,
                        format!("{raw:#x} is not an open handle or socket"),
                    ));
                }
            }
        }
        let mut reader = open(r, "read_fd")?;
        let mut writer = if w == r {
            dup(&reader).map_err(|e| bad("write_fd", e))?
        } else {
            open(w, "write_fd")?
        };
        let rt = rt.clone();
        let (ours_r, mut theirs_r) = tokio::io::duplex(64 * 1024);
        let (mut theirs_w, ours_w) = tokio::io::duplex(64 * 1024);
        let h = rt.clone();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map(|_| ())
                .map_err(|e| bad("connect", format!("cannot start a thread: {e}")))
        };
        spawn(
            "acph-conn-read",
            Box::new(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if h.block_on(theirs_r.write_all(&buf[..n])).is_err() {
                        break;
                    }
                }
                let _ = h.block_on(theirs_r.shutdown());
            }),
        )?;
        spawn(
            "acph-conn-write",
            Box::new(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match rt.block_on(theirs_w.read(&mut buf)) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if writer.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                writer.close_write();
            }),
        )?;
        Ok((Box::new(ours_r), Box::new(ours_w)))
    }
}

#[cfg(not(any(unix, windows)))]
mod imp {
    use super::{Halves, bad};
    use crate::status::Failure;

    pub(super) fn adopt(_: &tokio::runtime::Handle, _: isize, _: isize) -> Result<Halves, Failure> {
        Err(bad("connect", "not supported on this platform"))
    }
}

/// Take `read`/`write` over (the same value for a duplex socket). On error nothing was taken.
pub(crate) fn adopt(
    rt: &tokio::runtime::Handle,
    read: isize,
    write: isize,
) -> Result<Halves, Failure> {
    imp::adopt(rt, read, write)
}

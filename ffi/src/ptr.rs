//! Every raw pointer of the C ABI is read, written, cast, allocated or freed here, and every C
//! function pointer is called from here. The exported functions (`src/api/`) reach the argument
//! helpers through the one-line argument macros of `src/lib.rs` (`try_host!`, `try_str!`,
//! `try_out!`, ...), whose one safety comment rests on the contract in every export's `# Safety`
//! section.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ffi::{c_char, c_int, c_void};
use std::mem::{align_of, size_of};

use crate::event::acph_event;
use crate::host::acph_host;
use crate::log::acph_log_level;
use crate::registry::{FetchSink, acph_fetch_sink, acph_registry};
use crate::status::{Failure, acph_error, acph_status};

// ----- callbacks ------------------------------------------------------------------------------

/// Wake-up callback: `user_data` as given to `acph_host_set_wakeup`.
#[allow(non_camel_case_types)]
pub type acph_wakeup_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Finalizer for a callback's `user_data`: called exactly once, when the library no longer needs
/// `user_data` (the callback was replaced or the host freed, and no invocation is in flight).
#[allow(non_camel_case_types)]
pub type acph_free_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Service callback (fs/terminal requests routed to the embedder): `method` is the ACP method
/// (`"fs/read_text_file"`, `"terminal/create"`, ...), `params_json` its parameters as JSON. Both
/// strings are NUL-terminated and borrowed for the duration of the call only. Answer with
/// `acph_service_respond` or `acph_service_fail`, now or later, from any thread.
#[allow(non_camel_case_types)]
pub type acph_service_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request_id: u64,
        method: *const c_char,
        params_json: *const c_char,
        params_len: usize,
    ),
>;

/// Fetch callback of `acph_registry_install` (the embedder's download of an archive URL that is
/// not `file://` or a local path): `url` is NUL-terminated (`url_len` bytes before the NUL) and
/// borrowed for the call only; write the bytes with `acph_fetch_sink_write(sink, ...)` and return
/// 0 on success, anything else on failure (`acph_fetch_sink_fail` may say why first). `sink` is
/// valid until the callback returns.
#[allow(non_camel_case_types)]
pub type acph_fetch_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        url: *const c_char,
        url_len: usize,
        sink: *mut acph_fetch_sink,
    ) -> c_int,
>;

/// Log callback (`acph_host_new_with_log`): one record of the host's log, `record_json` its JSON
/// `{"level", "target", "message", "agent", "session", "at"}` (NUL-terminated, `record_len`
/// bytes before the NUL, borrowed for the call only), `level` its level as a number.
#[allow(non_camel_case_types)]
pub type acph_log_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: acph_log_level,
        record_json: *const c_char,
        record_len: usize,
    ),
>;

/// Progress callback of `acph_registry_install`: one step of the install, `progress_json` its
/// JSON `{"phase": "download"|"extract", "stage": "started"|"done"|"failed", "elapsedMs",
/// "bytes", "message"}` (NUL-terminated, `progress_len` bytes before the NUL, borrowed for the
/// call only).
#[allow(non_camel_case_types)]
pub type acph_progress_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, progress_json: *const c_char, progress_len: usize),
>;

/// The two callbacks of `acph_registry_install`, which share one `user_data` and finalizer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InstallHooks {
    pub fetch: acph_fetch_fn,
    pub progress: acph_progress_fn,
}

/// A C callback with its `user_data` and finalizer. The finalizer runs when the last reference is
/// dropped, so never while an invocation is in flight.
#[derive(Debug)]
pub(crate) struct Callback<F> {
    f: F,
    user_data: *mut c_void,
    finalizer: acph_free_fn,
}

// SAFETY: the embedder promises (docs/FFI.md, `acph_host_set_wakeup`,
// `acph_host_set_service_handler`) that the callback and `user_data` may be used from any thread;
// the library never dereferences `user_data` itself.
unsafe impl<F: Send> Send for Callback<F> {}
// SAFETY: as above; `&Callback` only allows calling the callback.
unsafe impl<F: Sync> Sync for Callback<F> {}

impl<F> Callback<F> {
    /// # Safety
    /// `f` and `finalizer` must be NULL or valid functions, callable from any thread with
    /// `user_data`, until the finalizer has run.
    pub(crate) unsafe fn new(f: F, user_data: *mut c_void, finalizer: acph_free_fn) -> Self {
        Callback {
            f,
            user_data,
            finalizer,
        }
    }
}

impl<F> Drop for Callback<F> {
    fn drop(&mut self) {
        if let Some(fin) = self.finalizer {
            // SAFETY: contract of `Callback::new`; runs once, after the last invocation.
            unsafe { fin(self.user_data) }
        }
    }
}

impl Callback<acph_wakeup_fn> {
    pub(crate) fn wake(&self) {
        if let Some(f) = self.f {
            // SAFETY: contract of `Callback::new`.
            unsafe { f(self.user_data) }
        }
    }
}

impl Callback<acph_service_fn> {
    /// `method` and `params` must end with a NUL byte (checked).
    pub(crate) fn serve(&self, request_id: u64, method: &[u8], params: &[u8]) {
        let (Some(f), Some(b'\0'), Some(b'\0')) = (self.f, method.last(), params.last()) else {
            return;
        };
        // SAFETY: contract of `Callback::new`; both buffers are NUL-terminated and outlive the
        // call.
        unsafe {
            f(
                self.user_data,
                request_id,
                method.as_ptr().cast(),
                params.as_ptr().cast(),
                params.len() - 1,
            )
        }
    }
}

impl Callback<acph_log_fn> {
    /// `json` must end with a NUL byte (checked).
    pub(crate) fn log(&self, level: acph_log_level, json: &[u8]) {
        let (Some(f), Some(b'\0')) = (self.f, json.last()) else {
            return;
        };
        // SAFETY: contract of `Callback::new`; `json` is NUL-terminated and outlives the call.
        unsafe { f(self.user_data, level, json.as_ptr().cast(), json.len() - 1) }
    }
}

impl Callback<InstallHooks> {
    pub(crate) fn is_set(&self) -> bool {
        self.f.fetch.is_some()
    }

    /// Report a step to the progress callback (if any); `json` must end with a NUL byte
    /// (checked).
    pub(crate) fn progress(&self, json: &[u8]) {
        let (Some(f), Some(b'\0')) = (self.f.progress, json.last()) else {
            return;
        };
        // SAFETY: contract of `Callback::new`; `json` is NUL-terminated and outlives the call.
        unsafe { f(self.user_data, json.as_ptr().cast(), json.len() - 1) }
    }

    /// Call the fetch callback; `url` must end with a NUL byte (checked: `None` when it does not,
    /// or when no callback is set).
    pub(crate) fn fetch(&self, url: &[u8], sink: &FetchSink<'_>) -> Option<c_int> {
        let (Some(f), Some(b'\0')) = (self.f.fetch, url.last()) else {
            return None;
        };
        // Only ever read back as `&FetchSink` (see `fetch_sink`); the `mut` is C's view.
        let sink = std::ptr::from_ref(sink)
            .cast_mut()
            .cast::<acph_fetch_sink>();
        // SAFETY: contract of `Callback::new`; `url` is NUL-terminated and `sink` valid for the
        // duration of the call.
        Some(unsafe { f(self.user_data, url.as_ptr().cast(), url.len() - 1, sink) })
    }
}

// ----- arguments in ---------------------------------------------------------------------------

/// A byte buffer argument `(ptr, len)`; NULL is accepted for an empty buffer.
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes that stay unchanged during the call.
pub(crate) unsafe fn bytes_in<'a>(
    p: *const u8,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Failure::null(what));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "`{what}`: length {len} is too large"
        )));
    }
    // SAFETY: caller contract; non-NULL and `len` bytes readable.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A required UTF-8 string argument `(ptr, len)`.
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes that stay unchanged during the call.
pub(crate) unsafe fn str_in<'a>(
    p: *const c_char,
    len: usize,
    what: &str,
) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::null(what));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "`{what}`: length {len} is too large"
        )));
    }
    // SAFETY: caller contract; non-NULL and `len` bytes readable.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| {
        Failure::new(
            acph_status::ACPH_STATUS_INVALID_UTF8,
            format!(
                "`{what}` is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// An optional UTF-8 string argument: NULL means absent.
///
/// # Safety
/// As [`str_in`].
pub(crate) unsafe fn opt_str_in<'a>(
    p: *const c_char,
    len: usize,
    what: &str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller contract.
    unsafe { str_in(p, len, what) }.map(Some)
}

/// The host behind a handle.
///
/// # Safety
/// `p` is NULL or a pointer returned by `acph_host_new` that was not freed yet.
pub(crate) unsafe fn host<'a>(p: *const acph_host) -> Result<&'a acph_host, Failure> {
    // SAFETY: caller contract.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null("host"))
}

pub(crate) fn host_into_raw(host: Box<acph_host>) -> *mut acph_host {
    Box::into_raw(host)
}

/// # Safety
/// `p` is NULL or a pointer returned by `acph_host_new` that was not freed yet; it is invalid
/// afterwards.
pub(crate) unsafe fn host_from_raw(p: *mut acph_host) -> Option<Box<acph_host>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: caller contract: `p` came from `Box::into_raw` in `host_into_raw`.
    Some(unsafe { Box::from_raw(p) })
}

/// The registry behind a handle.
///
/// # Safety
/// `p` is NULL or a pointer written by `acph_registry_from_*` that was not freed yet.
pub(crate) unsafe fn registry<'a>(p: *const acph_registry) -> Result<&'a acph_registry, Failure> {
    // SAFETY: caller contract.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null("registry"))
}

pub(crate) fn registry_into_raw(registry: Box<acph_registry>) -> *mut acph_registry {
    Box::into_raw(registry)
}

/// # Safety
/// `p` is NULL or a pointer written by `acph_registry_from_*` that was not freed yet; it is
/// invalid afterwards.
pub(crate) unsafe fn registry_free(p: *mut acph_registry) {
    if !p.is_null() {
        // SAFETY: caller contract: `p` came from `Box::into_raw` in `registry_into_raw`.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// The sink behind an `acph_fetch_sink *` handed to a fetch callback.
///
/// # Safety
/// `p` is NULL or the `sink` argument of a fetch callback that has not returned yet.
pub(crate) unsafe fn fetch_sink<'a>(p: *mut acph_fetch_sink) -> Result<&'a FetchSink<'a>, Failure> {
    // SAFETY: caller contract: `Callback::fetch` made `p` from a `&FetchSink` that outlives the
    // callback. Shared access only (the sink locks its own state), so writes from another thread
    // while the callback runs are serialised.
    unsafe { p.cast::<FetchSink<'a>>().as_ref() }.ok_or_else(|| Failure::null("sink"))
}

// ----- out-params -----------------------------------------------------------------------------

/// A checked, non-NULL out-parameter. Written at most once, and only on success.
#[derive(Debug)]
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    pub(crate) fn write(self, value: T) {
        // SAFETY: non-NULL (checked in `out`), writable (contract of `out`).
        unsafe { self.0.write(value) }
    }
}

/// A required out-parameter.
///
/// # Safety
/// `p` is NULL or valid for writing a `T` until the call returns.
pub(crate) unsafe fn out<T>(p: *mut T, what: &str) -> Result<Out<T>, Failure> {
    if p.is_null() {
        Err(Failure::null(what))
    } else {
        Ok(Out(p))
    }
}

/// An optional out-parameter (NULL: the caller does not want the value).
///
/// # Safety
/// As [`out`].
pub(crate) unsafe fn opt_out<T>(p: *mut T) -> Option<Out<T>> {
    (!p.is_null()).then_some(Out(p))
}

/// Write a new error object to `error_out` (if it is not NULL).
///
/// # Safety
/// `error_out` is NULL or valid for writing a pointer.
pub(crate) unsafe fn write_error(error_out: *mut *mut acph_error, failure: &Failure) {
    if error_out.is_null() {
        return;
    }
    let raw = error_into_raw(failure);
    // SAFETY: caller contract.
    unsafe { error_out.write(raw) }
}

// ----- owned strings --------------------------------------------------------------------------

const HEADER: usize = size_of::<usize>();

fn string_layout(len: usize) -> Layout {
    match Layout::from_size_align(HEADER + len + 1, align_of::<usize>()) {
        Ok(l) => l,
        Err(_) => handle_alloc_error(Layout::new::<usize>()),
    }
}

/// An owned, NUL-terminated copy of `bytes` for C, freed with [`string_free`]. The length is kept
/// in a header in front of the text, so strings with interior NULs are freed correctly.
pub(crate) fn string_into_raw(bytes: &[u8]) -> *mut c_char {
    let layout = string_layout(bytes.len());
    // SAFETY: the layout has a non-zero size.
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: `base` is a fresh allocation of HEADER + len + 1 bytes, aligned for usize.
    unsafe {
        base.cast::<usize>().write(bytes.len());
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(HEADER), bytes.len());
        base.add(HEADER + bytes.len()).write(0);
        base.add(HEADER).cast()
    }
}

/// # Safety
/// `p` is NULL or a string returned by this library (an `acph_string_free` contract) that was
/// not freed yet.
pub(crate) unsafe fn string_free(p: *mut c_char) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `string_into_raw`: the header is HEADER bytes before it.
    unsafe {
        let base = p.cast::<u8>().sub(HEADER);
        let len = base.cast::<usize>().read();
        dealloc(base, string_layout(len));
    }
}

/// A `'static` NUL-terminated string as a C pointer.
pub(crate) fn static_cstr(s: &'static str) -> *const c_char {
    debug_assert!(s.ends_with('\0'));
    s.as_ptr().cast()
}

/// NUL-terminated bytes of a Rust string (an interior NUL is replaced by U+FFFD so that C string
/// functions see the whole text).
fn c_bytes(s: &str) -> Box<[u8]> {
    let mut v = Vec::with_capacity(s.len() + 1);
    if s.contains('\0') {
        v.extend_from_slice(s.replace('\0', "\u{FFFD}").as_bytes());
    } else {
        v.extend_from_slice(s.as_bytes());
    }
    v.push(0);
    v.into_boxed_slice()
}

// ----- error objects --------------------------------------------------------------------------

#[repr(C)]
struct ErrorBox {
    public: acph_error,
    _kind: Box<[u8]>,
    _message: Box<[u8]>,
    _data: Box<[u8]>,
}

fn error_into_raw(f: &Failure) -> *mut acph_error {
    let kind = c_bytes(&f.kind);
    let message = c_bytes(&f.message);
    let data = c_bytes(&f.data.to_string());
    let public = acph_error {
        code: f.status,
        kind: kind.as_ptr().cast(),
        message: message.as_ptr().cast(),
        data: data.as_ptr().cast(),
    };
    // The pointers stay valid: moving a Box does not move its heap buffer.
    let boxed = Box::new(ErrorBox {
        public,
        _kind: kind,
        _message: message,
        _data: data,
    });
    Box::into_raw(boxed).cast()
}

/// # Safety
/// `p` is NULL or an error returned by this library that was not freed yet.
pub(crate) unsafe fn error_free(p: *mut acph_error) {
    if !p.is_null() {
        // SAFETY: `p` came from `error_into_raw` (`ErrorBox` is `repr(C)` with the public struct
        // first).
        drop(unsafe { Box::from_raw(p.cast::<ErrorBox>()) });
    }
}

// ----- events ---------------------------------------------------------------------------------

/// An event ready for C: the public struct followed by the buffers it points into.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct EventBox {
    public: acph_event,
    _json: Box<[u8]>,
    _session_id: Option<Box<[u8]>>,
}

// SAFETY: the raw pointers in `public` point into the box's own heap buffers (or to 'static
// data); nothing else aliases them, so the whole box can move between threads.
unsafe impl Send for EventBox {}

/// What an event carries besides its buffers.
#[derive(Debug)]
pub(crate) struct EventFields {
    pub seq: u64,
    pub agent: u64,
    pub session: u64,
    pub turn: u64,
    pub request: u64,
    pub call: u64,
    pub kind: crate::event::acph_event_kind,
    pub replay: bool,
    pub kind_name: &'static str,
}

pub(crate) fn event_box(
    fields: EventFields,
    json: String,
    session_id: Option<&str>,
) -> Box<EventBox> {
    let mut json = json.into_bytes();
    json.push(0);
    let json = json.into_boxed_slice();
    let session_id: Option<Box<[u8]>> = session_id.map(|s| {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        v.into_boxed_slice()
    });
    let public = acph_event {
        seq: fields.seq,
        agent: fields.agent,
        session: fields.session,
        turn: fields.turn,
        request: fields.request,
        call: fields.call,
        kind: fields.kind,
        replay: fields.replay,
        kind_name: static_cstr(fields.kind_name),
        session_id: session_id
            .as_ref()
            .map_or(std::ptr::null(), |s| s.as_ptr().cast()),
        session_id_len: session_id.as_ref().map_or(0, |s| s.len() - 1),
        json: json.as_ptr().cast(),
        json_len: json.len() - 1,
    };
    Box::new(EventBox {
        public,
        _json: json,
        _session_id: session_id,
    })
}

impl EventBox {
    #[cfg(test)]
    pub(crate) fn public(&self) -> &acph_event {
        &self.public
    }
}

pub(crate) fn event_into_raw(ev: Box<EventBox>) -> *mut acph_event {
    Box::into_raw(ev).cast()
}

/// # Safety
/// `p` is NULL or an event returned by this library that was not freed yet.
pub(crate) unsafe fn event_free(p: *mut acph_event) {
    if !p.is_null() {
        // SAFETY: `p` came from `event_into_raw` (`EventBox` is `repr(C)`, public struct first).
        drop(unsafe { Box::from_raw(p.cast::<EventBox>()) });
    }
}

// ----- signals --------------------------------------------------------------------------------

/// Block SIGPIPE in the calling (library) thread: a write to an agent that exited must fail with
/// EPIPE, not kill the embedding process (C programs keep SIGPIPE's default action). Child
/// processes start with an empty signal mask (the standard library resets it before exec).
pub(crate) fn block_sigpipe_in_this_thread() {
    #[cfg(unix)]
    {
        use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
        let mut set = SigSet::empty();
        set.add(Signal::SIGPIPE);
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None);
    }
}

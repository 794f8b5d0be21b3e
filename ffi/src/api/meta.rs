//! Versions, status names, freeing errors and strings.

use std::ffi::c_char;

use crate::ptr;
use crate::status::{acph_error, acph_status};

/// The library's version, `"MAJOR.MINOR.PATCH"` (the same as `ACPH_VERSION_STRING` of the header
/// it was built with). Static; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn acph_version() -> *const c_char {
    ptr::static_cstr(concat!(env!("CARGO_PKG_VERSION"), "\0"))
}

/// The library's ABI version (`ACPH_ABI_VERSION` of the header it was built with). A program
/// should refuse to run when this differs from the `ACPH_ABI_VERSION` it was compiled against.
#[unsafe(no_mangle)]
pub extern "C" fn acph_abi_version() -> u32 {
    crate::ACPH_ABI_VERSION
}

/// The stable snake_case name of a status (`"ok"`, `"stale_id"`, `"agent_exited"`, ...): the
/// same string as the `kind` of the error object and the error kinds of the Node and Python
/// faces. `status` is an `acph_status`; `"unknown"` for a number that is not a status. Static; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn acph_status_str(status: u32) -> *const c_char {
    ffi_value!(ptr::static_cstr("unknown\0"), {
        // `acph_status` is a `uint32_t` in C: any number may arrive here, so it is taken as one.
        match acph_status::from_u32(status) {
            Some(s) => ptr::static_cstr(s.name_c()),
            None => ptr::static_cstr("unknown\0"),
        }
    })
}

/// Free an error object. NULL is a no-op.
///
/// # Safety
/// `error` is NULL or an error written by this library that was not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_error_free(error: *mut acph_error) {
    ffi_value!((), {
        // SAFETY: `error` is NULL or an unfreed error of this library (this function's contract).
        unsafe { ptr::error_free(error) }
    })
}

/// Free a string returned by this library. NULL is a no-op.
///
/// # Safety
/// `string` is NULL or a string returned by this library that was not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_string_free(string: *mut c_char) {
    ffi_value!((), {
        // SAFETY: `string` is NULL or an unfreed string of this library (this function's
        // contract).
        unsafe { ptr::string_free(string) }
    })
}

/// The ACP method table this library was built with, as a JSON array (docs/PROTOCOL.md): one
/// object per method `{"name", "direction", "kind", "stability", "gate", "params", "result",
/// "implemented", "faces"}`. `*json_out` receives an owned string: free it with
/// `acph_string_free`.
///
/// # Safety
/// `json_out` is NULL or writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_methods_json(
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let out = try_out!(json_out);
        let text = acp_host::protocol::methods_json().to_string();
        out.write(ptr::string_into_raw(text.as_bytes()));
        Ok(())
    })
}

/// A prompt content block built from a file, as JSON for `acph_session_prompt`: an `image` or
/// `audio` block (base64 data, MIME type from the extension: png, jpg, gif, webp; wav, mp3, ogg,
/// flac, m4a, webm) or, for anything else, an embedded text `resource` (UTF-8 files only). `path`
/// must be absolute; files over 16 MiB are refused (`ACPH_STATUS_INVALID_ARGUMENT`). Whether the
/// agent accepts the block is checked when the prompt is sent. `*json_out` is owned
/// (`acph_string_free`).
///
/// # Safety
/// `path` points to `path_len` readable bytes; `json_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_content_from_file(
    path: *const c_char,
    path_len: usize,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let path = try_str!(path, path_len);
        let out = try_out!(json_out);
        let block = acp_host::content::from_file(std::path::Path::new(path))?;
        out.write(ptr::string_into_raw(block.to_string().as_bytes()));
        Ok(())
    })
}

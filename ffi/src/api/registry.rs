//! The ACP registry (docs/REGISTRY.md): load a registry document, list its agents, resolve an
//! agent id into a spec for `acph_host_spawn`, and install a binary distribution into a cache.
//!
//! An `acph_registry *` is a plain immutable object, not tied to a host: load, list, resolve and
//! `is_installed` need no host and never block on the network (the core never fetches anything).
//! Only the install, which may download and extract, runs as an asynchronous call of a host, on
//! the host's blocking pool.

use std::ffi::{c_char, c_void};
use std::path::Path;

use acp_host::registry::Registry;

use crate::calls::Primary;
use crate::config;
use crate::host::acph_host;
use crate::ptr::{self, Callback, InstallHooks, acph_fetch_fn, acph_free_fn, acph_progress_fn};
use crate::registry::{HookFetcher, InstallJob, acph_fetch_sink, acph_registry, resolved_json};
use crate::status::{acph_error, acph_status};

/// Read and parse a registry file (at most 16 MiB): a registry document (`{"version", "agents":
/// [...]}`) or one agent manifest (`agent.json`, a registry of one). A file that cannot be read
/// is `ACPH_STATUS_IO`; a document that cannot be used `ACPH_STATUS_INVALID_CONFIG` with
/// `data.path` naming the field (`agents[3].distribution.npx.package`; `"$"` for text that is not
/// JSON or not a registry). `*registry_out` is owned by the caller: free it with
/// `acph_registry_free`. Blocks only for reading the file.
///
/// # Safety
/// `path` points to `path_len` readable bytes; `registry_out` and `error_out` are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_from_file(
    path: *const c_char,
    path_len: usize,
    registry_out: *mut *mut acph_registry,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let path = try_str!(path, path_len);
        let out = try_out!(registry_out);
        let registry = Registry::from_file(Path::new(path))?;
        out.write(ptr::registry_into_raw(Box::new(acph_registry { registry })));
        Ok(())
    })
}

/// Parse a registry document or one agent manifest from text (errors as for
/// `acph_registry_from_file`: text that is not JSON is `ACPH_STATUS_INVALID_CONFIG` at `"$"`, as
/// in every face). `*registry_out` is owned by the caller (`acph_registry_free`).
///
/// # Safety
/// `json` points to `json_len` readable bytes; `registry_out` and `error_out` are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_from_json(
    json: *const c_char,
    json_len: usize,
    registry_out: *mut *mut acph_registry,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let text = try_str!(json, json_len);
        let out = try_out!(registry_out);
        let registry = Registry::from_json(text)?;
        out.write(ptr::registry_into_raw(Box::new(acph_registry { registry })));
        Ok(())
    })
}

/// Free a registry. NULL is a no-op. Installs it started go on (they hold their own copy).
///
/// # Safety
/// `registry` is NULL or a registry from `acph_registry_from_*` that was not freed yet, and no
/// other thread is using it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_free(registry: *mut acph_registry) {
    ffi_value!((), {
        // SAFETY: `registry` is NULL or an unfreed registry (this function's contract).
        unsafe { ptr::registry_free(registry) }
    })
}

/// The document's `version`: `*version_out` is an owned string (`acph_string_free`), or NULL when
/// the document has none (a single manifest never has one).
///
/// # Safety
/// `registry` is NULL or a live registry; `version_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_version(
    registry: *const acph_registry,
    version_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let r = try_registry!(registry);
        let out = try_out!(version_out);
        out.write(
            r.registry
                .version()
                .map_or(std::ptr::null_mut(), |v| ptr::string_into_raw(v.as_bytes())),
        );
        Ok(())
    })
}

/// Every agent entry, in document order, as a JSON array of the registry's own objects (`id`,
/// `name`, `version`, `description`, `distribution`, and `repository`, `website`, `authors`,
/// `license`, `icon` when present; fields this version does not know are not kept). `*json_out`
/// is owned (`acph_string_free`).
///
/// # Safety
/// `registry` is NULL or a live registry; `json_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_agents(
    registry: *const acph_registry,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let r = try_registry!(registry);
        let out = try_out!(json_out);
        let json = serde_json::to_value(r.registry.agents()).unwrap_or_default();
        out.write(ptr::string_into_raw(json.to_string().as_bytes()));
        Ok(())
    })
}

/// The entry of agent `id`, as JSON (one element of `acph_registry_agents`'s array);
/// `ACPH_STATUS_NOT_FOUND` when the registry does not list it. `*json_out` is owned
/// (`acph_string_free`).
///
/// # Safety
/// `registry` is NULL or a live registry; `id` points to `id_len` readable bytes; `json_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_agent(
    registry: *const acph_registry,
    id: *const c_char,
    id_len: usize,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let r = try_registry!(registry);
        let id = try_str!(id, id_len);
        let out = try_out!(json_out);
        let json = serde_json::to_value(r.registry.agent(id)?).unwrap_or_default();
        out.write(ptr::string_into_raw(json.to_string().as_bytes()));
        Ok(())
    })
}

/// Choose a distribution of agent `id` and build its spec. Never downloads or installs anything.
/// `options_json` (NULL: every default) is `{"prefer": ["binary", "npx", "uvx"] | "npx",
/// "platform": "linux-x86_64", "cacheDir": "/dir", "npxCommand": "npx", "uvxCommand": "uvx"}`
/// (every field optional; `null` = absent). The default order: a binary for `platform` (default:
/// this machine's) already installed under `cacheDir`, else npx, else uvx, else a binary that
/// still needs installing; `prefer` gives an order of its own (a binary listed there is chosen
/// whether installed or not). `*json_out` (owned, `acph_string_free`) is `{"agentId",
/// "agentVersion", "kind": "binary" | "npx" | "uvx", "spec": {"command", "args", "env"},
/// "platform", "installDir", "needsInstall"}` (`platform`, `installDir` null unless a binary);
/// `spec` is an agent spec `acph_host_spawn` takes as it is (add `"cwd"` or `"restart"` if
/// wanted). A binary with `needsInstall` names the file `acph_registry_install` will create.
///
/// Errors: `ACPH_STATUS_NOT_FOUND` (an id the registry does not list, or nothing usable for this
/// platform), `ACPH_STATUS_INVALID_CONFIG` with `data.path` (an entry that cannot be used: a
/// `cmd` that leaves its install directory, a package name starting with `-`),
/// `ACPH_STATUS_INVALID_JSON` / `ACPH_STATUS_INVALID_ARGUMENT` (the options: an unknown field,
/// an unknown platform or kind, a binary without `cacheDir`).
///
/// # Safety
/// `registry` is NULL or a live registry; `id` points to `id_len` readable bytes;
/// `options_json` is NULL or points to `options_len` readable bytes; `json_out` and `error_out`
/// are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_resolve(
    registry: *const acph_registry,
    id: *const c_char,
    id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let r = try_registry!(registry);
        let id = try_str!(id, id_len);
        let options = try_opt_str!(options_json, options_len);
        let out = try_out!(json_out);
        let options = config::resolve_options(options)?;
        let resolved = r.registry.resolve(id, &options)?;
        out.write(ptr::string_into_raw(
            resolved_json(&resolved).to_string().as_bytes(),
        ));
        Ok(())
    })
}

/// Whether agent `id`'s binary for a platform is installed under a cache directory (its install
/// directory `<cacheDir>/<id>/<version>/<platform>/` exists: installs only ever make it appear
/// complete). `options_json`: `{"cacheDir": "/dir", "platform": "linux-x86_64"}` (`cacheDir`
/// required; `platform` default: this machine's). `ACPH_STATUS_NOT_FOUND` for an unknown id.
///
/// # Safety
/// `registry` is NULL or a live registry; `id` points to `id_len` readable bytes;
/// `options_json` points to `options_len` readable bytes; `installed_out` and `error_out` are
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_is_installed(
    registry: *const acph_registry,
    id: *const c_char,
    id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    installed_out: *mut bool,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let r = try_registry!(registry);
        let id = try_str!(id, id_len);
        let options = try_str!(options_json, options_len);
        let out = try_out!(installed_out);
        let options = config::install_options(options, false)?;
        let agent = r.registry.agent(id)?;
        out.write(agent.is_installed(&options.cache_dir, options.platform)?);
        Ok(())
    })
}

/// The install job of `acph_registry_install`, once the arguments are read. The callback was
/// taken first, so that every failure before the job starts drops it (its finalizer runs before
/// the call returns).
fn install_job(
    r: &acph_registry,
    id: &str,
    options: &str,
    callback: Callback<InstallHooks>,
) -> Result<InstallJob, crate::status::Failure> {
    let options = config::install_options(options, true)?;
    Ok(InstallJob {
        agent: r.registry.agent(id)?.clone(),
        platform: options.platform,
        cache_dir: options.cache_dir,
        limits: options.limits,
        fetcher: HookFetcher::new(callback),
    })
}

/// Install agent `id`'s binary distribution under a cache directory, as an asynchronous call of
/// `host` (`result`: `{"dir": "<cacheDir>/<id>/<version>/<platform>", "cmd": "<dir>/<cmd>",
/// "alreadyInstalled": bool}`; already installed: nothing is fetched). `options_json`:
/// `{"cacheDir": "/dir", "platform": "linux-x86_64", "maxArchiveBytes": 1073741824,
/// "maxTotalBytes": 1073741824, "maxEntries": 100000, "maxDirs": 10000, "maxDepth": 64}`
/// (`cacheDir` required; `platform` default: this machine's; the limits bound the download, the
/// bytes extracted, the entries, the directories extraction creates and the components of one
/// entry's path; a component over 255 bytes or a path over 1,024 is refused whatever the
/// options).
///
/// The steps are the core's (docs/REGISTRY.md): an entry without `sha256` is refused before
/// anything is fetched; the archive is fetched (bounded by `maxArchiveBytes`) and its SHA-256
/// checked before anything is extracted; `.tar.gz`/`.tgz`/`.zip` are extracted with links,
/// absolute names and `..` refused, into a staging directory renamed into place. Archives at
/// `file://` URLs and local paths are read by the library (regular files only: a FIFO, device
/// or directory is `ACPH_STATUS_INVALID_ARGUMENT`; a read with no progress for 30 s, or past 10
/// minutes in all, is `ACPH_STATUS_TIMEOUT`); any other URL (`https://...`) goes to
/// `fetch` (the embedder's HTTP client; the library opens no connection), and without `fetch` is
/// `ACPH_STATUS_UNSUPPORTED`.
///
/// `fetch(user_data, url, url_len, sink)` runs on a library thread (the host's blocking pool),
/// once per install that needs the download; it may block, must not unwind, and must not wait
/// for a thread that is blocked in `acph_call_wait` on this install. It writes the bytes with
/// `acph_fetch_sink_write` (from any thread, until it returns) and returns 0, or nonzero on
/// failure (`acph_fetch_sink_fail` first says why).
///
/// `progress(user_data, progress_json, progress_len)` (NULL: none) hears of the download and the
/// extraction: `{"phase": "download"|"extract", "stage": "started"|"done"|"failed", "elapsedMs":
/// N, "bytes": N|null, "message": "..."|null}` (the `data` of a `progress` event, docs/EVENTS.md;
/// `done` of `download` carries the archive's size, `failed` why). In order, on the install's
/// thread (the host's blocking pool), between the install's steps: the install waits for it, so
/// it must return quickly and must not unwind. Nothing is reported when the binary was already
/// installed or the install was refused before anything was fetched.
///
/// `finalizer(user_data)` (NULL: none) runs exactly once, when the library no longer needs
/// `user_data` (for `fetch` and `progress`): after the install ended (also when it was
/// abandoned: possibly after this call's `call_completed`), or before this function returns
/// when it fails.
///
/// Errors (directly: no call is started): NULL, UTF-8 and JSON errors, `ACPH_STATUS_NOT_FOUND`
/// for an unknown id, `ACPH_STATUS_CLOSED`. As the call's outcome: `ACPH_STATUS_INVALID_CONFIG`
/// with `data.path` (no `sha256`, a digest mismatch, an archive over a limit, refused or
/// corrupt, a `cmd` missing from it), `ACPH_STATUS_NOT_FOUND` (no binary for the platform),
/// `ACPH_STATUS_UNSUPPORTED` (a remote URL without `fetch`, an archive format not extracted),
/// `ACPH_STATUS_IO` (the cache directory, the archive file; `fetch` returning nonzero, naming
/// the URL). After any failure nothing of the attempt is left in the cache. `acph_call_cancel`
/// completes the call with `cancelled` at once; the install stops at `fetch`'s next write (which
/// fails with `ACPH_STATUS_CANCELLED`) or finishes, and never leaves half an install.
///
/// # Safety
/// `host` is NULL or a live host; `registry` is NULL or a live registry; `id` points to `id_len`
/// readable bytes; `options_json` points to `options_len` readable bytes; `fetch`, `progress`
/// and `finalizer` are NULL or functions callable from any thread with `user_data` until the finalizer ran;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_registry_install(
    host: *mut acph_host,
    registry: *const acph_registry,
    id: *const c_char,
    id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    fetch: acph_fetch_fn,
    progress: acph_progress_fn,
    user_data: *mut c_void,
    finalizer: acph_free_fn,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let callback = callback!(InstallHooks { fetch, progress }, user_data, finalizer);
        let host = try_host!(host);
        let out = try_out!(call_out);
        let r = try_registry!(registry);
        let id = try_str!(id, id_len);
        let options = try_str!(options_json, options_len);
        let job = install_job(r, id, options, callback)?;
        out.write(host.state.start_call(0, Primary::Nothing, job.run())?);
        Ok(())
    })
}

/// Inside a fetch callback: append `len` bytes of the archive (`data` may be NULL when `len` is
/// 0). Any thread, until the callback returns; calls are serialised. Fails with
/// `ACPH_STATUS_CANCELLED` once the install was abandoned (`acph_call_cancel`, the host's
/// shutdown) and `ACPH_STATUS_IO` when the bytes cannot be taken (more than
/// `maxArchiveBytes` in all, which the install then reports as `ACPH_STATUS_INVALID_CONFIG`, or
/// a disk error): stop and return; the install fails whatever the callback returns then.
///
/// # Safety
/// `sink` is NULL or the `sink` of a fetch callback that has not returned; `data` is NULL or
/// points to `len` readable bytes; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_fetch_sink_write(
    sink: *mut acph_fetch_sink,
    data: *const u8,
    len: usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let sink = try_sink!(sink);
        let data = try_bytes!(data, len);
        sink.write(data)
    })
}

/// Inside a fetch callback: say why it fails (e.g. `"HTTP 404"`), before returning nonzero. The
/// install's `ACPH_STATUS_IO` error then names the URL and this message. The last message wins.
///
/// # Safety
/// `sink` is NULL or the `sink` of a fetch callback that has not returned; `message` points to
/// `message_len` readable bytes; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_fetch_sink_fail(
    sink: *mut acph_fetch_sink,
    message: *const c_char,
    message_len: usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let sink = try_sink!(sink);
        let message = try_str!(message, message_len);
        sink.fail(message);
        Ok(())
    })
}

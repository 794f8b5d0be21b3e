//! Unit tests of the pieces C cannot easily reach: the panic boundary, the status table, owned
//! strings, config parsing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::CStr;

use crate::status::{ALL_STATUSES, Failure, acph_error, acph_status};
use crate::{api, ptr};

fn boundary(
    body: impl FnOnce() -> Result<(), Failure>,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, { body() })
}

#[test]
fn a_panic_becomes_a_status_and_an_error_object() {
    let mut err: *mut acph_error = std::ptr::null_mut();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let st = boundary(|| panic!("boom"), &mut err);
    std::panic::set_hook(prev);
    assert_eq!(st, acph_status::ACPH_STATUS_PANIC);
    assert!(!err.is_null());
    // SAFETY: written by the boundary just above.
    let e = unsafe { &*err };
    assert_eq!(e.code, acph_status::ACPH_STATUS_PANIC);
    // SAFETY: NUL-terminated strings owned by the error.
    let (kind, message) = unsafe { (CStr::from_ptr(e.kind), CStr::from_ptr(e.message)) };
    assert_eq!(kind.to_str().unwrap(), "panic");
    assert!(message.to_str().unwrap().contains("boom"));
    // SAFETY: allocated by the library, freed once.
    unsafe { api::acph_error_free(err) };
}

#[test]
fn success_writes_no_error_and_failures_keep_their_status() {
    let mut err: *mut acph_error = std::ptr::null_mut();
    assert_eq!(boundary(|| Ok(()), &mut err), acph_status::ACPH_STATUS_OK);
    assert!(err.is_null());
    let st = boundary(|| Err(Failure::stale("agent", 9)), std::ptr::null_mut());
    assert_eq!(st, acph_status::ACPH_STATUS_STALE_ID);
}

#[test]
fn status_names_are_unique_and_round_trip() {
    let mut seen = std::collections::HashSet::new();
    for s in ALL_STATUSES {
        assert!(seen.insert(s.name()), "duplicate name {}", s.name());
        assert_eq!(acph_status::from_u32(*s as u32), Some(*s));
        // SAFETY: static NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(api::acph_status_str(*s as u32)) };
        assert_eq!(name.to_str().unwrap(), s.name());
    }
    // SAFETY: static NUL-terminated string.
    let unknown = unsafe { CStr::from_ptr(api::acph_status_str(4242)) };
    assert_eq!(unknown.to_str().unwrap(), "unknown");
    // Every core error kind has its own code (none falls into `other`).
    for kind in [
        "agent_exited",
        "timeout",
        "unsupported",
        "protocol",
        "agent_error",
        "auth_required",
        "version_unsupported",
        "invalid_argument",
        "spawn_failed",
        "io",
        "closed",
        "cancelled",
        "busy",
        "not_found",
        "already_resolved",
        "events_stalled",
    ] {
        let s = acph_status::from_kind(kind);
        assert_ne!(s, acph_status::ACPH_STATUS_OTHER, "{kind}");
        assert_eq!(s.name(), kind);
    }
}

#[test]
fn owned_strings_keep_interior_nuls_and_free_cleanly() {
    let p = ptr::string_into_raw(b"a\0b");
    // SAFETY: 3 bytes + NUL were just allocated.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), 4) };
    assert_eq!(bytes, b"a\0b\0");
    // SAFETY: allocated above, freed once.
    unsafe { ptr::string_free(p) };
    // SAFETY: NULL is a no-op.
    unsafe { ptr::string_free(std::ptr::null_mut()) };
}

#[test]
fn event_boxes_point_into_their_own_buffers() {
    let ev = ptr::event_box(
        ptr::EventFields {
            seq: 3,
            agent: 1,
            session: 0,
            turn: 0,
            request: 0,
            call: 0,
            kind: crate::event::acph_event_kind::ACPH_EVENT_AGENT_READY,
            replay: false,
            kind_name: "agent_ready\0",
        },
        "{\"seq\":3}".into(),
        Some("sess_1"),
    );
    let public = ev.public();
    assert_eq!(public.json_len, 9);
    assert_eq!(public.session_id_len, 6);
    // SAFETY: NUL-terminated buffers owned by the box.
    let (json, sid) = unsafe {
        (
            CStr::from_ptr(public.json),
            CStr::from_ptr(public.session_id),
        )
    };
    assert_eq!(json.to_str().unwrap(), "{\"seq\":3}");
    assert_eq!(sid.to_str().unwrap(), "sess_1");
    let raw = ptr::event_into_raw(ev);
    // SAFETY: allocated above, freed once.
    unsafe { ptr::event_free(raw) };
}

/// The option documents are the core's: the same status, message and `data.path` as
/// `acp_host::options` gives (every case of tests/options/cases.json runs through the C ABI in
/// tests/c/test_options.c); these check what only the C face adds.
#[test]
fn option_errors_are_the_cores() {
    let bridge = crate::services::Bridge::default();
    for text in [
        "not json",
        r#"{"permision":"manual"}"#,
        r#"{"maxLineBytes":1023}"#,
        r#"{"elicitation":["form"]}"#,
        r#"{"services":"events","events":false}"#,
    ] {
        let e = crate::config::host_config(Some(text), &bridge).unwrap_err();
        let core = acp_host::options::document(text)
            .and_then(|d| acp_host::options::host(&d, acp_host::options::Face::C).map(|_| ()))
            .unwrap_err();
        assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_CONFIG, "{text}");
        assert_eq!(e.message, core.to_string(), "{text}");
        assert_eq!(*e.data, core.data(), "{text}");
    }
    // Not parsed by the face any more: an agent spec and session options fail like the host's.
    let e = crate::config::agent_spec(r#"{"cmd":"agent"}"#).unwrap_err();
    assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_CONFIG);
    assert_eq!(e.data["path"], "cmd");
    let e = crate::config::agent_spec("{").unwrap_err();
    assert_eq!(
        (e.status, e.data["path"].as_str()),
        (acph_status::ACPH_STATUS_INVALID_CONFIG, Some("$"))
    );
    let e = crate::config::session_options(r#"{"additionalDirectories":[]}"#).unwrap_err();
    assert_eq!(e.data["path"], "cwd");
    let e = crate::config::pool_config(acp_host::AgentSpec::new("a"), Some(r#"{"maxAgents":0}"#))
        .unwrap_err();
    assert_eq!(e.data["path"], "pool.maxAgents");
}

/// The C face's callables are the service bridge: it answers where the document says
/// `embedder`, and nowhere else; there is no permission or elicitation callback to name.
#[test]
fn the_service_bridge_answers_where_the_document_says_embedder() {
    use acp_host::services::{ExtService, FsService, TerminalService};
    let bridge = crate::services::Bridge::default();
    let c = crate::config::host_config(None, &bridge).unwrap().core;
    assert!(matches!(c.fs, FsService::Builtin));
    assert!(matches!(c.terminal, TerminalService::Builtin));
    assert!(matches!(c.ext, ExtService::Unsupported));
    assert!(matches!(c.permission, acp_host::PermissionHandler::DenyAll));
    let c = crate::config::host_config(
        Some(r#"{"fs":"embedder","terminal":"disabled","ext":"embedder","terminalAuth":"embedder","services":"events"}"#),
        &bridge,
    )
    .unwrap()
    .core;
    assert!(matches!(c.fs, FsService::Embedder(_)));
    assert!(matches!(c.terminal, TerminalService::Disabled));
    assert!(matches!(c.ext, ExtService::Embedder(_)));
    assert!(matches!(
        c.terminal_auth,
        acp_host::auth::TerminalAuth::Runner(_)
    ));
    assert_eq!(bridge.delivery(), crate::services::Delivery::Events);
    let c = crate::config::host_config(
        Some(r#"{"permission":"manual","elicitation":"manual","elicitationModes":["url"]}"#),
        &bridge,
    )
    .unwrap()
    .core;
    assert!(matches!(c.permission, acp_host::PermissionHandler::Manual));
    assert!(matches!(
        c.elicitation,
        acp_host::ElicitationHandler::Manual { modes } if modes.url && !modes.form
    ));
    assert_eq!(bridge.delivery(), crate::services::Delivery::Callback);
    for who in [
        r#"{"permission":"handler"}"#,
        r#"{"elicitation":"handler"}"#,
    ] {
        let e = crate::config::host_config(Some(who), &bridge).unwrap_err();
        assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_CONFIG, "{who}");
        assert!(e.message.contains("none was given"), "{who}: {}", e.message);
    }
}

#[test]
fn json_arguments_nested_too_deep_are_invalid_argument() {
    let nest = |n: usize| format!("{}0{}", "[".repeat(n), "]".repeat(n));
    assert!(crate::config::any_json("value_json", &nest(100)).is_ok());
    // Past the message limit, past serde_json's own limit, and far past any stack.
    for n in [101, 200, 100_000] {
        let e = crate::config::any_json("value_json", &nest(n)).unwrap_err();
        assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_ARGUMENT, "{n}");
        assert!(e.message.contains("value_json"), "{}", e.message);
    }
    let e = crate::config::any_json("value_json", "[[").unwrap_err();
    assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_JSON);
}

#[test]
fn an_agent_spec_takes_a_restart_policy_and_refuses_a_bad_one_as_invalid_config() {
    let spec = crate::config::agent_spec(
        r#"{"command":"agent","restart":{"maxRestarts":5,"backoffMs":10,"maxBackoffMs":40,"resetAfterMs":1000}}"#,
    )
    .unwrap();
    let p = spec.restart.expect("a policy");
    assert_eq!(p.max_restarts, 5);
    assert_eq!(p.backoff, std::time::Duration::from_millis(10));
    assert_eq!(p.max_backoff, std::time::Duration::from_millis(40));
    assert_eq!(p.reset_after, std::time::Duration::from_secs(1));
    // `{}`: the defaults; absent or null: not supervised.
    let spec = crate::config::agent_spec(r#"{"command":"agent","restart":{}}"#).unwrap();
    assert_eq!(spec.restart, Some(acp_host::RestartPolicy::default()));
    for text in [
        r#"{"command":"agent"}"#,
        r#"{"command":"agent","restart":null}"#,
    ] {
        assert!(
            crate::config::agent_spec(text).unwrap().restart.is_none(),
            "{text}"
        );
    }
    for (bad, says) in [
        (r#"{"maxRestart":3}"#, "maxRestart"),
        (r#"{"backoffMs":-1}"#, "backoffMs"),
        (r#"{"maxRestarts":"3"}"#, "maxRestarts"),
        (r#"{"maxRestarts":4294967296}"#, "..= 1000000"),
        ("3", "object"),
    ] {
        let e = crate::config::agent_spec(&format!(r#"{{"command":"agent","restart":{bad}}}"#))
            .unwrap_err();
        assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_CONFIG, "{bad}");
        let path = e.data["path"].as_str().unwrap_or_default().to_owned();
        assert!(path.starts_with("restart"), "{bad}: {path}");
        assert!(
            e.message.contains(says) || path.contains(says),
            "{bad}: {} at {path}",
            e.message
        );
    }
}

#[test]
fn every_core_event_kind_has_its_own_c_kind() {
    let mut seen = std::collections::HashSet::new();
    for kind in acp_host::EventKind::ALL {
        let (c, name) = crate::event::kind_of(kind);
        assert_ne!(
            c,
            crate::event::acph_event_kind::ACPH_EVENT_UNKNOWN,
            "{kind:?}"
        );
        assert!(seen.insert(c as u32), "{kind:?} shares a number");
        assert_eq!(name.strip_suffix('\0'), Some(kind.as_str()));
    }
}

#[test]
fn registry_options_parse_like_the_other_faces() {
    use acp_host::registry::{DistributionKind, Platform};
    let o = crate::config::resolve_options(None).unwrap();
    assert_eq!(o, acp_host::registry::ResolveOptions::new());
    let o = crate::config::resolve_options(Some(
        r#"{"prefer":"npx","platform":"darwin-aarch64","cacheDir":"rel/cache","npxCommand":"npx.cmd","uvxCommand":null}"#,
    ))
    .unwrap();
    assert_eq!(o.prefer, Some(vec![DistributionKind::Npx]));
    assert_eq!(o.platform, Some(Platform::DarwinAarch64));
    assert!(o.cache_dir.unwrap().is_absolute());
    assert_eq!(
        (o.npx_command.as_str(), o.uvx_command.as_str()),
        ("npx.cmd", "uvx")
    );
    let o = crate::config::resolve_options(Some(r#"{"prefer":["binary","uvx"]}"#)).unwrap();
    assert_eq!(
        o.prefer,
        Some(vec![DistributionKind::Binary, DistributionKind::Uvx])
    );
    for (bad, path) in [
        (r#"{"prefer":["npx","pip"]}"#, "prefer[1]"),
        (r#"{"prefer":3}"#, "prefer"),
        (r#"{"platform":"beos-m68k"}"#, "platform"),
        (r#"{"cacheDir":""}"#, "cacheDir"),
        (r#"{"npxCommand":""}"#, "npxCommand"),
        (r#"{"cache_dir":"/x"}"#, "cache_dir"),
        ("[]", "$"),
    ] {
        let e = crate::config::resolve_options(Some(bad)).unwrap_err();
        assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_ARGUMENT, "{bad}");
        assert_eq!(e.data["path"], path, "{bad}");
    }
    let e = crate::config::resolve_options(Some("{")).unwrap_err();
    assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_JSON);

    let o = crate::config::install_options(
        r#"{"cacheDir":"/c","platform":"linux-aarch64","maxArchiveBytes":10,"maxTotalBytes":20,"maxEntries":3,"maxDirs":4,"maxDepth":5}"#,
        true,
    )
    .unwrap();
    assert_eq!(o.cache_dir, std::path::Path::new("/c"));
    assert_eq!(o.platform, Platform::LinuxAarch64);
    assert_eq!(
        (
            o.limits.max_archive_bytes,
            o.limits.max_total_bytes,
            o.limits.max_entries,
            o.limits.max_dirs,
            o.limits.max_depth
        ),
        (10, 20, 3, 4, 5)
    );
    let o = crate::config::install_options(r#"{"cacheDir":"/c"}"#, false).unwrap();
    assert_eq!(Some(o.platform), Platform::current());
    assert_eq!(o.limits, acp_host::registry::InstallLimits::default());
    for (bad, with_limits, path) in [
        ("{}", true, "cacheDir"),
        (r#"{"cacheDir":null}"#, true, "cacheDir"),
        (r#"{"cacheDir":"/c","maxEntries":-1}"#, true, "maxEntries"),
        (r#"{"cacheDir":"/c","maxEntries":1}"#, false, "maxEntries"),
        (r#"{"cacheDir":"/c","maxDirs":-1}"#, true, "maxDirs"),
        (r#"{"cacheDir":"/c","maxDepth":"64"}"#, true, "maxDepth"),
    ] {
        let e = crate::config::install_options(bad, with_limits).unwrap_err();
        assert_eq!(e.status, acph_status::ACPH_STATUS_INVALID_ARGUMENT, "{bad}");
        assert_eq!(e.data["path"], path, "{bad}");
    }
}

/// The fetch callback through the core's `Fetcher` trait: a write the sink refused fails the
/// fetch even when the callback then returns 0; a nonzero return is `io` with its message.
#[test]
fn a_failed_sink_write_fails_the_fetch_whatever_the_callback_returns() {
    use std::ffi::{c_char, c_int, c_void};
    use std::io::Write;

    use acp_host::registry::Fetcher;

    use crate::registry::acph_fetch_sink;

    unsafe extern "C" fn ignores_errors(
        _user: *mut c_void,
        _url: *const c_char,
        _len: usize,
        sink: *mut acph_fetch_sink,
    ) -> c_int {
        let data = [7u8; 8];
        for _ in 0..4 {
            // SAFETY: `sink` is the live sink of this call; `data` is readable.
            let _ = unsafe {
                api::acph_fetch_sink_write(sink, data.as_ptr(), data.len(), std::ptr::null_mut())
            };
        }
        0
    }
    unsafe extern "C" fn fails(
        _user: *mut c_void,
        _url: *const c_char,
        _len: usize,
        sink: *mut acph_fetch_sink,
    ) -> c_int {
        let why = "HTTP 503";
        // SAFETY: `sink` is the live sink of this call; `why` is readable.
        let _ = unsafe {
            api::acph_fetch_sink_fail(sink, why.as_ptr().cast(), why.len(), std::ptr::null_mut())
        };
        5
    }

    /// Takes 10 bytes, then refuses.
    struct Small(Vec<u8>);
    impl Write for Small {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + buf.len() > 10 {
                return Err(std::io::Error::other("full"));
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let hook = |f: crate::ptr::acph_fetch_fn| {
        // SAFETY: plain functions without user data, callable from any thread.
        crate::registry::HookFetcher::new(unsafe {
            crate::ptr::Callback::new(f, std::ptr::null_mut(), None)
        })
    };
    let url = "https://example.invalid/a.tar.gz";
    let mut out = Small(Vec::new());
    let e = hook(Some(ignores_errors)).fetch(url, &mut out).unwrap_err();
    assert_eq!(e.kind(), "io");
    assert!(e.to_string().contains("full"), "{e}");
    assert_eq!(out.0.len(), 8);

    let e = hook(Some(fails)).fetch(url, &mut Vec::new()).unwrap_err();
    assert_eq!(e.kind(), "io");
    assert!(
        e.to_string().contains(url) && e.to_string().contains("HTTP 503"),
        "{e}"
    );

    // No callback: the other faces' `unsupported`, saying what to pass.
    let e = hook(None).fetch(url, &mut Vec::new()).unwrap_err();
    assert_eq!(e.kind(), "unsupported");
    assert!(e.to_string().contains("fetch callback"), "{e}");
}

/// Local archives go through the core's `FileFetcher`, never the callback and never an open of
/// this face's own: a FIFO (which used to block the install) and a device are refused at once.
#[cfg(unix)]
#[test]
fn local_archives_are_read_by_the_core_fetcher_only() {
    use std::ffi::{c_char, c_int, c_void};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use acp_host::registry::Fetcher;

    use crate::registry::acph_fetch_sink;

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn counts(
        _user: *mut c_void,
        _url: *const c_char,
        _len: usize,
        _sink: *mut acph_fetch_sink,
    ) -> c_int {
        CALLS.fetch_add(1, Ordering::SeqCst);
        1
    }
    let fifo = std::env::temp_dir().join(format!("acph-fifo-{}.tar.gz", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for url in [
        format!("file://{}", fifo.display()),
        fifo.display().to_string(),
        "file:///dev/zero".to_owned(),
    ] {
        // SAFETY: a plain function without user data, callable from any thread.
        let hook = crate::registry::HookFetcher::new(unsafe {
            crate::ptr::Callback::new(Some(counts), std::ptr::null_mut(), None)
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let asked = url.clone();
        std::thread::spawn(move || {
            let _ = tx.send(
                hook.fetch(&asked, &mut Vec::new())
                    .map_err(|e| e.to_string()),
            );
        });
        let e = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the fetch blocked")
            .unwrap_err();
        assert!(e.contains("is not a regular file"), "{url}: {e}");
    }
    let _ = std::fs::remove_file(&fifo);
    assert_eq!(CALLS.load(Ordering::SeqCst), 0);
}

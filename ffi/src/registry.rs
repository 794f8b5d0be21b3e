//! The objects behind `acph_registry_*` (docs/REGISTRY.md, "C"): the core's
//! `acp_host::registry` behind an opaque handle, and the embedder's fetch callback as the core's
//! `Fetcher`. Parsing, resolution and installs are the core's; this module only converts.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use acp_host::Error;
use acp_host::registry::{
    Fetcher, FileFetcher, InstallLimits, Installed, LocalOnlyFetcher, Platform, Registry,
    RegistryAgent, Resolved, install_binary_with_progress,
};
use serde_json::{Value, json};

use crate::ptr::{Callback, InstallHooks};
use crate::status::{Failure, acph_status};

/// A parsed ACP registry document (or one agent manifest, as a registry of one); opaque. Create
/// it with `acph_registry_from_file` / `acph_registry_from_json`, free it with
/// `acph_registry_free`. Immutable: any thread may use it, concurrently; it does not belong to a
/// host and may outlive every host.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct acph_registry {
    pub(crate) registry: Registry,
}

/// Where a fetch callback writes the archive's bytes (opaque; `acph_fetch_sink_write`). Valid only
/// until the callback it was passed to returns.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct acph_fetch_sink {
    // Never constructed: the pointer C receives is a `FetchSink`'s address.
    _opaque: [u8; 0],
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The state behind an `acph_fetch_sink *`: the core's download file (hashed and bounded by the
/// core) for the duration of one callback.
pub(crate) struct FetchSink<'a> {
    state: Mutex<SinkState<'a>>,
    abandoned: &'a AtomicBool,
}

struct SinkState<'a> {
    // The core's writer is a file and a hasher, tied to no thread: the lock is what lets the
    // embedder write from another thread while its callback waits.
    out: &'a mut dyn Write,
    /// The first write that failed; every later write fails too, and so does the install.
    error: Option<io::Error>,
    /// What the callback said with `acph_fetch_sink_fail`.
    message: Option<String>,
}

impl FetchSink<'_> {
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), Failure> {
        if self.abandoned.load(Ordering::Acquire) {
            return Err(Failure::new(
                acph_status::ACPH_STATUS_CANCELLED,
                "the install was abandoned (acph_call_cancel or the host's shutdown): stop fetching and return",
            ));
        }
        let mut st = lock(&self.state);
        if let Some(e) = &st.error {
            return Err(Failure::new(
                acph_status::ACPH_STATUS_IO,
                format!("an earlier write failed ({e}): stop fetching and return"),
            ));
        }
        st.out.write_all(bytes).map_err(|e| {
            let failure = Failure::new(
                acph_status::ACPH_STATUS_IO,
                format!("cannot take the archive's bytes: {e}"),
            );
            st.error = Some(e);
            failure
        })
    }

    pub(crate) fn fail(&self, message: &str) {
        lock(&self.state).message = Some(message.to_owned());
    }
}

/// The embedder's fetch callback for URLs that are not local (anything but `file://` and plain
/// paths), the core's `LocalOnlyFetcher` for the rest, as the core's `Fetcher`. Dropping it runs
/// the callback's finalizer.
#[derive(Debug)]
pub(crate) struct HookFetcher {
    callback: Callback<InstallHooks>,
    /// Set once nobody waits for the install any more: the sink refuses writes from then on, so
    /// a streaming callback stops early and the install cleans up.
    abandoned: Arc<AtomicBool>,
}

impl HookFetcher {
    pub(crate) fn new(callback: Callback<InstallHooks>) -> HookFetcher {
        HookFetcher {
            callback,
            abandoned: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Fetcher for HookFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> acp_host::Result<()> {
        let remote = matches!(
            FileFetcher::new().local_path(url),
            Err(Error::Unsupported(_))
        );
        if !remote {
            return LocalOnlyFetcher.fetch(url, sink);
        }
        if !self.callback.is_set() {
            return LocalOnlyFetcher.fetch(url, sink).map_err(|e| match e {
                Error::Unsupported(m) => Error::Unsupported(format!(
                    "{m}; or pass a fetch callback to acph_registry_install to download it with your own HTTP client"
                )),
                other => other,
            });
        }
        if self.abandoned.load(Ordering::Acquire) {
            return Err(Error::Cancelled);
        }
        let mut url_c = Vec::with_capacity(url.len() + 1);
        url_c.extend_from_slice(url.as_bytes());
        url_c.push(0);
        let fetch_sink = FetchSink {
            state: Mutex::new(SinkState {
                out: sink,
                error: None,
                message: None,
            }),
            abandoned: &self.abandoned,
        };
        let rc = self.callback.fetch(&url_c, &fetch_sink);
        let st = fetch_sink
            .state
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        if self.abandoned.load(Ordering::Acquire) {
            return Err(Error::Cancelled);
        }
        // A failed write fails the install even when the callback ignored it and returned 0
        // (the core reports a write over its limit as `invalid_config` itself).
        if let Some(e) = st.error {
            return Err(Error::from(e));
        }
        match rc {
            Some(0) => Ok(()),
            rc => {
                let why = st.message.unwrap_or_else(|| match rc {
                    Some(n) => format!("it returned {n}"),
                    None => "no callback".to_owned(),
                });
                Err(Error::from(io::Error::other(format!(
                    "the fetch callback failed for `{url}`: {why}; nothing was installed"
                ))))
            }
        }
    }
}

/// Sets the flag when dropped: the future waiting for an install was dropped (cancelled, timed
/// out, shut down) or finished.
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// One install to run on the runtime's blocking pool.
#[derive(Debug)]
pub(crate) struct InstallJob {
    pub agent: RegistryAgent,
    pub platform: Platform,
    pub cache_dir: PathBuf,
    pub limits: InstallLimits,
    pub fetcher: HookFetcher,
}

impl InstallJob {
    /// Run the core's install off the runtime's workers. When the returned future is dropped
    /// before the install ends, the install still finishes or cleans up on its thread (the cache
    /// never holds half an install), and the fetch callback is told through its sink.
    pub(crate) async fn run(self) -> Result<Value, Error> {
        let _abandon = Abandon(self.fetcher.abandoned.clone());
        let task = tokio::task::spawn_blocking(move || {
            let job = self;
            // Reported on this thread, the install's: the callback runs between its steps.
            let progress = |p: &acp_host::progress::Progress| {
                let mut json = p.to_json().to_string().into_bytes();
                json.push(0);
                job.fetcher.callback.progress(&json);
            };
            let done = install_binary_with_progress(
                &job.agent,
                job.platform,
                &job.cache_dir,
                &job.fetcher,
                &job.limits,
                &progress,
            );
            // The callback's finalizer runs here, after its last possible invocation.
            drop(job);
            done
        });
        match task.await {
            Ok(done) => done.map(|i| installed_json(&i)),
            Err(e) => Err(Error::from(io::Error::other(format!(
                "the install task failed: {e}"
            )))),
        }
    }
}

fn path_text(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `acph_registry_resolve`'s result: the Node face's shape, whose `spec` `acph_host_spawn` takes.
pub(crate) fn resolved_json(r: &Resolved) -> Value {
    json!({
        "agentId": r.agent_id,
        "agentVersion": r.agent_version,
        "kind": r.kind.as_str(),
        "spec": { "command": r.spec.command, "args": r.spec.args, "env": r.spec.env },
        "platform": r.platform.map(Platform::as_str),
        "installDir": r.install_dir.as_deref().map(path_text),
        "needsInstall": r.needs_install,
    })
}

pub(crate) fn installed_json(i: &Installed) -> Value {
    json!({
        "dir": path_text(&i.dir),
        "cmd": path_text(&i.cmd),
        "alreadyInstalled": i.already_installed,
    })
}

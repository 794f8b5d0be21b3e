//! `NativeRegistry`: the core's `acp_host::registry` (docs/REGISTRY.md) for the Python package's
//! `acp_host.registry`. Parsing, resolution and installs are the core's; results cross as JSON
//! text and become dataclasses in `python/acp_host/registry.py`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use acp_host::progress::{NoProgress, ProgressSink};
use acp_host::registry::{
    DistributionKind, Fetcher, FileFetcher, InstallLimits, Installed, LocalOnlyFetcher, Platform,
    Registry, ResolveOptions, Resolved, install_binary_with_progress,
};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyIterator, PyMemoryView, PyString};
use serde_json::json;

use crate::errors;

/// A parsed registry (or one agent manifest, as a registry of one).
#[pyclass(frozen, module = "acp_host._native")]
pub(crate) struct NativeRegistry {
    registry: std::sync::Arc<Registry>,
}

fn platform_arg(platform: Option<&str>) -> Result<Option<Platform>, acp_host::Error> {
    platform.map(str::parse).transpose()
}

fn path_text(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

fn resolved_json(r: &Resolved) -> String {
    json!({
        "agentId": r.agent_id,
        "agentVersion": r.agent_version,
        "kind": r.kind.as_str(),
        "command": r.spec.command,
        "args": r.spec.args,
        "env": r.spec.env,
        "platform": r.platform.map(Platform::as_str),
        "installDir": r.install_dir.as_deref().map(path_text),
        "needsInstall": r.needs_install,
    })
    .to_string()
}

fn installed_json(i: &Installed) -> String {
    json!({
        "dir": path_text(&i.dir),
        "cmd": path_text(&i.cmd),
        "alreadyInstalled": i.already_installed,
    })
    .to_string()
}

/// The embedder's `fetch=` callable as the core's [`Fetcher`]: `file://` URLs and local paths are
/// still read by [`LocalOnlyFetcher`]; any other URL goes to `fetch(url)`, which returns the
/// archive as `bytes`/`bytearray`/`memoryview` or an iterable of them (streamed chunk by chunk).
/// The GIL is taken for each call (`fetch`, and each `next()`), never while writing to the sink.
struct HookFetcher {
    fetch: Py<PyAny>,
    /// The Python exception that failed the install, for `__cause__`.
    cause: Arc<Mutex<Option<PyErr>>>,
}

/// What `fetch(url)` gave: all the bytes at once, or an iterator of chunks.
enum Fetched {
    Bytes(Vec<u8>),
    Chunks(Py<PyIterator>),
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The bytes of a `bytes`, `bytearray` or `memoryview`; `Ok(None)` for anything else.
fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Some(b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let b = obj.call_method0("tobytes")?;
        return Ok(Some(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Ok(None)
}

impl HookFetcher {
    /// A Python exception raised by the hook: `io`, naming the URL and the exception.
    fn raised(&self, py: Python<'_>, url: &str, what: &str, e: PyErr) -> acp_host::Error {
        let value = e.value(py);
        let text = value
            .str()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| "?".into());
        let name = type_name(value.as_any());
        let message = if text.is_empty() {
            format!("fetch(`{url}`) {what} {name}; nothing was installed")
        } else {
            format!("fetch(`{url}`) {what} {name}: {text}; nothing was installed")
        };
        *self.cause.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        acp_host::Error::from(std::io::Error::other(message))
    }

    fn wrong_type(url: &str, what: &str, obj: &Bound<'_, PyAny>) -> acp_host::Error {
        let name = type_name(obj);
        let hint = if name == "coroutine" {
            // An `async def` hook: the coroutine is never run (fetch must be synchronous).
            let _ = obj.call_method0("close");
            " (fetch must be a synchronous callable; it runs on the install thread)"
        } else {
            ""
        };
        acp_host::Error::InvalidArgument(format!(
            "fetch(`{url}`) {what} `{name}`, not bytes, bytearray, memoryview or an iterable of them{hint}; nothing was installed"
        ))
    }

    fn call(&self, url: &str) -> acp_host::Result<Fetched> {
        crate::attach(|py| {
            let out = match self.fetch.bind(py).call1((url,)) {
                Ok(out) => out,
                Err(e) => return Err(self.raised(py, url, "raised", e)),
            };
            match bytes_of(&out) {
                Ok(Some(bytes)) => return Ok(Fetched::Bytes(bytes)),
                Ok(None) => {}
                Err(e) => {
                    return Err(self.raised(py, url, "returned a memoryview that failed:", e));
                }
            }
            if out.is_instance_of::<PyString>() {
                return Err(Self::wrong_type(url, "returned", &out));
            }
            match out.try_iter() {
                Ok(it) => Ok(Fetched::Chunks(it.unbind())),
                Err(_) => Err(Self::wrong_type(url, "returned", &out)),
            }
        })
        .unwrap_or_else(|| Err(exiting()))
    }

    /// The next chunk of the iterator; `None` at its end.
    fn next_chunk(&self, url: &str, it: &Py<PyIterator>) -> acp_host::Result<Option<Vec<u8>>> {
        crate::attach(|py| match it.bind(py).clone().next() {
            None => Ok(None),
            Some(Err(e)) => Err(self.raised(py, url, "raised while iterating:", e)),
            Some(Ok(chunk)) => match bytes_of(&chunk) {
                Ok(Some(bytes)) => Ok(Some(bytes)),
                Ok(None) => Err(Self::wrong_type(url, "yielded a chunk of type", &chunk)),
                Err(e) => Err(self.raised(py, url, "yielded a memoryview that failed:", e)),
            },
        })
        .unwrap_or_else(|| Err(exiting()))
    }
}

fn exiting() -> acp_host::Error {
    acp_host::Error::Closed("the interpreter is exiting".into())
}

fn sink_error(e: std::io::Error) -> acp_host::Error {
    acp_host::Error::from(e)
}

impl Fetcher for HookFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> acp_host::Result<()> {
        if !matches!(
            FileFetcher::new().local_path(url),
            Err(acp_host::Error::Unsupported(_))
        ) {
            return LocalOnlyFetcher.fetch(url, sink);
        }
        match self.call(url)? {
            Fetched::Bytes(bytes) => sink.write_all(&bytes).map_err(sink_error),
            Fetched::Chunks(it) => {
                let mut written = Ok(());
                while written.is_ok() {
                    match self.next_chunk(url, &it) {
                        Ok(Some(chunk)) => written = sink.write_all(&chunk).map_err(sink_error),
                        Ok(None) => break,
                        Err(e) => written = Err(e),
                    }
                }
                // Drop the iterator (a generator is closed) with the GIL held.
                crate::attach(move |_| drop(it));
                written
            }
        }
    }
}

/// The embedder's `progress=` callable as the core's sink: called on the install thread with the
/// report as JSON text (the package makes it a `Progress`), the GIL taken for each call. What it
/// raises is dropped: the install goes on.
struct PyProgress(Py<PyAny>);

impl ProgressSink for PyProgress {
    fn progress(&self, p: &acp_host::progress::Progress) {
        let text = p.to_json().to_string();
        let _ = crate::attach(|py| {
            let _ = self.0.bind(py).call1((text,));
        });
    }
}

#[pymethods]
impl NativeRegistry {
    /// Parse a registry document or one agent manifest (`invalid_config` with `data.path`).
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<NativeRegistry> {
        Registry::from_json(text)
            .map(|registry| NativeRegistry {
                registry: registry.into(),
            })
            .map_err(|e| errors::to_py(py, &e))
    }

    /// Read and parse a registry file (at most 16 MiB).
    #[staticmethod]
    fn from_file(py: Python<'_>, path: PathBuf) -> PyResult<NativeRegistry> {
        let read = crate::detach(py, move || Registry::from_file(&path))?;
        read.map(|registry| NativeRegistry {
            registry: registry.into(),
        })
        .map_err(|e| errors::to_py(py, &e))
    }

    fn __len__(&self) -> usize {
        self.registry.agents().len()
    }

    #[getter]
    fn version(&self) -> Option<String> {
        self.registry.version().map(str::to_owned)
    }

    /// Every agent entry, in document order, as a JSON array (the registry's own shape).
    fn agents_json(&self, py: Python<'_>) -> PyResult<String> {
        serde_json::to_string(self.registry.agents())
            .map_err(|e| errors::local(py, "invalid_argument", e.to_string()))
    }

    /// The entry of agent `id` as JSON (`not_found` when the registry does not list it).
    fn agent_json(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        let agent = self.registry.agent(id).map_err(|e| errors::to_py(py, &e))?;
        serde_json::to_string(agent)
            .map_err(|e| errors::local(py, "invalid_argument", e.to_string()))
    }

    /// Choose a distribution of agent `id` and build its spec, as JSON. Never installs.
    #[pyo3(signature = (id, *, prefer=None, platform=None, cache_dir=None, npx_command=None, uvx_command=None))]
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &self,
        py: Python<'_>,
        id: &str,
        prefer: Option<Vec<String>>,
        platform: Option<String>,
        cache_dir: Option<PathBuf>,
        npx_command: Option<String>,
        uvx_command: Option<String>,
    ) -> PyResult<String> {
        let resolve = || -> Result<String, acp_host::Error> {
            let mut options = ResolveOptions::new();
            options.platform = platform_arg(platform.as_deref())?;
            options.cache_dir = cache_dir;
            options.prefer = prefer
                .map(|kinds| {
                    kinds
                        .iter()
                        .map(|k| k.parse::<DistributionKind>())
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?;
            if let Some(program) = npx_command {
                options.npx_command = program;
            }
            if let Some(program) = uvx_command {
                options.uvx_command = program;
            }
            Ok(resolved_json(&self.registry.resolve(id, &options)?))
        };
        resolve().map_err(|e| errors::to_py(py, &e))
    }

    /// Install agent `id`'s binary for `platform` (default: this one) under `cache_dir`, from a
    /// `file://` URL or a local path (the core's `FileFetcher`), or through `fetch(url)` for any
    /// other URL when given, as JSON. Blocks, the GIL released (taken again for each call of
    /// `fetch`); an install interrupted by Ctrl-C finishes (or cleans up) in the background.
    /// `progress(json)`, when given, gets each report of the download and the extraction.
    #[pyo3(signature = (id, cache_dir, *, platform=None, fetch=None, progress=None))]
    fn install(
        &self,
        py: Python<'_>,
        id: String,
        cache_dir: PathBuf,
        platform: Option<String>,
        fetch: Option<Bound<'_, PyAny>>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let registry = self.registry.clone();
        let cause = Arc::new(Mutex::new(None));
        let hook = match fetch {
            Some(f) if !f.is_callable() => {
                return Err(errors::local(
                    py,
                    "invalid_argument",
                    format!(
                        "fetch must be a callable (url: str) -> bytes | Iterable[bytes], not `{}`",
                        type_name(&f)
                    ),
                ));
            }
            Some(f) => Some(HookFetcher {
                fetch: f.unbind(),
                cause: cause.clone(),
            }),
            None => None,
        };
        let progress = match progress {
            Some(f) if !f.is_callable() => {
                return Err(errors::local(
                    py,
                    "invalid_argument",
                    format!(
                        "progress must be a callable (Progress) -> None, not `{}`",
                        type_name(&f)
                    ),
                ));
            }
            Some(f) => Some(PyProgress(f.unbind())),
            None => None,
        };
        let out = crate::block(py, async move {
            let work = move || -> Result<String, acp_host::Error> {
                let platform = match platform_arg(platform.as_deref())? {
                    Some(p) => p,
                    None => Platform::current().ok_or_else(|| {
                        acp_host::Error::Unsupported(
                            "this platform has no key in the registry format: pass platform="
                                .into(),
                        )
                    })?,
                };
                let agent = registry.agent(&id)?;
                let fetcher: &dyn Fetcher = match &hook {
                    Some(h) => h,
                    None => &LocalOnlyFetcher,
                };
                let sink: &dyn ProgressSink = match &progress {
                    Some(p) => p,
                    None => &NoProgress,
                };
                let limits = InstallLimits::default();
                let installed = install_binary_with_progress(
                    agent, platform, &cache_dir, fetcher, &limits, sink,
                );
                // The callables are released with the GIL held.
                if hook.is_some() || progress.is_some() {
                    crate::attach(move |_| drop((hook, progress)));
                }
                Ok(installed_json(&installed?))
            };
            match tokio::task::spawn_blocking(work).await {
                Ok(out) => out,
                Err(e) => Err(acp_host::Error::from(std::io::Error::other(format!(
                    "the install task failed: {e}"
                )))),
            }
        })?;
        out.map_err(|e| {
            let err = errors::to_py(py, &e);
            let cause = cause.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(cause) = cause {
                err.set_cause(py, Some(cause));
            }
            err
        })
    }
}

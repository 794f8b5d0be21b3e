//! `NativeRegistry`: the core's `acp_host::registry` (docs/REGISTRY.md) for the facade's
//! `Registry`. Parsing, resolution and installs are the core's; values cross as JSON.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use acp_host::progress::{Progress, ProgressSink};
use acp_host::registry::{
    DistributionKind, Fetcher, InstallLimits, LocalOnlyFetcher, Platform, Registry, ResolveOptions,
    install_binary_with_progress,
};
use napi::Status;
use napi::bindgen_prelude::{Buffer, Either, Promise, Result};
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use serde_json::{Value, json};

use crate::core_err;

/// Options of `resolve` as the facade passes them.
#[napi(object)]
#[derive(Debug, Default)]
pub struct NativeResolveOptions {
    /// `binary`, `npx`, `uvx`, in the order to try.
    pub prefer: Option<Vec<String>>,
    /// A registry platform key (`linux-x86_64`, ...); default: this machine's.
    pub platform: Option<String>,
    pub cache_dir: Option<String>,
    pub npx_command: Option<String>,
    pub uvx_command: Option<String>,
}

/// `(url) => Promise<Buffer | string>`: the facade's wrapper of the embedder's `fetch` hook. It
/// resolves with the archive's bytes, or with `{"kind": "io"|"invalid_argument", "message"}` as
/// JSON when the hook failed or returned something that is not bytes; it never rejects.
type FetchFn = ThreadsafeFunction<String, Promise<Either<Buffer, String>>, String, Status, false>;

/// `(progressJson) => void`: the facade's wrapper of the embedder's `onProgress` (it never
/// throws); the JSON is a `progress` event's data (`Progress::to_json`).
type ProgressFn = ThreadsafeFunction<String, (), String, Status, false, true>;

/// Hands an install's progress to JS. Runs on the install's blocking thread, which waits until
/// the JS thread took each report: they arrive in order, all before the install settles, and a
/// slow hook slows only its install.
struct HookProgress {
    hook: Option<ProgressFn>,
    runtime: tokio::runtime::Handle,
}

impl ProgressSink for HookProgress {
    fn progress(&self, p: &Progress) {
        if let Some(hook) = &self.hook {
            // Its failure is its own (and the wrapper catches what the hook throws).
            let _ = self
                .runtime
                .block_on(hook.call_async_catch(p.to_json().to_string()));
        }
    }
}

/// Whether `url` names something other than a local file (`file://` or a plain path).
fn is_remote(url: &str) -> bool {
    url.find("://")
        .is_some_and(|at| !url[..at].eq_ignore_ascii_case("file"))
}

/// The embedder's hook for remote URLs, [`LocalOnlyFetcher`] for everything else (and for every
/// URL when there is no hook). Runs on the install's blocking thread; the hook itself runs on the
/// JS thread (a threadsafe function), and this thread waits for its promise.
struct HookFetcher {
    hook: Option<FetchFn>,
    runtime: tokio::runtime::Handle,
}

impl Fetcher for HookFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> acp_host::Result<()> {
        let Some(hook) = self.hook.as_ref().filter(|_| is_remote(url)) else {
            return LocalOnlyFetcher.fetch(url, sink).map_err(|e| match e {
                acp_host::Error::Unsupported(m) => acp_host::Error::Unsupported(format!(
                    "{m}; or pass `fetch` to install() to download it with your own HTTP client"
                )),
                other => other,
            });
        };
        let failed = |message: &str| {
            acp_host::Error::from(std::io::Error::other(format!(
                "the fetch hook failed for `{url}`: {message}"
            )))
        };
        let reply = self.runtime.block_on(async {
            let promise = hook.call_async_catch(url.to_owned()).await?;
            promise.await
        });
        match reply {
            Ok(Either::A(bytes)) => sink.write_all(&bytes).map_err(acp_host::Error::from),
            Ok(Either::B(json)) => {
                let v: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
                let message = v["message"].as_str().unwrap_or("no message");
                Err(match v["kind"].as_str() {
                    Some("invalid_argument") => acp_host::Error::InvalidArgument(format!(
                        "the fetch hook {message} for `{url}`; it must give the archive's bytes (Uint8Array, ArrayBuffer or Buffer)"
                    )),
                    _ => failed(message),
                })
            }
            Err(e) => Err(failed(&e.reason)),
        }
    }
}

/// A parsed registry (or one agent manifest, as a registry of one).
#[napi]
#[derive(Debug)]
pub struct NativeRegistry {
    registry: Arc<Registry>,
}

fn platform_arg(platform: Option<&str>) -> acp_host::Result<Option<Platform>> {
    platform.map(str::parse).transpose()
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn json_err(e: serde_json::Error) -> napi::Error {
    core_err(acp_host::Error::Protocol(e.to_string()))
}

#[napi]
impl NativeRegistry {
    /// Parse a registry document or one agent manifest (`invalid_config` with `data.path`).
    #[napi(factory)]
    pub fn from_json(text: String) -> Result<NativeRegistry> {
        let registry = Registry::from_json(&text).map_err(core_err)?;
        Ok(NativeRegistry {
            registry: Arc::new(registry),
        })
    }

    /// Read and parse a registry file (at most 16 MiB).
    #[napi(factory)]
    pub fn from_file(path: String) -> Result<NativeRegistry> {
        let registry = Registry::from_file(Path::new(&path)).map_err(core_err)?;
        Ok(NativeRegistry {
            registry: Arc::new(registry),
        })
    }

    /// The document's `version`, when it has one.
    #[napi]
    pub fn version(&self) -> Option<String> {
        self.registry.version().map(str::to_owned)
    }

    /// Every agent entry, in document order (the registry's own shape).
    #[napi]
    pub fn agents(&self) -> Result<Value> {
        serde_json::to_value(self.registry.agents()).map_err(json_err)
    }

    /// The entry of agent `id` (`not_found` otherwise).
    #[napi]
    pub fn agent(&self, id: String) -> Result<Value> {
        serde_json::to_value(self.registry.agent(&id).map_err(core_err)?).map_err(json_err)
    }

    /// Choose a distribution of agent `id` and build its spec. Never installs.
    #[napi]
    pub fn resolve(&self, id: String, options: Option<NativeResolveOptions>) -> Result<Value> {
        let o = options.unwrap_or_default();
        let resolve = || -> acp_host::Result<acp_host::registry::Resolved> {
            let mut core = ResolveOptions::new();
            core.platform = platform_arg(o.platform.as_deref())?;
            core.cache_dir = o.cache_dir.map(Into::into);
            core.prefer = o
                .prefer
                .map(|kinds| {
                    kinds
                        .iter()
                        .map(|k| k.parse::<DistributionKind>())
                        .collect::<acp_host::Result<Vec<_>>>()
                })
                .transpose()?;
            if let Some(program) = o.npx_command {
                core.npx_command = program;
            }
            if let Some(program) = o.uvx_command {
                core.uvx_command = program;
            }
            self.registry.resolve(&id, &core)
        };
        let r = resolve().map_err(core_err)?;
        Ok(json!({
            "agentId": r.agent_id,
            "agentVersion": r.agent_version,
            "kind": r.kind.as_str(),
            "spec": { "command": r.spec.command, "args": r.spec.args, "env": r.spec.env },
            "platform": r.platform.map(Platform::as_str),
            "installDir": r.install_dir.as_deref().map(path_text),
            "needsInstall": r.needs_install,
        }))
    }

    /// Install agent `id`'s binary under `cacheDir` from a `file://` URL or a local path, or
    /// through `fetch` for any other URL, on a blocking thread (never on the JS thread);
    /// `progress` gets the download's and the extraction's reports.
    #[napi]
    pub async fn install(
        &self,
        id: String,
        cache_dir: String,
        platform: Option<String>,
        #[napi(ts_arg_type = "((url: string) => Promise<Buffer | string>) | undefined | null")]
        fetch: Option<FetchFn>,
        #[napi(ts_arg_type = "((progressJson: string) => void) | undefined | null")]
        progress: Option<ProgressFn>,
    ) -> Result<Value> {
        let registry = self.registry.clone();
        let fetcher = HookFetcher {
            hook: fetch,
            runtime: tokio::runtime::Handle::current(),
        };
        let progress = HookProgress {
            hook: progress,
            runtime: tokio::runtime::Handle::current(),
        };
        let work = move || -> acp_host::Result<Value> {
            let platform = match platform_arg(platform.as_deref())? {
                Some(p) => p,
                None => Platform::current().ok_or_else(|| {
                    acp_host::Error::Unsupported(
                        "this platform has no key in the registry format: pass a platform".into(),
                    )
                })?,
            };
            let agent = registry.agent(&id)?;
            let i = install_binary_with_progress(
                agent,
                platform,
                Path::new(&cache_dir),
                &fetcher,
                &InstallLimits::default(),
                &progress,
            )?;
            Ok(json!({
                "dir": path_text(&i.dir),
                "cmd": path_text(&i.cmd),
                "alreadyInstalled": i.already_installed,
            }))
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(out) => out.map_err(core_err),
            Err(e) => Err(core_err(acp_host::Error::from(std::io::Error::other(
                format!("the install task failed: {e}"),
            )))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_remote;

    #[test]
    fn only_non_file_schemes_go_to_the_hook() {
        assert!(is_remote("https://example.com/a.tar.gz"));
        assert!(is_remote("HTTP://example.com/a.zip"));
        assert!(!is_remote("file:///tmp/a.tar.gz"));
        assert!(!is_remote("FILE://localhost/tmp/a.tar.gz"));
        assert!(!is_remote("/tmp/a.tar.gz"));
        assert!(!is_remote("relative/a.tar.gz"));
    }
}

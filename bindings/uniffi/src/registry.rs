//! `Registry`: the core's `acp_host::registry` (docs/REGISTRY.md). Parsing, resolution and
//! installs are the core's; this module only converts its values into records, and adapts the
//! embedder's [`RegistryFetcher`] (a Kotlin or Swift download hook) to the core's `Fetcher`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use acp_host::registry::{Fetcher, LocalOnlyFetcher, Platform};

use crate::error::AcpError;
use crate::handlers::HandlerError;
use crate::options::AgentSpec;
use crate::runtime::{on_rt, rt};

/// A distribution of an agent, as the registry names it (`binary`, `npx`, `uvx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum DistributionKind {
    Binary,
    Npx,
    Uvx,
}

impl From<acp_host::registry::DistributionKind> for DistributionKind {
    fn from(k: acp_host::registry::DistributionKind) -> DistributionKind {
        use acp_host::registry::DistributionKind as K;
        match k {
            K::Binary => DistributionKind::Binary,
            K::Npx => DistributionKind::Npx,
            K::Uvx => DistributionKind::Uvx,
        }
    }
}

impl From<DistributionKind> for acp_host::registry::DistributionKind {
    fn from(k: DistributionKind) -> acp_host::registry::DistributionKind {
        use acp_host::registry::DistributionKind as K;
        match k {
            DistributionKind::Binary => K::Binary,
            DistributionKind::Npx => K::Npx,
            DistributionKind::Uvx => K::Uvx,
        }
    }
}

/// How `Registry.resolve` chooses.
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct ResolveOptions {
    /// The platform of binary distributions, a registry key (`linux-x86_64`, `darwin-aarch64`,
    /// ...); null: this machine's.
    #[uniffi(default = None)]
    pub platform: Option<String>,
    /// The install cache of binaries (`cacheDir/id/version/platform`). Without it a binary can be
    /// neither found installed nor chosen.
    #[uniffi(default = None)]
    pub cache_dir: Option<String>,
    /// The kinds to try, in order. Null: an installed binary, then npx, then uvx, then a binary
    /// that needs installing. A binary listed here is chosen whether installed or not.
    #[uniffi(default = None)]
    pub prefer: Option<Vec<DistributionKind>>,
    /// The program run for npx distributions (default `npx`).
    #[uniffi(default = None)]
    pub npx_command: Option<String>,
    /// The program run for uvx distributions (default `uvx`).
    #[uniffi(default = None)]
    pub uvx_command: Option<String>,
}

/// What `Registry.resolve` chose: spawn `spec` with `Host.spawn`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ResolvedAgent {
    pub agent_id: String,
    pub agent_version: String,
    pub kind: DistributionKind,
    /// What to spawn. For a binary that `needsInstall`, the command names the file the install
    /// will create: install first, then spawn.
    pub spec: AgentSpec,
    /// For a binary: the platform chosen.
    pub platform: Option<String>,
    /// For a binary: `cacheDir/id/version/platform`.
    pub install_dir: Option<String>,
    /// A binary that is not installed yet: call `Registry.install` (nothing was downloaded).
    pub needs_install: bool,
}

/// The result of `Registry.install`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InstalledAgent {
    /// `cacheDir/id/version/platform`.
    pub dir: String,
    /// The entry's `cmd` inside it.
    pub cmd: String,
    /// It was installed already: nothing was fetched.
    pub already_installed: bool,
}

/// One agent entry of the registry.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RegistryAgent {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub repository: Option<String>,
    pub website: Option<String>,
    pub authors: Vec<String>,
    pub license: Option<String>,
    pub icon: Option<String>,
    /// The entry's `distribution` (`npx`, `uvx`, `binary` by platform) as JSON.
    pub distribution: String,
}

impl From<&acp_host::registry::RegistryAgent> for RegistryAgent {
    fn from(a: &acp_host::registry::RegistryAgent) -> RegistryAgent {
        RegistryAgent {
            id: a.id.clone(),
            name: a.name.clone(),
            version: a.version.clone(),
            description: a.description.clone(),
            repository: a.repository.clone(),
            website: a.website.clone(),
            authors: a.authors.clone(),
            license: a.license.clone(),
            icon: a.icon.clone(),
            distribution: serde_json::to_string(&a.distribution).unwrap_or_default(),
        }
    }
}

fn path_text(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

fn platform_arg(platform: Option<&str>) -> Result<Option<Platform>, acp_host::Error> {
    platform.map(str::parse).transpose()
}

impl From<acp_host::registry::Resolved> for ResolvedAgent {
    fn from(r: acp_host::registry::Resolved) -> ResolvedAgent {
        ResolvedAgent {
            agent_id: r.agent_id,
            agent_version: r.agent_version,
            kind: r.kind.into(),
            spec: AgentSpec::from_core(r.spec),
            platform: r.platform.map(|p| p.as_str().to_owned()),
            install_dir: r.install_dir.as_deref().map(path_text),
            needs_install: r.needs_install,
        }
    }
}

/// The embedder's download hook for `Registry.install` (a uniffi foreign trait: a Kotlin
/// `suspend fun`, a Swift `async` method): given the URL of an archive that is not `file://` or a
/// local path (`https://...`), return its bytes, downloaded with the embedder's own HTTP client,
/// proxies and TLS policy. acp-host itself never opens a connection. It is asked only when the
/// install needs the download, and the bytes go through the same checks as a local archive: the
/// entry's sha256 (a mismatch is `InvalidConfig` on the `sha256` field) and the archive limit
/// (1 GiB; over it, `InvalidConfig` on the `archive` field). Throwing anything fails the install
/// with `Io` naming the URL and the exception. Nothing is installed on any failure. The whole
/// archive is held in memory once returned.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait RegistryFetcher: Send + Sync {
    async fn fetch(&self, url: String) -> Result<Vec<u8>, HandlerError>;
}

/// Whether `url` names something other than a local file (`file://` or a plain path).
fn is_remote(url: &str) -> bool {
    url.find("://")
        .is_some_and(|at| !url[..at].eq_ignore_ascii_case("file"))
}

/// The embedder's [`RegistryFetcher`] for remote URLs, [`LocalOnlyFetcher`] for everything else
/// (and for every URL when there is none). Runs on the install's blocking thread, which waits for
/// the hook's future; the hook itself runs on the foreign side's executor (uniffi launches a
/// coroutine / task for it), so no foreign thread is blocked.
struct HookFetcher {
    hook: Option<Arc<dyn RegistryFetcher>>,
    /// Closed when the `install` call is dropped (a cancelled coroutine): the hook's call is then
    /// dropped too, which cancels its coroutine, and the install fails without installing.
    given_up: tokio::sync::watch::Receiver<()>,
}

impl Fetcher for HookFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> acp_host::Result<()> {
        let Some(hook) = self.hook.as_ref().filter(|_| is_remote(url)) else {
            return LocalOnlyFetcher.fetch(url, sink).map_err(|e| match e {
                acp_host::Error::Unsupported(m) => acp_host::Error::Unsupported(format!(
                    "{m}; or pass a `fetcher` (RegistryFetcher) to install() to download it with your own HTTP client"
                )),
                other => other,
            });
        };
        let mut given_up = self.given_up.clone();
        let reply = rt().block_on(async {
            tokio::select! {
                reply = hook.fetch(url.to_owned()) => Some(reply),
                // Only ever an error: nothing is sent, the sender is dropped.
                _ = given_up.changed() => None,
            }
        });
        match reply {
            Some(Ok(bytes)) => sink.write_all(&bytes).map_err(acp_host::Error::from),
            Some(Err(e)) => Err(acp_host::Error::from(std::io::Error::other(format!(
                "the registry fetcher failed for `{url}`: {e}; nothing was installed"
            )))),
            None => Err(acp_host::Error::Cancelled),
        }
    }
}

/// A parsed ACP registry (or one agent manifest, as a registry of one), read from a document the
/// caller supplies: acp-host never fetches the registry. `resolve` turns an agent id into an
/// `AgentSpec` for `Host.spawn` and never downloads; `install` installs a binary distribution,
/// only when asked (docs/REGISTRY.md).
#[derive(Debug, uniffi::Object)]
pub struct Registry {
    registry: Arc<acp_host::registry::Registry>,
}

#[uniffi::export]
impl Registry {
    /// Parse a registry document or one agent manifest. A document that cannot be used is
    /// `InvalidConfig` whose data `path` names the field (`agents[3].distribution.npx.package`).
    #[uniffi::constructor]
    pub fn from_json(text: String) -> Result<Arc<Registry>, AcpError> {
        let registry = acp_host::registry::Registry::from_json(&text)?;
        Ok(Arc::new(Registry {
            registry: Arc::new(registry),
        }))
    }

    /// Read and parse a registry file (at most 16 MiB; `Io` when it cannot be read).
    #[uniffi::constructor]
    pub fn from_file(path: String) -> Result<Arc<Registry>, AcpError> {
        let registry = acp_host::registry::Registry::from_file(std::path::Path::new(&path))?;
        Ok(Arc::new(Registry {
            registry: Arc::new(registry),
        }))
    }

    /// The document's `version`, when it has one.
    pub fn version(&self) -> Option<String> {
        self.registry.version().map(str::to_owned)
    }

    /// Every agent, in document order.
    pub fn agents(&self) -> Vec<RegistryAgent> {
        self.registry.agents().iter().map(Into::into).collect()
    }

    /// The entry of agent `id` (`NotFound` when the registry does not list it).
    pub fn agent(&self, id: String) -> Result<RegistryAgent, AcpError> {
        Ok(self.registry.agent(&id)?.into())
    }

    /// Choose a distribution of agent `id` and build its spec. Never downloads or installs.
    /// Nothing usable is `NotFound`; a binary without `cacheDir` is `InvalidArgument`.
    #[uniffi::method(default(options = None))]
    pub fn resolve(
        &self,
        id: String,
        options: Option<ResolveOptions>,
    ) -> Result<ResolvedAgent, AcpError> {
        let o = options.unwrap_or_default();
        let mut core = acp_host::registry::ResolveOptions::new();
        core.platform = platform_arg(o.platform.as_deref())?;
        core.cache_dir = o.cache_dir.map(PathBuf::from);
        core.prefer = o
            .prefer
            .map(|kinds| kinds.into_iter().map(Into::into).collect());
        if let Some(program) = o.npx_command {
            core.npx_command = program;
        }
        if let Some(program) = o.uvx_command {
            core.uvx_command = program;
        }
        Ok(self.registry.resolve(&id, &core)?.into())
    }

    /// Install agent `id`'s binary for `platform` (null: this machine's) under `cacheDir`: the
    /// archive's sha256 is checked, it is extracted safely and renamed into place; an existing
    /// install fetches nothing. Archives at `file://` URLs and local paths are read directly; any
    /// other URL (`https://`) is downloaded by `fetcher`, the embedder's hook (without one it is
    /// `Unsupported`). No sha256, a digest mismatch or a refused archive is `InvalidConfig` naming
    /// the entry's field; a fetcher that throws is `Io` naming the URL; nothing is installed on
    /// any failure. Runs on a blocking thread of the core's runtime; a cancelled call lets the
    /// install finish (or clean up) there, and cancels a fetcher call still in flight.
    #[uniffi::method(default(platform = None, fetcher = None))]
    pub async fn install(
        &self,
        id: String,
        cache_dir: String,
        platform: Option<String>,
        fetcher: Option<Arc<dyn RegistryFetcher>>,
    ) -> Result<InstalledAgent, AcpError> {
        let registry = self.registry.clone();
        let (alive, given_up) = tokio::sync::watch::channel(());
        let fetcher = HookFetcher {
            hook: fetcher,
            given_up,
        };
        let work = move || -> Result<InstalledAgent, acp_host::Error> {
            let platform = match platform_arg(platform.as_deref())? {
                Some(p) => p,
                None => Platform::current().ok_or_else(|| {
                    acp_host::Error::Unsupported(
                        "this platform has no key in the registry format: pass a platform".into(),
                    )
                })?,
            };
            let agent = registry.agent(&id)?;
            let installed = acp_host::registry::install_binary(
                agent,
                platform,
                std::path::Path::new(&cache_dir),
                &fetcher,
            )?;
            Ok(InstalledAgent {
                dir: path_text(&installed.dir),
                cmd: path_text(&installed.cmd),
                already_installed: installed.already_installed,
            })
        };
        let task = rt().spawn_blocking(work);
        on_rt(async move {
            // Dropped with this future: a cancelled call gives up the fetcher's call.
            let _alive = alive;
            match task.await {
                Ok(out) => Ok(out?),
                Err(e) => Err(AcpError::Io {
                    detail: format!("the install task failed: {e}"),
                    data: None,
                }),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::mpsc;
    use std::time::Duration;

    use sha2::{Digest, Sha256};

    use super::*;

    const PLATFORM: &str = "linux-x86_64";
    const URL: &str = "https://agents.example.invalid/tool/0.1.0/tool.tar.gz";

    fn tar_gz(name: &str, data: &[u8]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_ustar();
        h.set_path(name).unwrap();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, data).unwrap();
        let tar = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn sha256(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn one_binary(archive: &str, bytes: &[u8]) -> Arc<Registry> {
        let doc = serde_json::json!({"agents": [{
            "id": "tool", "name": "Tool", "version": "0.1.0", "description": "d",
            "distribution": {"binary": {PLATFORM: {
                "archive": archive, "cmd": "./bin/tool", "sha256": sha256(bytes)
            }}}
        }]});
        Registry::from_json(doc.to_string()).unwrap()
    }

    /// Serves fixed bytes (or fails), recording the URLs asked.
    struct Serve {
        reply: Result<Vec<u8>, HandlerError>,
        asked: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl RegistryFetcher for Serve {
        async fn fetch(&self, url: String) -> Result<Vec<u8>, HandlerError> {
            self.asked.lock().unwrap().push(url);
            // A foreign hook answers later, from another thread.
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.reply.clone()
        }
    }

    fn serve(reply: Result<Vec<u8>, HandlerError>) -> Arc<Serve> {
        Arc::new(Serve {
            reply,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn install(
        reg: &Registry,
        cache: &std::path::Path,
        fetcher: Option<Arc<dyn RegistryFetcher>>,
    ) -> Result<InstalledAgent, AcpError> {
        rt().block_on(reg.install(
            "tool".into(),
            path_text(cache),
            Some(PLATFORM.into()),
            fetcher,
        ))
    }

    fn is_empty(dir: &std::path::Path) -> bool {
        std::fs::read_dir(dir).unwrap().next().is_none()
    }

    fn path_of(data: &Option<String>) -> String {
        let v: serde_json::Value = serde_json::from_str(data.as_deref().unwrap()).unwrap();
        v["path"].as_str().unwrap().to_owned()
    }

    #[test]
    fn remote_urls_go_through_the_fetcher_local_ones_do_not() {
        assert!(is_remote("https://x/a.tar.gz") && is_remote("HTTP://x") && is_remote("s3://b/k"));
        assert!(
            !is_remote("file:///a.tar.gz") && !is_remote("FILE:///a") && !is_remote("/a.tar.gz")
        );

        let dir = tempfile::tempdir().unwrap();
        let bytes = tar_gz("bin/tool", b"#!/bin/sh\necho tool\n");
        let reg = one_binary(URL, &bytes);
        let cache = dir.path().join("cache");
        let hook = serve(Ok(bytes.clone()));
        let installed = install(&reg, &cache, Some(hook.clone())).unwrap();
        let want = cache.join("tool/0.1.0").join(PLATFORM);
        assert_eq!(installed.dir, path_text(&want));
        assert_eq!(installed.cmd, path_text(&want.join("bin/tool")));
        assert!(!installed.already_installed);
        assert_eq!(
            std::fs::read(want.join("bin/tool")).unwrap(),
            b"#!/bin/sh\necho tool\n"
        );
        assert_eq!(*hook.asked.lock().unwrap(), [URL]);
        // Installed already: the hook is not asked again.
        assert!(
            install(&reg, &cache, Some(hook.clone()))
                .unwrap()
                .already_installed
        );
        assert_eq!(hook.asked.lock().unwrap().len(), 1);

        // A file:// archive is read locally, even with a hook.
        let archive = dir.path().join("tool.tar.gz");
        std::fs::write(&archive, &bytes).unwrap();
        let local = one_binary(&format!("file://{}", archive.display()), &bytes);
        let never = serve(Err(HandlerError::Failed {
            reason: "asked for a local archive".into(),
        }));
        let other = dir.path().join("cache2");
        assert!(
            !install(&local, &other, Some(never.clone()))
                .unwrap()
                .already_installed
        );
        assert!(never.asked.lock().unwrap().is_empty());
    }

    /// A FIFO named as a local archive is the core's `FileFetcher`'s to refuse (it used to block
    /// the install for good): `InvalidArgument` at once, the hook never asked, nothing installed.
    #[cfg(unix)]
    #[test]
    fn a_local_fifo_is_refused_by_the_core_not_asked_of_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("tool.tar.gz");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reg = one_binary(&format!("file://{}", fifo.display()), b"x");
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let never = serve(Err(HandlerError::Failed {
            reason: "asked for a local archive".into(),
        }));
        let (tx, rx) = std::sync::mpsc::channel();
        let (hook, at) = (never.clone(), cache.clone());
        std::thread::spawn(move || {
            let _ = tx.send(install(&reg, &at, Some(hook)));
        });
        let e = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the install blocked on the FIFO")
            .unwrap_err();
        match e {
            AcpError::InvalidArgument { detail, .. } => {
                assert!(detail.contains("is not a regular file"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
        assert!(never.asked.lock().unwrap().is_empty());
        assert!(is_empty(&cache));
    }

    #[test]
    fn a_failing_or_lying_fetcher_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = tar_gz("bin/tool", b"#!/bin/sh\n");
        let reg = one_binary(URL, &bytes);
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();

        let failing = serve(Err(HandlerError::Failed {
            reason: "java.io.IOException: HTTP 503".into(),
        }));
        match install(&reg, &cache, Some(failing)) {
            Err(AcpError::Io { detail, .. }) => {
                assert!(
                    detail.contains(URL) && detail.contains("HTTP 503"),
                    "{detail}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(is_empty(&cache));

        let other_bytes = tar_gz("bin/tool", b"#!/bin/sh\nevil\n");
        match install(&reg, &cache, Some(serve(Ok(other_bytes)))) {
            Err(AcpError::InvalidConfig { detail, data }) => {
                assert!(detail.contains("sha256"), "{detail}");
                assert_eq!(
                    path_of(&data),
                    format!("agents[0].distribution.binary.{PLATFORM}.sha256")
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(is_empty(&cache));

        // Without a fetcher, https:// is `unsupported`, and says what to do.
        match install(&reg, &cache, None) {
            Err(AcpError::Unsupported { detail, .. }) => {
                assert!(detail.contains("file://") && detail.contains("RegistryFetcher"));
            }
            other => panic!("{other:?}"),
        }
        assert!(is_empty(&cache));
    }

    #[test]
    fn the_archive_limit_bounds_what_a_fetcher_returns() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = tar_gz("bin/tool", b"#!/bin/sh\n");
        let reg = one_binary(URL, &bytes);
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let (_alive, given_up) = tokio::sync::watch::channel(());
        let fetcher = HookFetcher {
            hook: Some(serve(Ok(bytes.clone()))),
            given_up,
        };
        let limits = acp_host::registry::InstallLimits {
            max_archive_bytes: bytes.len() as u64 - 1,
            ..Default::default()
        };
        let agent = reg.registry.agent("tool").unwrap();
        // This thread stands for the install's blocking thread (outside the runtime).
        let e = acp_host::registry::install_binary_with_limits(
            agent,
            PLATFORM.parse().unwrap(),
            &cache,
            &fetcher,
            &limits,
        )
        .unwrap_err();
        assert_eq!(e.kind(), "invalid_config");
        assert_eq!(
            e.data()["path"],
            format!("agents[0].distribution.binary.{PLATFORM}.archive")
        );
        assert!(e.to_string().contains("larger than"), "{e}");
        assert!(is_empty(&cache));
    }

    /// Never answers; reports its call and the drop of its future.
    struct Hang {
        called: Mutex<mpsc::Sender<&'static str>>,
    }

    struct OnDrop(mpsc::Sender<&'static str>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let _ = self.0.send("dropped");
        }
    }

    #[async_trait::async_trait]
    impl RegistryFetcher for Hang {
        async fn fetch(&self, _url: String) -> Result<Vec<u8>, HandlerError> {
            let tx = self.called.lock().unwrap().clone();
            let _ = tx.send("called");
            let _guard = OnDrop(tx);
            std::future::pending().await
        }
    }

    #[test]
    fn a_cancelled_install_drops_the_fetchers_call_and_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = tar_gz("bin/tool", b"#!/bin/sh\n");
        let reg = one_binary(URL, &bytes);
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let (tx, rx) = mpsc::channel();
        let hook = Arc::new(Hang {
            called: Mutex::new(tx),
        });
        let call = reg.install(
            "tool".into(),
            path_text(&cache),
            Some(PLATFORM.into()),
            Some(hook),
        );
        let gave_up = rt().block_on(async {
            let mut call = std::pin::pin!(call);
            tokio::select! {
                _ = &mut call => false,
                _ = tokio::time::sleep(Duration::from_millis(200)) => true,
            }
        });
        assert!(gave_up);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("called"));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("dropped"));
        // The install fails on its blocking thread and cleans up.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !is_empty(&cache) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(is_empty(&cache));
    }
}

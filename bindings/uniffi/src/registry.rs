//! `Registry`: the core's `acp_host::registry` (docs/REGISTRY.md). Parsing, resolution and
//! installs are the core's; this module only converts its values into records.

use std::path::PathBuf;
use std::sync::Arc;

use acp_host::registry::{LocalOnlyFetcher, Platform};

use crate::agent::AgentSpec;
use crate::error::AcpError;
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
        let mut env = std::collections::HashMap::new();
        let mut unset_env = Vec::new();
        for (k, v) in r.spec.env {
            match v {
                Some(v) => {
                    env.insert(k, v);
                }
                None => unset_env.push(k),
            }
        }
        ResolvedAgent {
            agent_id: r.agent_id,
            agent_version: r.agent_version,
            kind: r.kind.into(),
            spec: AgentSpec {
                command: r.spec.command,
                args: r.spec.args,
                env,
                unset_env,
                cwd: r.spec.cwd.as_deref().map(path_text),
                restart: None,
            },
            platform: r.platform.map(|p| p.as_str().to_owned()),
            install_dir: r.install_dir.as_deref().map(path_text),
            needs_install: r.needs_install,
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
    /// install fetches nothing. Archives are read from file URLs and local paths only (any other
    /// scheme is `Unsupported`). No sha256, a digest mismatch or a refused archive is
    /// `InvalidConfig` naming the entry's field, and nothing is installed. Runs on a blocking
    /// thread of the core's runtime; a cancelled call lets the install finish (or clean up) there.
    #[uniffi::method(default(platform = None))]
    pub async fn install(
        &self,
        id: String,
        cache_dir: String,
        platform: Option<String>,
    ) -> Result<InstalledAgent, AcpError> {
        let registry = self.registry.clone();
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
                &LocalOnlyFetcher,
            )?;
            Ok(InstalledAgent {
                dir: path_text(&installed.dir),
                cmd: path_text(&installed.cmd),
                already_installed: installed.already_installed,
            })
        };
        let task = rt().spawn_blocking(work);
        on_rt(async move {
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

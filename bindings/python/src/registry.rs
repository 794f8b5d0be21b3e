//! `NativeRegistry`: the core's `acp_host::registry` (docs/REGISTRY.md) for the Python package's
//! `acp_host.registry`. Parsing, resolution and installs are the core's; results cross as JSON
//! text and become dataclasses in `python/acp_host/registry.py`.

use std::path::PathBuf;

use acp_host::registry::{
    DistributionKind, Installed, LocalOnlyFetcher, Platform, Registry, ResolveOptions, Resolved,
    install_binary,
};
use pyo3::prelude::*;
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
    /// `file://` URL or a local path (the core's `FileFetcher`), as JSON. Blocks, the GIL
    /// released; an install interrupted by Ctrl-C finishes (or cleans up) in the background.
    #[pyo3(signature = (id, cache_dir, *, platform=None))]
    fn install(
        &self,
        py: Python<'_>,
        id: String,
        cache_dir: PathBuf,
        platform: Option<String>,
    ) -> PyResult<String> {
        let registry = self.registry.clone();
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
                let installed = install_binary(agent, platform, &cache_dir, &LocalOnlyFetcher)?;
                Ok(installed_json(&installed))
            };
            match tokio::task::spawn_blocking(work).await {
                Ok(out) => out,
                Err(e) => Err(acp_host::Error::from(std::io::Error::other(format!(
                    "the install task failed: {e}"
                )))),
            }
        })?;
        out.map_err(|e| errors::to_py(py, &e))
    }
}

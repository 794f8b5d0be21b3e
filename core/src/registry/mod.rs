//! Launch agents listed in the ACP registry
//! (<https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json>).
//!
//! A [`Registry`] is read from JSON the embedder supplies (a file, text, or a cached copy it points
//! at): the core never fetches a registry over the network. [`Registry::resolve`] turns an agent id
//! into an [`AgentSpec`] for one of the agent's distributions:
//!
//! - `npx`: `npx -y <package> <args…>` (or `npx -y --package <package> <cmd> <args…>` when the
//!   entry names a `cmd`);
//! - `uvx`: `uvx <package> <args…>` (or `uvx --from <package> <cmd> <args…>`);
//! - `binary`: the entry's `cmd` inside `<cache_dir>/<id>/<version>/<platform>/`, once installed
//!   by [`install_binary`]. Resolution never installs: it says when an install is needed.
//!
//! The default order is: an installed binary for this platform, else npx, else uvx, else a binary
//! that still needs installing ([`ResolveOptions::prefer`] changes it). See docs/REGISTRY.md for
//! the safety rules of installs and their limits.

mod archive;
mod format;
mod install;

pub use format::{
    BinaryTarget, Distribution, DistributionKind, MAX_REGISTRY_BYTES, PackageDistribution,
    Platform, Registry, RegistryAgent,
};
pub use install::{
    DEFAULT_FILE_FETCH_STALL_TIMEOUT, DEFAULT_FILE_FETCH_TIMEOUT, DEFAULT_MAX_ARCHIVE_BYTES,
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_DIRS, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_TOTAL_BYTES, Fetcher,
    FileFetcher, InstallLimits, Installed, LocalOnlyFetcher, MAX_ENTRY_COMPONENT_BYTES,
    MAX_ENTRY_PATH_BYTES, install_binary, install_binary_with_limits, install_binary_with_progress,
};

use std::path::{Path, PathBuf};

use crate::{AgentSpec, Error, Result};

impl Registry {
    /// Resolve the agent `id` into a spec to spawn (see [`RegistryAgent::resolve`]).
    pub fn resolve(&self, id: &str, options: &ResolveOptions) -> Result<Resolved> {
        self.agent(id)?.resolve(options)
    }
}

/// How [`Registry::resolve`] chooses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOptions {
    /// The platform of `binary` distributions (`None`: [`Platform::current`]).
    pub platform: Option<Platform>,
    /// The install cache of binaries (`<cache_dir>/<id>/<version>/<platform>/`). Without it, a
    /// binary distribution can be neither found installed nor chosen. The spec's command is made
    /// absolute (against the current directory) when this is relative.
    pub cache_dir: Option<PathBuf>,
    /// The kinds to try, in order (`None`: an installed binary, npx, uvx, a binary to install).
    /// A binary listed here is chosen whether installed or not.
    pub prefer: Option<Vec<DistributionKind>>,
    /// The program run for `npx` distributions (default `npx`; on Windows maybe `npx.cmd`).
    pub npx_command: String,
    /// The program run for `uvx` distributions (default `uvx`).
    pub uvx_command: String,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            platform: None,
            cache_dir: None,
            prefer: None,
            npx_command: "npx".to_owned(),
            uvx_command: "uvx".to_owned(),
        }
    }
}

impl ResolveOptions {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn platform(mut self, platform: Platform) -> Self {
        self.platform = Some(platform);
        self
    }
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }
    pub fn prefer(mut self, kinds: impl IntoIterator<Item = DistributionKind>) -> Self {
        self.prefer = Some(kinds.into_iter().collect());
        self
    }
    pub fn npx_command(mut self, program: impl Into<String>) -> Self {
        self.npx_command = program.into();
        self
    }
    pub fn uvx_command(mut self, program: impl Into<String>) -> Self {
        self.uvx_command = program.into();
        self
    }
}

/// What [`Registry::resolve`] chose.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub agent_id: String,
    pub agent_version: String,
    pub kind: DistributionKind,
    /// What to spawn. For a binary that [`needs_install`](Self::needs_install), the command names
    /// the file the install will create: install first, then spawn.
    pub spec: AgentSpec,
    /// For a binary: the platform chosen.
    pub platform: Option<Platform>,
    /// For a binary: `<cache_dir>/<id>/<version>/<platform>/`.
    pub install_dir: Option<PathBuf>,
    /// A binary that is not installed yet: call [`install_binary`] (nothing was downloaded).
    pub needs_install: bool,
}

impl RegistryAgent {
    /// The entry's `binary` target for `platform`, if any.
    pub fn binary_for(&self, platform: Platform) -> Option<&BinaryTarget> {
        self.distribution.binary.get(platform.as_str())
    }

    /// Where the binary for `platform` is (or would be) installed under `cache_dir`. The id and
    /// version become directory names, so they must be plain names (`invalid_config` otherwise).
    pub fn install_dir(&self, cache_dir: &Path, platform: Platform) -> Result<PathBuf> {
        check_dir_name(&self.id, &self.path("id"))?;
        check_dir_name(&self.version, &self.path("version"))?;
        Ok(cache_dir
            .join(&self.id)
            .join(&self.version)
            .join(platform.as_str()))
    }

    /// Whether the binary for `platform` is installed under `cache_dir` (the install directory
    /// exists; it only ever appears complete, see [`install_binary`]).
    pub fn is_installed(&self, cache_dir: &Path, platform: Platform) -> Result<bool> {
        let dir = self.install_dir(cache_dir, platform)?;
        Ok(std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()))
    }

    /// Choose a distribution and build its spec (see [`ResolveOptions`] for the order). Never
    /// downloads or installs anything.
    pub fn resolve(&self, options: &ResolveOptions) -> Result<Resolved> {
        let platform = options.platform.or_else(Platform::current);
        let binary = platform.and_then(|p| self.binary_for(p).map(|t| (p, t)));
        let cache = options.cache_dir.as_deref();
        if let Some(order) = &options.prefer {
            if order.is_empty() {
                return Err(Error::InvalidArgument(
                    "ResolveOptions::prefer is empty".to_owned(),
                ));
            }
            for kind in order {
                match kind {
                    DistributionKind::Npx if self.distribution.npx.is_some() => {
                        return self.resolve_package(DistributionKind::Npx, options);
                    }
                    DistributionKind::Uvx if self.distribution.uvx.is_some() => {
                        return self.resolve_package(DistributionKind::Uvx, options);
                    }
                    DistributionKind::Binary => {
                        if let Some((p, t)) = binary {
                            return self.resolve_binary(p, t, cache);
                        }
                    }
                    _ => {}
                }
            }
            let wanted: Vec<&str> = order.iter().map(|k| k.as_str()).collect();
            return Err(self.nothing_for(platform, &wanted.join("/")));
        }
        // An id or version that cannot name a directory is reported only if a binary is chosen.
        if let (Some((p, t)), Some(cache)) = (binary, cache)
            && matches!(self.is_installed(cache, p), Ok(true))
        {
            return self.resolve_binary(p, t, Some(cache));
        }
        if self.distribution.npx.is_some() {
            return self.resolve_package(DistributionKind::Npx, options);
        }
        if self.distribution.uvx.is_some() {
            return self.resolve_package(DistributionKind::Uvx, options);
        }
        match binary {
            Some((p, t)) => self.resolve_binary(p, t, cache),
            None => Err(self.nothing_for(platform, "usable")),
        }
    }

    fn nothing_for(&self, platform: Option<Platform>, wanted: &str) -> Error {
        let mut offered: Vec<String> = Vec::new();
        if self.distribution.npx.is_some() {
            offered.push("npx".to_owned());
        }
        if self.distribution.uvx.is_some() {
            offered.push("uvx".to_owned());
        }
        for key in self.distribution.binary.keys() {
            offered.push(format!("binary for {key}"));
        }
        let on = platform.map_or("this platform (unknown to the registry)", Platform::as_str);
        Error::NotFound(format!(
            "agent `{}` has no {wanted} distribution for {on} (it offers: {})",
            self.id,
            if offered.is_empty() {
                "nothing".to_owned()
            } else {
                offered.join(", ")
            }
        ))
    }

    fn resolve_package(
        &self,
        kind: DistributionKind,
        options: &ResolveOptions,
    ) -> Result<Resolved> {
        let (dist, program, key) = match kind {
            DistributionKind::Uvx => (&self.distribution.uvx, &options.uvx_command, "uvx"),
            _ => (&self.distribution.npx, &options.npx_command, "npx"),
        };
        let Some(dist) = dist else {
            return Err(self.nothing_for(None, key));
        };
        let base = format!("distribution.{key}");
        check_not_option(&dist.package, &self.path(&format!("{base}.package")))?;
        let mut spec = AgentSpec::new(program.clone());
        if kind == DistributionKind::Npx {
            spec = spec.arg("-y");
        }
        match &dist.cmd {
            Some(cmd) => {
                check_not_option(cmd, &self.path(&format!("{base}.cmd")))?;
                let flag = if kind == DistributionKind::Npx {
                    "--package"
                } else {
                    "--from"
                };
                spec = spec.args([flag, dist.package.as_str(), cmd.as_str()]);
            }
            None => spec = spec.arg(dist.package.clone()),
        }
        spec = spec.args(dist.args.iter().cloned());
        for (k, v) in &dist.env {
            spec = spec.env(k.clone(), v.clone());
        }
        Ok(Resolved {
            agent_id: self.id.clone(),
            agent_version: self.version.clone(),
            kind,
            spec,
            platform: None,
            install_dir: None,
            needs_install: false,
        })
    }

    fn resolve_binary(
        &self,
        platform: Platform,
        target: &BinaryTarget,
        cache: Option<&Path>,
    ) -> Result<Resolved> {
        let Some(cache) = cache else {
            return Err(Error::InvalidArgument(format!(
                "agent `{}` resolves to a binary distribution, which needs ResolveOptions::cache_dir",
                self.id
            )));
        };
        let cmd = cmd_path(&target.cmd, &self.target_path(platform, "cmd"))?;
        let dir = self.install_dir(cache, platform)?;
        let installed = self.is_installed(cache, platform)?;
        // Absolute, so that the spec's `cwd` does not change which file runs.
        let program = std::path::absolute(dir.join(&cmd))?;
        if installed {
            check_installed_cmd(&dir, &program)?;
        }
        let command = program.into_os_string().into_string().map_err(|_| {
            Error::InvalidArgument(format!("cache_dir {} is not UTF-8", cache.display()))
        })?;
        let mut spec = AgentSpec::new(command).args(target.args.iter().cloned());
        for (k, v) in &target.env {
            spec = spec.env(k.clone(), v.clone());
        }
        Ok(Resolved {
            agent_id: self.id.clone(),
            agent_version: self.version.clone(),
            kind: DistributionKind::Binary,
            spec,
            platform: Some(platform),
            install_dir: Some(dir),
            needs_install: !installed,
        })
    }
}

/// A defence in depth for an installed binary: the command must be a file that really lies in
/// the install directory (installs refuse links, so only a later change can make this fail).
fn check_installed_cmd(dir: &Path, program: &Path) -> Result<()> {
    let (Ok(real_dir), Ok(real_program)) = (dir.canonicalize(), program.canonicalize()) else {
        return Err(Error::NotFound(format!(
            "{} is installed but has no {}; remove {} to install it again",
            dir.display(),
            program.display(),
            dir.display()
        )));
    };
    if !real_program.starts_with(&real_dir) || !real_program.is_file() {
        return Err(Error::InvalidArgument(format!(
            "{} does not resolve to a file inside {}",
            program.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The `cmd` of a binary target as a relative path inside the install directory. A `cmd` that is
/// absolute or climbs out with `..` is refused: the only program a binary entry may name is one
/// its archive installed.
pub(crate) fn cmd_path(cmd: &str, path: &str) -> Result<PathBuf> {
    let relative = relative_path(cmd).map_err(|why| invalid(path, format!("`{cmd}` {why}")))?;
    if relative.as_os_str().is_empty() {
        return Err(invalid(path, format!("`{cmd}` names no file")));
    }
    Ok(relative)
}

/// A path that must stay inside a directory: `/` and `\` separate components, `.` and empty
/// components are dropped; absolute paths, drive prefixes, `..` and NUL are refused (the `Err`
/// says why, to follow the offending text).
pub(crate) fn relative_path(text: &str) -> std::result::Result<PathBuf, &'static str> {
    if text.contains('\0') {
        return Err("contains NUL");
    }
    let normalized = text.replace('\\', "/");
    if normalized.starts_with('/') {
        return Err("is an absolute path");
    }
    let mut out = PathBuf::new();
    for part in normalized.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("climbs out with `..`"),
            // `C:`, `C:foo` (drive-relative) and `name:stream` mean something else on Windows.
            p if p.contains(':')
                && (cfg!(windows) || (out.as_os_str().is_empty() && is_drive(p))) =>
            {
                return Err("has a drive or stream prefix");
            }
            p => out.push(p),
        }
    }
    Ok(out)
}

fn is_drive(part: &str) -> bool {
    let b = part.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// An id or version that becomes one directory name of the cache.
fn check_dir_name(value: &str, path: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && !value.starts_with('.')
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            path,
            format!(
                "`{value}` cannot name a cache directory (letters, digits, `.`, `_`, `-`, `+`; not starting with `.`)"
            ),
        ))
    }
}

/// A package or command handed to npx/uvx must not be read as one of their options.
fn check_not_option(value: &str, path: &str) -> Result<()> {
    if value.is_empty() || value.starts_with('-') {
        return Err(invalid(
            path,
            format!("`{value}` is not a package or command name"),
        ));
    }
    Ok(())
}

pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> Error {
    Error::InvalidConfig {
        path: path.into(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn path_of(e: Error) -> String {
        match e {
            Error::InvalidConfig { path, .. } => path,
            other => panic!("expected invalid_config, got {other:?}"),
        }
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path("./bin/agent").unwrap(),
            Path::new("bin/agent")
        );
        assert_eq!(relative_path("a//b/./c").unwrap(), Path::new("a/b/c"));
        assert_eq!(
            relative_path("bin\\agent.exe").unwrap(),
            Path::new("bin/agent.exe")
        );
        assert_eq!(relative_path("./").unwrap(), PathBuf::new());
        assert!(relative_path("../../bin/sh").is_err());
        assert!(relative_path("a/../b").is_err());
        assert!(relative_path("/bin/sh").is_err());
        assert!(relative_path("\\bin\\sh").is_err());
        assert!(relative_path("C:/Windows/cmd.exe").is_err());
        assert!(relative_path("C:cmd.exe").is_err());
        assert!(relative_path("a\0b").is_err());
    }

    #[test]
    fn cmd_must_name_a_file_inside() {
        assert!(cmd_path("./agent", "p").is_ok());
        assert_eq!(path_of(cmd_path("./", "x.cmd").unwrap_err()), "x.cmd");
        assert_eq!(
            path_of(cmd_path("../../bin/sh", "x.cmd").unwrap_err()),
            "x.cmd"
        );
    }

    #[test]
    fn dir_names() {
        assert!(check_dir_name("gemini-cli", "p").is_ok());
        assert!(check_dir_name("1.2.3-beta.1+b7", "p").is_ok());
        for bad in ["", ".", "..", ".hidden", "a/b", "a\\b", "a b", "é"] {
            assert!(check_dir_name(bad, "p").is_err(), "{bad:?}");
        }
    }
}

//! The registry format: typed serde structs (unknown fields ignored), error paths from
//! serde_path_to_error, and the platform and distribution keys.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::invalid;
use crate::{Error, Result};

/// Registry documents larger than this are refused (the public registry is well under 1 MiB).
pub const MAX_REGISTRY_BYTES: u64 = 16 * 1024 * 1024;

/// A platform key of the `binary` distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    LinuxX86_64,
    LinuxAarch64,
    DarwinAarch64,
    DarwinX86_64,
    WindowsX86_64,
    WindowsAarch64,
}

impl Platform {
    /// Every platform the format names.
    pub const ALL: [Platform; 6] = [
        Platform::LinuxX86_64,
        Platform::LinuxAarch64,
        Platform::DarwinAarch64,
        Platform::DarwinX86_64,
        Platform::WindowsX86_64,
        Platform::WindowsAarch64,
    ];

    /// The registry's key, e.g. `linux-x86_64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "linux-x86_64",
            Platform::LinuxAarch64 => "linux-aarch64",
            Platform::DarwinAarch64 => "darwin-aarch64",
            Platform::DarwinX86_64 => "darwin-x86_64",
            Platform::WindowsX86_64 => "windows-x86_64",
            Platform::WindowsAarch64 => "windows-aarch64",
        }
    }

    /// The platform this library was built for, when the registry has a key for it.
    pub fn current() -> Option<Platform> {
        match (std::env::consts::OS, std::env::consts::ARCH) {
            ("linux", "x86_64") => Some(Platform::LinuxX86_64),
            ("linux", "aarch64") => Some(Platform::LinuxAarch64),
            ("macos", "aarch64") => Some(Platform::DarwinAarch64),
            ("macos", "x86_64") => Some(Platform::DarwinX86_64),
            ("windows", "x86_64") => Some(Platform::WindowsX86_64),
            ("windows", "aarch64") => Some(Platform::WindowsAarch64),
            _ => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Platform {
    type Err = Error;
    fn from_str(s: &str) -> Result<Platform> {
        Platform::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown platform `{s}` (expected one of {})",
                    Platform::ALL.map(Platform::as_str).join(", ")
                ))
            })
    }
}

/// Which distribution of an agent was (or should be) chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DistributionKind {
    Binary,
    Npx,
    Uvx,
}

impl DistributionKind {
    /// `binary`, `npx` or `uvx`, as in the registry.
    pub fn as_str(self) -> &'static str {
        match self {
            DistributionKind::Binary => "binary",
            DistributionKind::Npx => "npx",
            DistributionKind::Uvx => "uvx",
        }
    }
}

impl FromStr for DistributionKind {
    type Err = Error;
    /// `binary`, `npx` or `uvx` (what the faces take in `prefer`); anything else is
    /// `invalid_argument`.
    fn from_str(s: &str) -> Result<DistributionKind> {
        match s {
            "binary" => Ok(DistributionKind::Binary),
            "npx" => Ok(DistributionKind::Npx),
            "uvx" => Ok(DistributionKind::Uvx),
            _ => Err(Error::InvalidArgument(format!(
                "unknown distribution kind `{s}` (expected binary, npx or uvx)"
            ))),
        }
    }
}

impl fmt::Display for DistributionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One agent of the registry (or a single `agent.json` manifest). Fields the format adds later
/// are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryAgent {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    pub distribution: Distribution,
    /// Where the entry sits in its document (`agents[3]`; empty for a manifest), for error paths.
    #[serde(skip)]
    origin: String,
}

/// The ways an agent is distributed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<PackageDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<PackageDistribution>,
    /// By platform key (`linux-x86_64`, …). Keys this version does not know are kept and ignored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub binary: BTreeMap<String, BinaryTarget>,
}

/// An `npx` or `uvx` distribution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageDistribution {
    /// Package name, with an optional version (`@scope/pkg@1.2.3`, `pkg==1.2.3`).
    pub package: String,
    /// The package's command to run, when it is not the package's default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// A `binary` distribution for one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryTarget {
    /// URL of the archive (`.tar.gz`, `.tgz` or `.zip` are extracted).
    pub archive: String,
    /// The command inside the extracted archive (`./bin/agent`), relative to its root.
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Hex SHA-256 of the archive. Required by [`install_binary`](super::install_binary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

#[derive(Deserialize)]
struct RegistryDoc {
    #[serde(default)]
    version: Option<String>,
    agents: Vec<RegistryAgent>,
}

/// A parsed registry (or a single manifest, as a registry of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    version: Option<String>,
    agents: Vec<RegistryAgent>,
}

impl Registry {
    /// Parse a registry document (`{"version", "agents": […]}`) or a single agent manifest.
    /// A missing required field or a wrong type is `invalid_config` with the field's `path`
    /// (`agents[3].distribution.npx.package`; `$` for the document as a whole).
    pub fn from_json(text: &str) -> Result<Registry> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| invalid("$", format!("the registry is not JSON: {e}")))?;
        let registry = match &value {
            Value::Object(m) if m.contains_key("agents") => {
                let doc: RegistryDoc = decode(&value)?;
                let mut agents = doc.agents;
                for (i, a) in agents.iter_mut().enumerate() {
                    a.origin = format!("agents[{i}]");
                }
                Registry {
                    version: doc.version,
                    agents,
                }
            }
            Value::Object(m) if m.contains_key("id") => Registry {
                version: None,
                agents: vec![decode(&value)?],
            },
            _ => {
                return Err(invalid(
                    "$",
                    "expected a registry (an object with `agents`) or an agent manifest (an object with `id`)",
                ));
            }
        };
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        for a in &registry.agents {
            if let Some(first) = seen.insert(&a.id, &a.origin) {
                return Err(invalid(
                    a.path("id"),
                    format!("duplicate agent id `{}` (first at {first})", a.id),
                ));
            }
        }
        Ok(registry)
    }

    /// Read and parse a registry file (at most [`MAX_REGISTRY_BYTES`]).
    pub fn from_file(path: &Path) -> Result<Registry> {
        let with_path = |e: std::io::Error| {
            Error::from(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", path.display()),
            ))
        };
        let file = std::fs::File::open(path).map_err(with_path)?;
        let mut text = String::new();
        file.take(MAX_REGISTRY_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(with_path)?;
        if text.len() as u64 > MAX_REGISTRY_BYTES {
            return Err(invalid(
                "$",
                format!(
                    "{} is larger than {MAX_REGISTRY_BYTES} bytes",
                    path.display()
                ),
            ));
        }
        Registry::from_json(&text)
    }

    /// The document's `version`, when it has one.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// Every agent, in document order.
    pub fn agents(&self) -> &[RegistryAgent] {
        &self.agents
    }

    /// The agent with this id (`not_found` otherwise).
    pub fn agent(&self, id: &str) -> Result<&RegistryAgent> {
        self.agents
            .iter()
            .find(|a| a.id == id)
            .ok_or_else(|| Error::NotFound(format!("no agent `{id}` in the registry")))
    }
}

impl RegistryAgent {
    /// `path` of a field of this entry, e.g. `agents[3].distribution.npx.package`.
    pub(crate) fn path(&self, field: &str) -> String {
        if self.origin.is_empty() {
            field.to_owned()
        } else {
            format!("{}.{field}", self.origin)
        }
    }

    pub(crate) fn target_path(&self, platform: Platform, field: &str) -> String {
        self.path(&format!("distribution.binary.{platform}.{field}"))
    }
}

/// Deserialize with the path of what failed; a missing field's path names the field itself.
fn decode<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let message = e.inner().to_string();
        let mut path = e.path().to_string();
        if path == "." {
            path.clear();
        }
        if let Some(field) = missing_field(&message) {
            path = if path.is_empty() {
                field.to_owned()
            } else {
                format!("{path}.{field}")
            };
        }
        if path.is_empty() {
            path.push('$');
        }
        invalid(path, message)
    })
}

fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(field, _)| field)
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
    fn platforms_round_trip() {
        for p in Platform::ALL {
            assert_eq!(p.as_str().parse::<Platform>().unwrap(), p);
        }
        assert_eq!(
            "beos-m68k".parse::<Platform>().unwrap_err().kind(),
            "invalid_argument"
        );
        for k in [
            DistributionKind::Binary,
            DistributionKind::Npx,
            DistributionKind::Uvx,
        ] {
            assert_eq!(k.as_str().parse::<DistributionKind>().unwrap(), k);
        }
        assert_eq!(
            "pip".parse::<DistributionKind>().unwrap_err().kind(),
            "invalid_argument"
        );
    }

    #[test]
    fn missing_fields_name_themselves() {
        let e = Registry::from_json(r#"{"agents":[{"id":"a"}]}"#).unwrap_err();
        assert_eq!(path_of(e), "agents[0].name");
        let e = Registry::from_json(r#"{"id":"a","name":"A","version":"1.0.0"}"#).unwrap_err();
        assert_eq!(path_of(e), "description");
        let e = Registry::from_json(r#"{"agents":{}}"#).unwrap_err();
        assert_eq!(path_of(e), "agents");
        let e = Registry::from_json("[]").unwrap_err();
        assert_eq!(path_of(e), "$");
        let e = Registry::from_json("{").unwrap_err();
        assert_eq!(path_of(e), "$");
    }
}

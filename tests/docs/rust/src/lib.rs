//! What the docs' Rust blocks assume exists (`host`, `cwd`, `project_dir`, `spec`, `tool_call`,
//! `my_https_fetcher`): a scratch directory prepared by scripts/test-docs (ACP_DOC_SCRATCH: the
//! working directory, with `registry.json`, `policy.json` and `bin/` where the agent names the
//! docs use — `claude-agent-acp`, `gemini`, … — are the bundled mock agent).

// Test fixtures: a scratch directory that cannot be set up fails the test that needs it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;

use acp_host::registry::Fetcher;
use acp_host::{AgentSpec, Host, HostConfig};

/// The scratch directory and a host, per block.
#[allow(missing_debug_implementations)]
pub struct Fixture {
    pub dir: PathBuf,
    pub host: Host,
}

impl Fixture {
    /// Enters the scratch directory (scripts/test-docs runs the blocks one at a time) and opens a
    /// host with the default configuration.
    pub async fn new(name: &str) -> Fixture {
        let dir = PathBuf::from(
            std::env::var("ACP_DOC_SCRATCH")
                .expect("run through scripts/test-docs (ACP_DOC_SCRATCH)"),
        );
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["registry.json", "policy.json"] {
            std::fs::copy(dir.join("..").join(f), dir.join(f)).unwrap();
        }
        std::env::set_current_dir(&dir).unwrap();
        Fixture {
            host: Host::new(HostConfig::default()),
            dir,
        }
    }
}

/// A `Fetcher` for the docs: the scratch registry's archive URLs are files in the scratch directory
/// (any URL's last segment NAME is `$ACP_DOC_SCRATCH/NAME`).
#[derive(Debug)]
pub struct ScratchFetcher;

impl Fetcher for ScratchFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> acp_host::Result<()> {
        let name = url.rsplit('/').next().unwrap_or_default();
        let path = PathBuf::from(std::env::var("ACP_DOC_SCRATCH").unwrap()).join(name);
        let bytes = std::fs::read(&path).map_err(acp_host::Error::from)?;
        sink.write_all(&bytes).map_err(acp_host::Error::from)
    }
}

/// `/abs/REST` in a block (a path of the reader's) is `$ACP_DOC_SCRATCH/abs/REST`.
pub fn abs(path: &str) -> String {
    format!("{}{path}", std::env::var("ACP_DOC_SCRATCH").unwrap())
}

/// The mock agent's spec (what `spec` stands for in the docs).
pub fn spec() -> AgentSpec {
    AgentSpec::new("acp-mock-agent")
}

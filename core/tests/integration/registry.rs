//! The ACP registry: parsing (with error paths), resolution of each distribution kind, binary
//! installs from local archives built here (good and hostile ones), and one agent launched from
//! an installed archive. Nothing here touches the network.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(unix)]
use crate::common;

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};

use acp_host::Error;
use acp_host::registry::{
    DistributionKind, Fetcher, FileFetcher, InstallLimits, Platform, Registry, ResolveOptions,
    install_binary, install_binary_with_limits,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Hostile-archive tests install for this platform whatever the host is (nothing is run).
const P: Platform = Platform::LinuxX86_64;

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/registry/registry.json")
}

fn fixture() -> Registry {
    Registry::from_file(&fixture_path()).unwrap()
}

/// A relative path written with `/`, with the platform's separators (as the installer joins it).
fn native(rel: &str) -> PathBuf {
    rel.split('/').collect()
}

fn config_path(e: &Error) -> &str {
    match e {
        Error::InvalidConfig { path, .. } => path,
        other => panic!("expected invalid_config, got {other:?}"),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Parsing

#[test]
fn fixture_lists_agents_and_ignores_unknown_fields() {
    let reg = fixture();
    assert_eq!(reg.version(), Some("1.0.0"));
    let ids: Vec<&str> = reg.agents().iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "npx-agent",
            "uvx-agent",
            "cmd-agent",
            "binary-agent",
            "unverified-agent",
            "mixed-agent",
            "escape-agent"
        ]
    );
    let npx = reg.agent("npx-agent").unwrap();
    assert_eq!(npx.name, "Npx Agent");
    assert_eq!(npx.version, "1.2.3");
    assert_eq!(npx.authors, ["Example Author"]);
    assert_eq!(npx.license.as_deref(), Some("MIT"));
    assert_eq!(
        npx.icon.as_deref(),
        Some("https://example.invalid/npx-agent.svg")
    );
    let bin = reg.agent("binary-agent").unwrap();
    // A platform key this version does not know is kept, and never chosen.
    assert!(bin.distribution.binary.contains_key("freebsd-x86_64"));
    assert!(
        reg.agent("unverified-agent")
            .unwrap()
            .binary_for(P)
            .unwrap()
            .sha256
            .is_none()
    );
}

#[test]
fn a_single_manifest_loads_as_a_registry_of_one() {
    let text = json!({
        "id": "solo",
        "name": "Solo",
        "version": "0.1.0",
        "description": "one agent.json",
        "distribution": {"npx": {"package": "solo@0.1.0"}, "pip": {"package": "from-the-future"}}
    })
    .to_string();
    let reg = Registry::from_json(&text).unwrap();
    assert_eq!(reg.version(), None);
    assert_eq!(reg.agents().len(), 1);
    let r = reg.resolve("solo", &ResolveOptions::new()).unwrap();
    assert_eq!(r.spec.display(), "npx -y solo@0.1.0");
    // Errors in a manifest are relative to the manifest.
    let bad = json!({"id": "solo", "name": "Solo", "version": "0.1.0", "description": "d"});
    let e = Registry::from_json(&bad.to_string()).unwrap_err();
    assert_eq!(config_path(&e), "distribution");
}

fn agent_json(distribution: Value) -> Value {
    json!({"id": "a", "name": "A", "version": "1.0.0", "description": "d", "distribution": distribution})
}

#[test]
fn malformed_documents_name_the_path() {
    let good = agent_json(json!({"npx": {"package": "a"}}));
    let cases: Vec<(String, &str)> = vec![
        (
            json!({"agents": [good, {"id": "b", "name": "B", "version": "1.0.0", "description": "d",
                "distribution": {"npx": {"args": []}}}]})
            .to_string(),
            "agents[1].distribution.npx.package",
        ),
        (
            json!({"agents": [agent_json(json!({"uvx": {"package": "p", "args": ["ok", 3]}}))]})
                .to_string(),
            "agents[0].distribution.uvx.args[1]",
        ),
        (
            json!({"agents": [agent_json(json!({"binary": {"linux-x86_64": {"archive": "x"}}}))]})
                .to_string(),
            "agents[0].distribution.binary.linux-x86_64.cmd",
        ),
        (
            json!({"agents": [agent_json(json!({"npx": {"package": "p", "env": {"K": 1}}}))]})
                .to_string(),
            "agents[0].distribution.npx.env.K",
        ),
        (
            json!({"agents": [{"id": 7, "name": "A", "version": "1", "description": "d", "distribution": {}}]})
                .to_string(),
            "agents[0].id",
        ),
        (json!({"agents": {}}).to_string(), "agents"),
        (
            json!({"agents": [agent_json(json!({})), agent_json(json!({}))]}).to_string(),
            "agents[1].id",
        ),
        ("{\"agents\": [".to_owned(), "$"),
        ("[]".to_owned(), "$"),
        (json!({"version": "1"}).to_string(), "$"),
    ];
    for (text, want) in cases {
        let e = Registry::from_json(&text).unwrap_err();
        assert_eq!(e.kind(), "invalid_config", "{text}");
        assert_eq!(config_path(&e), want, "{text}: {e}");
        assert_eq!(e.data(), json!({"path": want}));
    }
}

#[test]
fn a_missing_registry_file_is_io() {
    let e = Registry::from_file(Path::new("/nonexistent/registry.json")).unwrap_err();
    assert_eq!(e.kind(), "io");
    assert!(e.to_string().contains("/nonexistent/registry.json"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Resolution

fn opts() -> ResolveOptions {
    ResolveOptions::new().platform(P)
}

#[test]
fn unknown_id_is_not_found() {
    let reg = fixture();
    assert_eq!(reg.agent("nope").unwrap_err().kind(), "not_found");
    assert_eq!(
        reg.resolve("nope", &opts()).unwrap_err().kind(),
        "not_found"
    );
}

#[test]
fn npx_resolves_to_npx_y_package_args_and_env() {
    let r = fixture().resolve("npx-agent", &opts()).unwrap();
    assert_eq!(r.kind, DistributionKind::Npx);
    assert_eq!(r.spec.command, "npx");
    assert_eq!(
        r.spec.args,
        ["-y", "@example/npx-agent@1.2.3", "--acp", "--verbose"]
    );
    assert_eq!(
        r.spec.env.get("NPX_AGENT_MODE"),
        Some(&Some("acp".to_owned()))
    );
    assert_eq!(
        (r.agent_id.as_str(), r.agent_version.as_str()),
        ("npx-agent", "1.2.3")
    );
    assert!(!r.needs_install);
    assert_eq!(r.install_dir, None);
    // The program is the embedder's to choose (npx.cmd on Windows, a pinned path, ...).
    let r = fixture()
        .resolve("npx-agent", &opts().npx_command("/opt/node/bin/npx"))
        .unwrap();
    assert_eq!(r.spec.command, "/opt/node/bin/npx");
}

#[test]
fn uvx_resolves_to_uvx_package_args_and_env() {
    let r = fixture().resolve("uvx-agent", &opts()).unwrap();
    assert_eq!(r.kind, DistributionKind::Uvx);
    assert_eq!(r.spec.display(), "uvx uvx-agent==0.4.0 acp");
    assert_eq!(
        r.spec.env.get("UVX_AGENT_LOG"),
        Some(&Some("debug".to_owned()))
    );
}

#[test]
fn a_package_cmd_runs_that_command_of_the_package() {
    let reg = fixture();
    let r = reg.resolve("cmd-agent", &opts()).unwrap();
    assert_eq!(
        r.spec.display(),
        "npx -y --package @example/tools@2.0.0 tools-acp --stdio"
    );
    let r = reg
        .resolve("cmd-agent", &opts().prefer([DistributionKind::Uvx]))
        .unwrap();
    assert_eq!(
        r.spec.display(),
        "uvx --from example-tools==2.0.0 tools-acp"
    );
}

#[test]
fn a_package_that_looks_like_an_option_is_refused() {
    let text = json!({"agents": [agent_json(json!({"npx": {"package": "--registry=https://evil.invalid"}}))]});
    let reg = Registry::from_json(&text.to_string()).unwrap();
    let e = reg.resolve("a", &opts()).unwrap_err();
    assert_eq!(config_path(&e), "agents[0].distribution.npx.package");
}

#[test]
fn binary_resolution_picks_the_platform_and_never_installs() {
    let sandbox = Sandbox::new();
    let reg = fixture();
    let r = reg
        .resolve("binary-agent", &opts().cache_dir(sandbox.cache()))
        .unwrap();
    assert_eq!(r.kind, DistributionKind::Binary);
    assert!(r.needs_install);
    assert_eq!(r.platform, Some(P));
    let dir = sandbox
        .cache()
        .join("binary-agent")
        .join("3.1.4")
        .join("linux-x86_64");
    assert_eq!(r.install_dir.as_deref(), Some(dir.as_path()));
    assert_eq!(
        r.spec.command,
        dir.join("binary-agent").to_string_lossy().as_ref()
    );
    assert_eq!(r.spec.args, ["acp"]);
    assert_eq!(
        r.spec.env.get("BINARY_AGENT_PLATFORM"),
        Some(&Some("linux-x86_64".to_owned()))
    );

    let mac = ResolveOptions::new()
        .platform(Platform::DarwinAarch64)
        .cache_dir(sandbox.cache());
    let r = reg.resolve("binary-agent", &mac).unwrap();
    let dir = sandbox
        .cache()
        .join(native("binary-agent/3.1.4/darwin-aarch64"));
    assert_eq!(
        r.spec.command,
        dir.join(native("bin/binary-agent-mac"))
            .to_string_lossy()
            .as_ref()
    );
    assert_eq!(r.spec.args, ["acp", "--mac"]);

    // No entry for this platform and nothing else: not_found, saying what there is.
    let arm_win = ResolveOptions::new()
        .platform(Platform::WindowsAarch64)
        .cache_dir(sandbox.cache());
    let e = reg.resolve("binary-agent", &arm_win).unwrap_err();
    assert_eq!(e.kind(), "not_found");
    assert!(e.to_string().contains("windows-aarch64"), "{e}");
    assert!(e.to_string().contains("binary for linux-x86_64"), "{e}");

    // The command is absolute even for a relative cache directory (the spec's cwd may differ).
    let rel = ResolveOptions::new()
        .platform(P)
        .cache_dir("relative-cache");
    let r = reg.resolve("binary-agent", &rel).unwrap();
    assert!(
        Path::new(&r.spec.command).is_absolute(),
        "{}",
        r.spec.command
    );
    assert!(!Path::new("relative-cache").exists());

    // A binary needs a cache directory to live in.
    let e = reg.resolve("binary-agent", &opts()).unwrap_err();
    assert_eq!(e.kind(), "invalid_argument");

    // Resolution wrote nothing.
    sandbox.assert_untouched();
}

#[test]
fn the_default_order_prefers_an_installed_binary_then_npx_uvx_and_a_binary_to_install() {
    let sandbox = Sandbox::new();
    let reg = fixture();
    let o = opts().cache_dir(sandbox.cache());
    // Not installed: npx wins over the binary.
    assert_eq!(
        reg.resolve("mixed-agent", &o).unwrap().kind,
        DistributionKind::Npx
    );
    // npx-agent's binary is for darwin only: on linux it is npx whatever is installed.
    assert_eq!(
        reg.resolve("npx-agent", &o).unwrap().kind,
        DistributionKind::Npx
    );
    // An explicit order.
    let r = reg
        .resolve(
            "mixed-agent",
            &o.clone()
                .prefer([DistributionKind::Uvx, DistributionKind::Npx]),
        )
        .unwrap();
    assert_eq!(r.kind, DistributionKind::Uvx);
    let r = reg
        .resolve("mixed-agent", &o.clone().prefer([DistributionKind::Binary]))
        .unwrap();
    assert_eq!((r.kind, r.needs_install), (DistributionKind::Binary, true));
    let e = reg
        .resolve("uvx-agent", &o.clone().prefer([DistributionKind::Npx]))
        .unwrap_err();
    assert_eq!(e.kind(), "not_found");
    let e = reg.resolve("uvx-agent", &o.clone().prefer([])).unwrap_err();
    assert_eq!(e.kind(), "invalid_argument");

    // Once the binary is installed, it wins.
    let dir = sandbox
        .cache()
        .join(native("mixed-agent/5.0.0/linux-x86_64"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mixed-agent"), "#!/bin/sh\n").unwrap();
    let r = reg.resolve("mixed-agent", &o).unwrap();
    assert_eq!((r.kind, r.needs_install), (DistributionKind::Binary, false));
    assert_eq!(r.spec.args, ["--acp"]);
}

#[test]
fn a_cmd_outside_the_install_dir_is_refused() {
    let sandbox = Sandbox::new();
    let reg = fixture();
    let o = opts().cache_dir(sandbox.cache());
    let e = reg.resolve("escape-agent", &o).unwrap_err();
    assert_eq!(
        config_path(&e),
        "agents[6].distribution.binary.linux-x86_64.cmd"
    );
    let mac = ResolveOptions::new()
        .platform(Platform::DarwinAarch64)
        .cache_dir(sandbox.cache());
    let e = reg.resolve("escape-agent", &mac).unwrap_err();
    assert_eq!(
        config_path(&e),
        "agents[6].distribution.binary.darwin-aarch64.cmd"
    );
    // And install refuses before fetching anything.
    let fetcher = Counting::default();
    let agent = reg.agent("escape-agent").unwrap();
    let e = install_binary(agent, P, &sandbox.cache(), &fetcher).unwrap_err();
    assert_eq!(
        config_path(&e),
        "agents[6].distribution.binary.linux-x86_64.cmd"
    );
    assert_eq!(fetcher.calls.get(), 0);
    sandbox.assert_untouched();
}

// ---------------------------------------------------------------------------------------------
// Installs

/// A temp root with `cache/` (the install cache), `outside/` (must stay empty) and `archives/`
/// (what the fetcher reads).
struct Sandbox {
    root: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap();
        for d in ["cache", "outside", "archives"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        Sandbox { root }
    }
    fn cache(&self) -> PathBuf {
        self.root.path().join("cache")
    }
    fn outside(&self) -> PathBuf {
        self.root.path().join("outside")
    }
    fn archive(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.root.path().join("archives").join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
    /// After a refused install: nothing outside the cache, nothing left in it.
    fn assert_untouched(&self) {
        assert_eq!(
            Self::listing(self.root.path()),
            ["archives", "cache", "outside"]
        );
        assert!(Self::listing(&self.outside()).is_empty(), "wrote outside");
        assert!(
            Self::listing(&self.cache()).is_empty(),
            "left in the cache: {:?}",
            Self::listing(&self.cache())
        );
    }
}

/// A FileFetcher that counts its calls.
#[derive(Default)]
struct Counting {
    calls: Cell<u32>,
}

impl Fetcher for Counting {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> acp_host::Result<()> {
        self.calls.set(self.calls.get() + 1);
        FileFetcher::new().fetch(url, sink)
    }
}

/// `file:///abs/path`, or `file:///C:/dir/a.tgz` on Windows (RFC 8089: the drive after a slash).
fn file_url(path: &Path) -> String {
    match path.to_string_lossy().replace('\\', "/") {
        p if p.starts_with('/') => format!("file://{p}"),
        p => format!("file:///{p}"),
    }
}

/// A registry of one binary agent (`tool` 1.0.0) for platform `P` (and `platform`) whose archive
/// is the local file `archive`.
fn one_binary(archive: &Path, sha256: Option<&str>, cmd: &str, platform: Platform) -> Registry {
    let mut target = json!({
        "archive": file_url(archive),
        "cmd": cmd,
        "args": ["--from-registry"],
        "env": {"TOOL_FROM_REGISTRY": "1"}
    });
    if let Some(s) = sha256 {
        target["sha256"] = json!(s);
    }
    let mut binary = serde_json::Map::new();
    binary.insert(P.as_str().to_owned(), target.clone());
    binary.insert(platform.as_str().to_owned(), target);
    let doc = json!({"version": "1", "agents": [{
        "id": "tool", "name": "Tool", "version": "1.0.0", "description": "d",
        "distribution": {"binary": binary}
    }]});
    Registry::from_json(&doc.to_string()).unwrap()
}

const ARCHIVE: &str = "agents[0].distribution.binary.linux-x86_64.archive";
const SHA: &str = "agents[0].distribution.binary.linux-x86_64.sha256";
const CMD: &str = "agents[0].distribution.binary.linux-x86_64.cmd";

/// A tar entry written header byte by header byte, so that names the `tar` builder would refuse
/// (`..`, absolute) can be made.
fn raw_entry(
    b: &mut tar::Builder<Vec<u8>>,
    kind: tar::EntryType,
    name: &str,
    link: &str,
    data: &[u8],
    mode: u32,
) {
    let mut h = tar::Header::new_old();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(data.len() as u64);
    h.set_cksum();
    b.append(&h, data).unwrap();
}

fn file(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8], mode: u32) {
    raw_entry(b, tar::EntryType::Regular, name, "", data, mode);
}

fn tar_gz(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    build(&mut b);
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn zip_of(build: impl FnOnce(&mut zip::ZipWriter<std::io::Cursor<Vec<u8>>>)) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    build(&mut w);
    w.finish().unwrap().into_inner()
}

fn zip_opts(mode: u32) -> zip::write::SimpleFileOptions {
    zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(mode)
}

fn good_tar_gz() -> Vec<u8> {
    tar_gz(|b| {
        raw_entry(b, tar::EntryType::Directory, "bin/", "", b"", 0o755);
        // Not executable in the archive: the install makes the cmd executable.
        file(b, "bin/tool", b"#!/bin/sh\necho tool\n", 0o644);
        file(b, "share/readme.txt", b"hello\n", 0o644);
        file(b, "share/helper", b"#!/bin/sh\n", 0o4755);
    })
}

/// Install a hostile or broken archive and expect `invalid_config` at `path`, with nothing left.
fn refused(bytes: &[u8], name: &str, sha: Option<&str>, limits: InstallLimits) -> (Error, Sandbox) {
    let sandbox = Sandbox::new();
    let archive = sandbox.archive(name, bytes);
    let sha = sha.map(str::to_owned).unwrap_or_else(|| sha256_hex(bytes));
    let reg = one_binary(&archive, Some(&sha), "./bin/tool", P);
    let agent = reg.agent("tool").unwrap();
    let e = install_binary_with_limits(agent, P, &sandbox.cache(), &FileFetcher::new(), &limits)
        .unwrap_err();
    sandbox.assert_untouched();
    (e, sandbox)
}

fn assert_refused_archive(e: &Error, needle: &str) {
    assert_eq!(config_path(e), ARCHIVE, "{e}");
    assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
}

#[test]
fn a_tar_gz_installs_atomically_and_a_second_install_is_a_no_op() {
    let sandbox = Sandbox::new();
    let bytes = good_tar_gz();
    let archive = sandbox.archive("tool.tar.gz", &bytes);
    let reg = one_binary(&archive, Some(&sha256_hex(&bytes)), "./bin/tool", P);
    let agent = reg.agent("tool").unwrap();
    let o = opts().cache_dir(sandbox.cache());
    assert!(reg.resolve("tool", &o).unwrap().needs_install);

    let fetcher = Counting::default();
    let installed = install_binary(agent, P, &sandbox.cache(), &fetcher).unwrap();
    let dir = sandbox.cache().join(native("tool/1.0.0/linux-x86_64"));
    assert_eq!(installed.dir, dir);
    assert_eq!(installed.cmd, dir.join(native("bin/tool")));
    assert!(!installed.already_installed);
    assert_eq!(fetcher.calls.get(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.join(native("bin/tool"))).unwrap(),
        "#!/bin/sh\necho tool\n"
    );
    // No staging or download files next to the install.
    assert_eq!(
        Sandbox::listing(&sandbox.cache().join(native("tool/1.0.0"))),
        ["linux-x86_64"]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode("bin/tool"), 0o755, "cmd made executable");
        assert_eq!(mode("share/readme.txt"), 0o644);
        assert_eq!(mode("share/helper"), 0o755, "setuid dropped");
    }

    let r = reg.resolve("tool", &o).unwrap();
    assert_eq!((r.kind, r.needs_install), (DistributionKind::Binary, false));
    assert_eq!(
        r.spec.command,
        dir.join(native("bin/tool")).to_string_lossy().as_ref()
    );
    assert_eq!(r.spec.args, ["--from-registry"]);

    let again = install_binary(agent, P, &sandbox.cache(), &fetcher).unwrap();
    assert!(again.already_installed);
    assert_eq!(fetcher.calls.get(), 1, "a second install fetches nothing");
}

#[test]
fn a_zip_installs() {
    let sandbox = Sandbox::new();
    let bytes = zip_of(|w| {
        w.add_directory("bin/", zip_opts(0o755)).unwrap();
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(b"#!/bin/sh\n").unwrap();
        w.start_file("LICENSE", zip_opts(0o644)).unwrap();
        w.write_all(b"MIT\n").unwrap();
    });
    let archive = sandbox.archive("tool.zip", &bytes);
    let reg = one_binary(&archive, Some(&sha256_hex(&bytes)), "bin/tool", P);
    let installed = install_binary(
        reg.agent("tool").unwrap(),
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
    )
    .unwrap();
    assert!(installed.cmd.is_file());
    assert_eq!(
        std::fs::read_to_string(installed.dir.join("LICENSE")).unwrap(),
        "MIT\n"
    );
}

#[test]
fn an_entry_without_sha256_is_never_fetched() {
    let sandbox = Sandbox::new();
    let reg = fixture();
    let fetcher = Counting::default();
    let e = install_binary(
        reg.agent("unverified-agent").unwrap(),
        P,
        &sandbox.cache(),
        &fetcher,
    )
    .unwrap_err();
    assert_eq!(
        config_path(&e),
        "agents[4].distribution.binary.linux-x86_64.sha256"
    );
    assert!(
        e.to_string()
            .contains("never installs a download it cannot verify"),
        "{e}"
    );
    assert_eq!(fetcher.calls.get(), 0);
    sandbox.assert_untouched();
}

#[test]
fn a_wrong_sha256_stops_before_extraction() {
    let bytes = good_tar_gz();
    let (e, _s) = refused(
        &bytes,
        "t.tgz",
        Some(&sha256_hex(b"other")),
        InstallLimits::default(),
    );
    assert_eq!(config_path(&e), SHA);
    let m = e.to_string();
    assert!(
        m.contains("sha256") && m.contains(&sha256_hex(b"other")),
        "{m}"
    );
    // The actual digest of what was fetched is not told.
    assert!(!m.contains(&sha256_hex(&bytes)), "{m}");
}

/// A document that names some unrelated local file with a made-up digest learns nothing about
/// that file from the error: not its digest, its size or its content.
#[test]
fn a_digest_mismatch_reveals_nothing_of_the_file() {
    let secret = b"password=hunter2\n";
    let (e, _s) = refused(
        secret,
        "secret.txt",
        Some(&sha256_hex(b"a guess")),
        InstallLimits::default(),
    );
    assert_eq!(config_path(&e), SHA);
    let m = e.to_string();
    let digest = sha256_hex(secret);
    for leak in [
        digest.clone(),
        digest.to_ascii_uppercase(),
        digest[..16].to_owned(),
        "hunter2".to_owned(),
        format!("{} bytes", secret.len()),
    ] {
        assert!(!m.contains(&leak), "{m} reveals {leak:?}");
    }
    assert!(m.contains("does not have the sha256"), "{m}");
}

#[test]
fn a_parent_dir_entry_is_refused() {
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"ok", 0o755);
        file(b, "../../../../evil", b"evil", 0o644);
    });
    let (e, s) = refused(&bytes, "t.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "`..`");
    assert!(!s.root.path().join("evil").exists());

    let bytes = zip_of(|w| {
        w.start_file("../../../../evil", zip_opts(0o644)).unwrap();
        w.write_all(b"evil").unwrap();
    });
    let (e, s) = refused(&bytes, "t.zip", None, InstallLimits::default());
    assert_refused_archive(&e, "`..`");
    assert!(!s.root.path().join("evil").exists());
}

#[test]
fn an_absolute_entry_is_refused() {
    let probe = Sandbox::new();
    let target = probe.outside().join("abs");
    let target = target.to_str().unwrap();
    let bytes = tar_gz(|b| file(b, target, b"evil", 0o644));
    // `C:\dir\abs` on Windows: refused for its drive prefix.
    let why = if cfg!(windows) { "drive" } else { "absolute" };
    let (e, _s) = refused(&bytes, "t.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, why);
    let bytes = zip_of(|w| {
        w.start_file(target, zip_opts(0o644)).unwrap();
        w.write_all(b"evil").unwrap();
    });
    let (e, _s) = refused(&bytes, "t.zip", None, InstallLimits::default());
    assert_refused_archive(&e, why);
    assert!(!Path::new(target).exists());
}

#[test]
fn symlinks_and_hard_links_are_refused() {
    for (kind, what) in [
        (tar::EntryType::Symlink, "symlink"),
        (tar::EntryType::Link, "hard link"),
    ] {
        let bytes = tar_gz(|b| raw_entry(b, kind, "bin/tool", "/etc/passwd", b"", 0o777));
        let (e, _s) = refused(&bytes, "t.tgz", None, InstallLimits::default());
        assert_refused_archive(&e, what);
        assert!(e.to_string().contains("/etc/passwd"), "{e}");
    }
    let bytes = zip_of(|w| {
        w.add_symlink("bin/tool", "/etc/passwd", zip_opts(0o777))
            .unwrap()
    });
    let (e, _s) = refused(&bytes, "t.zip", None, InstallLimits::default());
    assert_refused_archive(&e, "symlink");
}

#[test]
fn a_file_written_through_a_symlink_is_refused() {
    let probe = Sandbox::new();
    let outside = probe.outside();
    let outside = outside.to_str().unwrap();
    let bytes = tar_gz(|b| {
        raw_entry(b, tar::EntryType::Symlink, "bin", outside, b"", 0o777);
        file(b, "bin/tool", b"pwned", 0o755);
    });
    let (e, _s) = refused(&bytes, "t.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "symlink");
    let bytes = zip_of(|w| {
        w.add_symlink("bin", outside, zip_opts(0o777)).unwrap();
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(b"pwned").unwrap();
    });
    let (e, _s) = refused(&bytes, "t.zip", None, InstallLimits::default());
    assert_refused_archive(&e, "symlink");
    assert!(Sandbox::listing(&probe.outside()).is_empty());
}

#[test]
fn a_truncated_archive_is_refused() {
    // Incompressible content, so that half the archive is half the data.
    let data: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let bytes = tar_gz(|b| file(b, "bin/tool", &data, 0o755));
    let cut = &bytes[..bytes.len() / 2];
    let (e, _s) = refused(cut, "t.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "corrupt or truncated");

    let bytes = zip_of(|w| {
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(&data).unwrap();
    });
    let cut = &bytes[..bytes.len() - 30];
    let (e, _s) = refused(cut, "t.zip", None, InstallLimits::default());
    assert_refused_archive(&e, "corrupt or truncated");
}

#[test]
fn an_archive_that_expands_past_the_limit_is_refused() {
    let limits = InstallLimits {
        max_total_bytes: 1 << 20,
        ..InstallLimits::default()
    };
    let zeros = vec![0u8; 8 << 20];
    let bytes = zip_of(|w| {
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(&zeros).unwrap();
    });
    assert!(bytes.len() < 64 * 1024, "a zip bomb in miniature");
    let (e, _s) = refused(&bytes, "bomb.zip", None, limits);
    assert_refused_archive(&e, "max_total_bytes");

    let bytes = tar_gz(|b| file(b, "bin/tool", &zeros, 0o755));
    let (e, _s) = refused(&bytes, "bomb.tgz", None, limits);
    assert_refused_archive(&e, "max_total_bytes");

    let many = tar_gz(|b| {
        for i in 0..20 {
            file(b, &format!("f{i}"), b"", 0o644);
        }
    });
    let few = InstallLimits {
        max_entries: 10,
        ..InstallLimits::default()
    };
    let (e, _s) = refused(&many, "many.tgz", None, few);
    assert_refused_archive(&e, "max_entries");

    let small_download = InstallLimits {
        max_archive_bytes: 100,
        ..InstallLimits::default()
    };
    let (e, _s) = refused(&good_tar_gz(), "t.tgz", None, small_download);
    assert_refused_archive(&e, "max_archive_bytes");
}

/// `d/d/…/<leaf>`: `depth` components in all.
fn deep_name(top: &str, depth: usize, leaf: &str) -> String {
    let mut name = format!("{top}/");
    name.push_str(&"d/".repeat(depth.saturating_sub(2)));
    name.push_str(leaf);
    name
}

/// A tar entry through the builder, which writes a GNU long-name record for names past 100 bytes.
fn long_file(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    b.append_data(&mut h, name, data).unwrap();
}

/// The review's case: entries 2,000 components deep. Each used to create ~2,000 directories
/// (nine of them, 18,000) and the install succeeded, leaving a tree past PATH_MAX.
#[test]
fn an_entry_thousands_of_directories_deep_is_refused() {
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"#!/bin/sh\n", 0o755);
        for i in 0..9 {
            long_file(b, &deep_name(&format!("t{i}"), 2000, "x"), b"x");
        }
    });
    let (e, _s) = refused(&bytes, "deep.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "2000 path components deep");
    assert_refused_archive(&e, "InstallLimits::max_depth");
    assert!(
        e.to_string().len() < 1000,
        "the 4 KB name is not echoed whole: {e}"
    );

    let bytes = zip_of(|w| {
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(b"#!/bin/sh\n").unwrap();
        w.start_file(deep_name("t", 2000, "x"), zip_opts(0o644))
            .unwrap();
        w.write_all(b"x").unwrap();
    });
    let (e, _s) = refused(&bytes, "deep.zip", None, InstallLimits::default());
    assert_refused_archive(&e, "InstallLimits::max_depth");

    // A directory entry counts the same; a custom bound is honoured.
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"#!/bin/sh\n", 0o755);
        raw_entry(b, tar::EntryType::Directory, "a/b/c/d/", "", b"", 0o755);
    });
    let shallow = InstallLimits {
        max_depth: 3,
        ..InstallLimits::default()
    };
    let (e, _s) = refused(&bytes, "dir.tgz", None, shallow);
    assert_refused_archive(&e, "4 path components deep");
}

/// Entries within the depth bound, but many of them, each making its own chain of directories:
/// the directories created are bounded, not only the entries.
#[test]
fn the_directories_an_archive_creates_are_bounded() {
    // 300 directory entries 40 deep: 12,000 directories from 300 entries.
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"#!/bin/sh\n", 0o755);
        for i in 0..300 {
            let name = deep_name(&format!("t{i}"), 40, "x/");
            raw_entry(b, tar::EntryType::Directory, &name, "", b"", 0o755);
        }
    });
    let (e, _s) = refused(&bytes, "dirs.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "more than 10000 directories (InstallLimits::max_dirs)");

    let bytes = zip_of(|w| {
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(b"#!/bin/sh\n").unwrap();
        for i in 0..5 {
            w.add_directory(format!("d{i}/"), zip_opts(0o755)).unwrap();
        }
    });
    let few = InstallLimits {
        max_dirs: 5,
        ..InstallLimits::default()
    };
    let (e, _s) = refused(&bytes, "dirs.zip", None, few);
    assert_refused_archive(&e, "entry `d4/` would create more than 5 directories");
}

#[test]
fn a_long_path_component_or_path_is_refused() {
    let long = "x".repeat(256);
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"#!/bin/sh\n", 0o755);
        long_file(b, &format!("share/{long}"), b"x");
    });
    let (e, _s) = refused(&bytes, "long.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "a path component of 256 bytes");
    assert_refused_archive(&e, "MAX_ENTRY_COMPONENT_BYTES");

    let bytes = zip_of(|w| {
        w.start_file("bin/tool", zip_opts(0o755)).unwrap();
        w.write_all(b"#!/bin/sh\n").unwrap();
        w.add_directory(format!("{long}/"), zip_opts(0o755))
            .unwrap();
    });
    let (e, _s) = refused(&bytes, "long.zip", None, InstallLimits::default());
    assert_refused_archive(&e, "MAX_ENTRY_COMPONENT_BYTES");

    // Six components of 200 bytes: each fine, 1,205 bytes in all.
    let part = "y".repeat(200);
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"#!/bin/sh\n", 0o755);
        long_file(b, &[part.as_str(); 6].join("/"), b"x");
    });
    let (e, _s) = refused(&bytes, "path.tgz", None, InstallLimits::default());
    assert_refused_archive(&e, "a path of 1205 bytes");
    assert_refused_archive(&e, "MAX_ENTRY_PATH_BYTES");
}

#[test]
fn entries_at_the_path_bounds_install() {
    let sandbox = Sandbox::new();
    let name = format!("{}/{}", "z".repeat(255), deep_name("t", 63, "f"));
    assert_eq!(name.split('/').count(), 64);
    let bytes = tar_gz(|b| {
        file(b, "bin/tool", b"#!/bin/sh\n", 0o755);
        long_file(b, &name, b"at the bounds");
    });
    let archive = sandbox.archive("bounds.tgz", &bytes);
    let reg = one_binary(&archive, Some(&sha256_hex(&bytes)), "./bin/tool", P);
    let installed = install_binary(
        reg.agent("tool").unwrap(),
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(installed.dir.join(&name)).unwrap(),
        b"at the bounds"
    );
}

/// Run an install on a thread and wait at most 20 s: an install that blocks (the old behaviour
/// for a FIFO) fails the test instead of hanging it.
#[cfg(unix)]
fn install_within(
    archive: &Path,
    cache: PathBuf,
    limits: InstallLimits,
) -> (
    acp_host::Result<acp_host::registry::Installed>,
    std::time::Duration,
) {
    let reg = one_binary(archive, Some(&sha256_hex(b"x")), "./bin/tool", P);
    let (tx, rx) = std::sync::mpsc::channel();
    let started = std::time::Instant::now();
    std::thread::spawn(move || {
        let agent = reg.agent("tool").unwrap();
        let _ = tx.send(install_binary_with_limits(
            agent,
            P,
            &cache,
            &FileFetcher::new(),
            &limits,
        ));
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the install did not return within 20 s");
    (r, started.elapsed())
}

#[cfg(unix)]
fn assert_not_a_file(r: acp_host::Result<acp_host::registry::Installed>, what: &str) {
    let e = r.unwrap_err();
    assert_eq!(e.kind(), "invalid_argument", "{e}");
    let m = e.to_string();
    assert!(
        m.contains("is not a regular file") && m.contains(what),
        "{m} lacks {what}"
    );
}

/// A document naming a FIFO as its archive: refused at once (it used to block the install until
/// a writer came), nothing left behind.
#[cfg(unix)]
#[test]
fn a_fifo_is_refused_promptly() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.path().join("archives/tool.tgz");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (r, took) = install_within(&fifo, sandbox.cache(), InstallLimits::default());
    assert_not_a_file(r, "FIFO");
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    sandbox.assert_untouched();
}

/// Devices, a directory, and the test's own stdin: refused, never read. (A small archive limit,
/// so that the old code's read of /dev/zero stopped quickly too.)
#[cfg(unix)]
#[test]
fn a_device_a_directory_or_stdin_is_refused() {
    let sandbox = Sandbox::new();
    let small = InstallLimits {
        max_archive_bytes: 1 << 20,
        ..InstallLimits::default()
    };
    for dev in ["/dev/zero", "/dev/null"] {
        let (r, _) = install_within(Path::new(dev), sandbox.cache(), small);
        assert_not_a_file(r, "character device");
        sandbox.assert_untouched();
    }
    let (r, _) = install_within(&sandbox.outside(), sandbox.cache(), small);
    assert_not_a_file(r, "directory");
    sandbox.assert_untouched();

    // The test's own stdin, unless it is a regular file (then reading it is reading a file).
    let stdin = nix::sys::stat::fstat(std::io::stdin()).unwrap();
    let regular = stdin.st_mode & nix::libc::S_IFMT == nix::libc::S_IFREG;
    if !regular {
        let (r, _) = install_within(Path::new("/dev/stdin"), sandbox.cache(), small);
        assert!(r.unwrap_err().to_string().contains("is not a regular file"));
        sandbox.assert_untouched();
    }
}

/// `/dev/stdin` as a pipe, deterministically: the embedder's input is left unread.
#[cfg(target_os = "linux")]
#[test]
fn a_pipe_named_by_the_document_is_not_read() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let sandbox = Sandbox::new();
    // std's pipe is close-on-exec: an agent another test forks meanwhile does not inherit
    // the write end (the read below would then wait for that agent's exit).
    let (mut rd, mut wr) = std::io::pipe().unwrap();
    wr.write_all(b"the embedder's input").unwrap();
    drop(wr);
    let path = PathBuf::from(format!("/proc/self/fd/{}", rd.as_raw_fd()));
    let (r, _) = install_within(&path, sandbox.cache(), InstallLimits::default());
    assert_not_a_file(r, "FIFO");
    sandbox.assert_untouched();
    let mut left = String::new();
    rd.read_to_string(&mut left).unwrap();
    assert_eq!(left, "the embedder's input");
}

#[test]
fn an_archive_without_the_cmd_is_refused() {
    let bytes = tar_gz(|b| file(b, "bin/other", b"x", 0o755));
    let (e, _s) = refused(&bytes, "t.tgz", None, InstallLimits::default());
    assert_eq!(config_path(&e), CMD);
    // A directory named like the cmd is no better.
    let bytes = tar_gz(|b| raw_entry(b, tar::EntryType::Directory, "bin/tool/", "", b"", 0o755));
    let (e, _s) = refused(&bytes, "t.tgz", None, InstallLimits::default());
    assert_eq!(config_path(&e), CMD);
}

#[test]
fn unsupported_sources_and_formats() {
    let sandbox = Sandbox::new();
    let doc = json!({"agents": [{"id": "tool", "name": "T", "version": "1.0.0", "description": "d",
        "distribution": {"binary": {"linux-x86_64": {
            "archive": "https://example.invalid/tool.tar.gz", "cmd": "tool",
            "sha256": sha256_hex(b"x")}}}}]});
    let reg = Registry::from_json(&doc.to_string()).unwrap();
    let e = install_binary(
        reg.agent("tool").unwrap(),
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), "unsupported");
    sandbox.assert_untouched();

    let bz = b"BZh91AY&SY not really bzip2";
    let (e, _s) = refused_kind(bz, "t.tar.bz2");
    assert_eq!(e.kind(), "unsupported");
    let (e, _s) = refused_kind(b"\x7fELF raw binary", "tool");
    assert_eq!(e.kind(), "unsupported");
}

fn refused_kind(bytes: &[u8], name: &str) -> (Error, Sandbox) {
    let sandbox = Sandbox::new();
    let archive = sandbox.archive(name, bytes);
    let reg = one_binary(&archive, Some(&sha256_hex(bytes)), "tool", P);
    let e = install_binary(
        reg.agent("tool").unwrap(),
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
    )
    .unwrap_err();
    sandbox.assert_untouched();
    (e, sandbox)
}

#[test]
fn no_binary_for_the_platform_is_not_found() {
    let sandbox = Sandbox::new();
    let reg = fixture();
    let e = install_binary(
        reg.agent("npx-agent").unwrap(),
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), "not_found");
    sandbox.assert_untouched();
}

// ---------------------------------------------------------------------------------------------
// End to end

/// An archive whose cmd is a shell script that execs the mock agent, installed from a file://
/// URL, resolved, spawned, and one prompt turn.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_binary_agent_runs_a_turn() {
    use acp_host::{Host, HostConfig, SessionOptions};
    let Some(platform) = Platform::current() else {
        return; // The registry names no binary for this host.
    };
    let mock = common::mock_agent();
    let script = format!(
        "#!/bin/sh\n[ \"$TOOL_FROM_REGISTRY\" = 1 ] || exit 3\n[ \"$1\" = --from-registry ] || exit 4\nshift\nexec '{}' \"$@\"\n",
        mock.display()
    );
    let bytes = tar_gz(|b| file(b, "agent/run.sh", script.as_bytes(), 0o644));
    let sandbox = Sandbox::new();
    let archive = sandbox.archive("agent.tar.gz", &bytes);
    let reg = one_binary(
        &archive,
        Some(&sha256_hex(&bytes)),
        "./agent/run.sh",
        platform,
    );
    let cache = sandbox.cache();
    let agent = reg.agent("tool").unwrap().clone();
    let installed = tokio::task::spawn_blocking(move || {
        install_binary(&agent, platform, &cache, &FileFetcher::new())
    })
    .await
    .unwrap()
    .unwrap();
    assert!(!installed.already_installed);

    let r = reg
        .resolve("tool", &ResolveOptions::new().cache_dir(sandbox.cache()))
        .unwrap();
    assert_eq!((r.kind, r.needs_install), (DistributionKind::Binary, false));
    let spec = r
        .spec
        .env_remove("ACP_MOCK_CREDENTIALS")
        .env_remove("ACP_MOCK_LOGIN_FAIL");

    let host = Host::new(HostConfig::default());
    let events = host.events().unwrap();
    let drain = tokio::spawn(async move { while events.next().await.is_some() {} });
    let agent = host.spawn(spec).await.unwrap();
    assert_eq!(agent.info().unwrap().name(), Some("acp-mock-agent"));
    let session = agent
        .new_session(SessionOptions::new(common::tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("hello").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let exit = agent.shutdown().await;
    assert_eq!(exit.code, Some(0));
    host.shutdown().await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
}

#[test]
fn an_install_reports_its_download_and_extraction() {
    let sandbox = Sandbox::new();
    let bytes = good_tar_gz();
    let archive = sandbox.archive("tool.tar.gz", &bytes);
    let reg = one_binary(&archive, Some(&sha256_hex(&bytes)), "./bin/tool", P);
    let agent = reg.agent("tool").unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let sink = |p: &acp_host::progress::Progress| seen.lock().unwrap().push(p.to_json());
    let limits = InstallLimits::default();
    acp_host::registry::install_binary_with_progress(
        agent,
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
        &limits,
        &sink,
    )
    .unwrap();
    let steps: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["phase"].as_str().unwrap(),
                p["stage"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "download started",
            "download done",
            "extract started",
            "extract done"
        ]
    );
    assert_eq!(seen.lock().unwrap()[1]["bytes"], bytes.len() as u64);

    // A digest mismatch: the download is reported failed, with why; nothing is extracted.
    let sandbox = Sandbox::new();
    let archive = sandbox.archive("tool.tar.gz", &bytes);
    let reg = one_binary(&archive, Some(&"0".repeat(64)), "./bin/tool", P);
    seen.lock().unwrap().clear();
    let sink = |p: &acp_host::progress::Progress| seen.lock().unwrap().push(p.to_json());
    acp_host::registry::install_binary_with_progress(
        reg.agent("tool").unwrap(),
        P,
        &sandbox.cache(),
        &FileFetcher::new(),
        &limits,
        &sink,
    )
    .unwrap_err();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1]["stage"], "failed");
    assert!(
        seen[1]["message"].as_str().unwrap().contains("sha256"),
        "{}",
        seen[1]
    );
}

//! Environment variables of a request (`terminal/create`'s `env`): the built-in deny list and
//! name matching.
//!
//! An allow rule for `git status` means little if the request may also set
//! `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='sh -c …'`, or
//! `bash -c true` with `BASH_ENV=/tmp/x`: the program then loads or runs code that no rule looked
//! at. [`BUILTIN_ENV_DENY`] names those variables; docs/PERMISSIONS.md explains each group.

use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Variables that make a program load or run other code, or read its configuration (which can
/// name commands) from somewhere else. Globs, compared case-insensitively. A request that sets
/// one is denied unless an allow rule matching the request names it in `env`.
pub const BUILTIN_ENV_DENY: &[&str] = &[
    // Dynamic loaders: preload or redirect shared libraries (glibc, musl, macOS, AIX, HP-UX),
    // glibc's iconv modules (the pkexec CVE-2021-4034 vector).
    "LD_*",
    "DYLD_*",
    "LIBPATH",
    "SHLIB_PATH",
    "GCONV_PATH",
    // Where bare program names are looked up: with a workspace PATH, `git` is the agent's binary.
    "PATH",
    // Shells: startup files and code run at startup or per command, exported functions
    // (`BASH_FUNC_git%%` replaces `git` inside `bash -c`), option imports (`SHELLOPTS=xtrace`
    // with a `PS4` command substitution), zsh/ksh function paths, fish/others' config dirs.
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    "BASH_FUNC_*",
    "BASH_LOADABLES_PATH",
    "FPATH",
    "SHELL",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    // git: config from the environment (core.fsmonitor, core.sshCommand, aliases, hooks), other
    // repositories and templates (hooks), helper programs, trace files (writes anywhere).
    "GIT_CONFIG*",
    "GIT_SSH*",
    "GIT_EXEC_PATH",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_ALLOW_PROTOCOL",
    "GIT_TRACE*",
    // Programs other programs start: pagers, editors, browsers, password prompts, less filters.
    "PAGER",
    "MANPAGER",
    "*_PAGER",
    "EDITOR",
    "VISUAL",
    "*_EDITOR",
    "*ASKPASS",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "VIMINIT",
    "EXINIT",
    // Interpreters and runtimes: options that load code (`--require`, `-M`, `-javaagent`),
    // module search paths, startup scripts.
    "NODE_OPTIONS",
    "NODE_PATH",
    "ELECTRON_RUN_AS_NODE",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PYTHONUSERBASE",
    "PYTHONBREAKPOINT",
    "PYTHONWARNINGS",
    "PYTHONPLATLIBDIR",
    "PYTHONEXECUTABLE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "JAVA_OPTS",
    "JAVA_HOME",
    "CLASSPATH",
    "MAVEN_OPTS",
    "GRADLE_OPTS",
    "GRADLE_USER_HOME",
    "LUA_INIT*",
    "LUA_PATH*",
    "LUA_CPATH*",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "TCLLIBPATH",
    "R_PROFILE*",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "GTK_MODULES",
    "GTK_PATH",
    "QT_PLUGIN_PATH",
    // Build tools: compilers, wrappers, flags (`-fplugin=`, `-C linker=`, `-toolexec=`),
    // makefiles, toolchains and their config homes.
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "CGO_*",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKEFILES",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTUP_TOOLCHAIN",
    "RUSTUP_HOME",
    "CARGO_HOME",
    "CARGO_BUILD_*",
    "CARGO_TARGET_*",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_ALIAS_*",
    // Package managers: config that runs scripts or swaps what gets installed.
    "NPM_CONFIG_*",
    "YARN_*",
    "PIP_CONFIG_FILE",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    // CLIs whose config files name programs to run (credential helpers, exec plugins).
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "AWS_CONFIG_FILE",
];

/// The description of a verdict of the built-in env deny for `name`.
pub(crate) fn builtin_rule(name: &str) -> String {
    format!("deny env {name} (built-in)")
}

/// Compile env-name globs: case-insensitive (Windows names are; and `Path` must not slip past
/// `PATH`), `*` matching anything.
pub(crate) fn env_glob_set<S: AsRef<str>>(patterns: &[S]) -> Result<GlobSet, (usize, String)> {
    let mut builder = GlobSetBuilder::new();
    for (i, pattern) in patterns.iter().enumerate() {
        let pattern = pattern.as_ref();
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| (i, format!("bad glob {pattern:?}: {}", e.kind())))?;
        builder.add(glob);
    }
    builder.build().map_err(|e| (0, format!("bad glob: {e}")))
}

/// The built-in list, compiled once. `None` if it failed to compile (it does not; a test checks),
/// in which case every variable counts as denied.
fn builtin_set() -> Option<&'static GlobSet> {
    static SET: OnceLock<Option<GlobSet>> = OnceLock::new();
    SET.get_or_init(|| env_glob_set(BUILTIN_ENV_DENY).ok())
        .as_ref()
}

/// Whether `name` (in any of its [`name_forms`]) is on the built-in list.
pub(crate) fn builtin_denies(name: &str) -> bool {
    match builtin_set() {
        Some(set) => name_forms(name).any(|f| set.is_match(f)),
        None => true,
    }
}

/// The forms an env name is matched in: as given, and the part before a `=` (a name `A=B` with
/// value `C` reaches the process as `A=B=C`, that is variable `A`).
pub(crate) fn name_forms(name: &str) -> impl Iterator<Item = &str> {
    let cut = name
        .get(1..)
        .and_then(|tail| tail.find('='))
        .map(|i| &name[..i + 1]);
    std::iter::once(name).chain(cut)
}

/// A rule's `env` criterion against the names a request sets. Restrictive rules (`deny`, `ask`)
/// match if any name matches; an allow rule lists what the request may set, so it matches if
/// every name does (a request that sets none satisfies it).
pub(crate) fn env_matches(set: &GlobSet, names: &[String], restrictive: bool) -> bool {
    let hit = |n: &String| name_forms(n).any(|f| set.is_match(f));
    if restrictive {
        names.iter().any(hit)
    } else {
        names.iter().all(|n| name_forms(n).all(|f| set.is_match(f)))
    }
}

/// `hardDeny.env` (and [`crate::permission::policy::Policy::add_hard_deny_env`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct EnvPatterns {
    pub(crate) patterns: Vec<String>,
    set: GlobSet,
}

impl EnvPatterns {
    /// Compile `patterns`; an error is `(index, message)`.
    pub(crate) fn new(patterns: Vec<String>) -> Result<EnvPatterns, (usize, String)> {
        let set = env_glob_set(&patterns)?;
        Ok(EnvPatterns { patterns, set })
    }

    /// The first pattern matching any form of any of `names`, with the name.
    pub(crate) fn first_match<'n>(&self, names: &'n [String]) -> Option<(&str, &'n str)> {
        for name in names {
            for form in name_forms(name) {
                if let Some(i) = self.set.matches(form).first() {
                    return self.patterns.get(*i).map(|p| (p.as_str(), name.as_str()));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_list_compiles_and_spares_harmless_names() {
        assert!(env_glob_set(BUILTIN_ENV_DENY).is_ok());
        for name in [
            "LD_PRELOAD",
            "ld_preload",
            "DYLD_INSERT_LIBRARIES",
            "BASH_ENV",
            "BASH_FUNC_git%%",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_SSH_COMMAND",
            "Path",
            "NODE_OPTIONS",
            "GH_PAGER",
            "SUDO_ASKPASS",
            "npm_config_script_shell",
            "LD_PRELOAD=/tmp/x.so:",
        ] {
            assert!(builtin_denies(name), "{name}");
        }
        for name in [
            "TERM",
            "LANG",
            "LC_ALL",
            "CI",
            "RUST_LOG",
            "RUST_BACKTRACE",
            "NO_COLOR",
            "CARGO_TERM_COLOR",
            "PYTHONUNBUFFERED",
            "GIT_TERMINAL_PROMPT",
            "GIT_AUTHOR_NAME",
            "NODE_ENV",
            "COLUMNS",
            "TZ",
        ] {
            assert!(!builtin_denies(name), "{name}");
        }
    }

    #[test]
    fn names_with_an_equals_sign_are_matched_by_their_prefix() {
        assert_eq!(name_forms("A=B").collect::<Vec<_>>(), vec!["A=B", "A"]);
        assert_eq!(name_forms("=C:").collect::<Vec<_>>(), vec!["=C:"]);
        assert_eq!(name_forms("PATH").collect::<Vec<_>>(), vec!["PATH"]);
    }
}

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
    // git: every `GIT_*` variable except the data-only ones in [`BUILTIN_ENV_SPARED`]. Derived
    // from git(1) "ENVIRONMENT VARIABLES" rather than from examples: config from the environment
    // (`GIT_CONFIG_COUNT`/`KEY`/`VALUE`, `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_GLOBAL`), other
    // repositories, object stores, templates (hooks), helper programs (`GIT_SSH_COMMAND`,
    // `GIT_EXTERNAL_DIFF`, `GIT_PROXY_COMMAND`, `GIT_ASKPASS`), trace and redirect files (writes
    // anywhere), the `ext::` transport, and the test knobs (`GIT_TEST_FSMONITOR` runs a command).
    "GIT_*",
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
    // Interpreters and runtimes, each re-derived from its documented variables: whole families
    // are denied (options that load code such as `--require`, `-M`, `-javaagent:`; module search
    // paths; startup scripts and hooks; caches of compiled code; files written at exit) and the
    // data-only members are spared in [`BUILTIN_ENV_SPARED`].
    "NODE_*", // node(1): NODE_OPTIONS, NODE_PATH, NODE_REPL_EXTERNAL_MODULE, NODE_COMPILE_CACHE, ...
    "ELECTRON_RUN_AS_NODE",
    "COREPACK_*", // which package manager binary runs, and from where
    "DENO_*",
    "BUN_*",
    "PYTHON*", // python(1): PYTHONSTARTUP, PYTHONPATH, PYTHONWARNINGS (imports), PYTHON_PRESITE, ...
    "VIRTUAL_ENV",
    "PERL*", // perlrun: PERL5OPT, PERL5LIB, PERL5DB, PERL5SHELL, PERL_USE_UNSAFE_INC, PERLIO_DEBUG
    "RUBY*", // ruby(1): RUBYOPT, RUBYLIB, RUBYPATH, RUBYSHELL
    "GEM_*",
    "BUNDLE_*",
    "JAVA_*",
    "_JAVA_OPTIONS",
    "JDK_*",
    "CLASSPATH",
    "MAVEN_*",
    "M2_HOME",
    "GRADLE_*",
    "DOTNET_*", // DOTNET_STARTUP_HOOKS loads an assembly into every .NET program
    "COMPLUS_*",
    "CORECLR_*",
    "LUA_*",
    "PHP*",
    "TCL*",
    "TK_LIBRARY",
    "R_*",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "GTK_MODULES",
    "GTK_PATH",
    "QT_PLUGIN_PATH",
    // Windows: which extensions run as programs, the shell `cmd /c` is, PowerShell module paths
    // and execution policy, application-compatibility shim layers, the .NET Framework profiler
    // (a DLL loaded into every .NET program; CoreCLR's are `CORECLR_*` above), the system
    // directory that system DLL paths and `cmd.exe` are found from, and the Windows config homes
    // (`HOME`'s equivalents: `.gitconfig`, `.npmrc`, PowerShell profiles; git's system config
    // under `PROGRAMDATA`).
    "PATHEXT",
    "COMSPEC",
    "PSMODULEPATH",
    "PSEXECUTIONPOLICYPREFERENCE",
    "__COMPAT_LAYER",
    "COR_ENABLE_PROFILING",
    "COR_PROFILER*",
    "SYSTEMROOT",
    "WINDIR",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "ALLUSERSPROFILE",
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
    "MAKEFLAGS",
    "MFLAGS",
    "MAKEFILES",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTUP_*",
    "CARGO_*", // every cargo config key (credential providers, runners, target dirs, aliases)
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GOENV",
    "GOROOT",
    "GOPATH",
    "GOBIN",
    "GOCACHE",
    "GOMODCACHE",
    "GOWORK",
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOPRIVATE",
    "GONOPROXY",
    "GOINSECURE",
    "GOVCS",
    // Package managers: config that runs scripts or swaps what gets installed.
    "NPM_CONFIG_*",
    "YARN_*",
    "PIP_*",
    "UV_*",
    // CLIs whose config files name programs to run (credential helpers, exec plugins).
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "AWS_CONFIG_FILE",
];

/// Names on [`BUILTIN_ENV_DENY`]'s families that are only data (identity, output formatting,
/// encodings, hash seeds): never denied by the built-in list. Exact names, case-insensitive.
/// Each must be matched by a family above (a test checks), and each was read in its program's
/// documentation to name no file, program, module or code.
pub const BUILTIN_ENV_SPARED: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_MERGE_VERBOSITY",
    "GIT_PROGRESS_DELAY",
    "GIT_FLUSH",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_OPTIONAL_LOCKS",
    "GIT_ADVICE",
    "GIT_PRINT_SHA1_ELLIPSIS",
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "NODE_DISABLE_COLORS",
    "NODE_PENDING_DEPRECATION",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONHASHSEED",
    "PYTHONFAULTHANDLER",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHON_COLORS",
    "PERL_HASH_SEED",
    "PERL_PERTURB_KEYS",
    "PERL_UNICODE",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_TERM_PROGRESS_WHEN",
    "CARGO_TERM_PROGRESS_WIDTH",
    "CARGO_INCREMENTAL",
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

/// Whether `name` (in any of its [`name_forms`]) is on the built-in list and not spared.
pub(crate) fn builtin_denies(name: &str) -> bool {
    let spared = |f: &str| BUILTIN_ENV_SPARED.iter().any(|s| s.eq_ignore_ascii_case(f));
    match builtin_set() {
        Some(set) => name_forms(name).any(|f| set.is_match(f) && !spared(f)),
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

    /// Every variable git(1) documents under "ENVIRONMENT VARIABLES" (git 2.39 to 2.47), and the
    /// test knobs that run commands: denied unless spared as data-only.
    const GIT_DOCUMENTED: &[&str] = &[
        "GIT_INDEX_FILE",
        "GIT_INDEX_VERSION",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_COMMON_DIR",
        "GIT_DEFAULT_HASH",
        "GIT_DEFAULT_REF_FORMAT",
        "GIT_DIFF_OPTS",
        "GIT_EXTERNAL_DIFF",
        "GIT_EXTERNAL_DIFF_TRUST_EXIT_CODE",
        "GIT_DIFF_PATH_COUNTER",
        "GIT_DIFF_PATH_TOTAL",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_ASKPASS",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG",
        "GIT_TRACE",
        "GIT_TRACE_FSMONITOR",
        "GIT_TRACE_PACK_ACCESS",
        "GIT_TRACE_PACKET",
        "GIT_TRACE_PACKFILE",
        "GIT_TRACE_PERFORMANCE",
        "GIT_TRACE_REFS",
        "GIT_TRACE_SETUP",
        "GIT_TRACE_SHALLOW",
        "GIT_TRACE_CURL",
        "GIT_TRACE_CURL_NO_DATA",
        "GIT_TRACE2",
        "GIT_TRACE2_EVENT",
        "GIT_TRACE2_PERF",
        "GIT_TRACE2_ENV_VARS",
        "GIT_TRACE_REDACT",
        "GIT_REDACT_COOKIES",
        "GIT_NO_LAZY_FETCH",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REFLOG_ACTION",
        "GIT_REF_PARANOIA",
        "GIT_COMMIT_GRAPH_PARANOIA",
        "GIT_ALLOW_PROTOCOL",
        "GIT_PROTOCOL_FROM_USER",
        "GIT_REDIRECT_STDIN",
        "GIT_REDIRECT_STDOUT",
        "GIT_REDIRECT_STDERR",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_PROXY_COMMAND",
        "GIT_SHALLOW_FILE",
        "GIT_QUARANTINE_PATH",
        "GIT_TEST_FSMONITOR",
        "GIT_TEST_SPLIT_INDEX",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_MERGE_VERBOSITY",
        "GIT_PROGRESS_DELAY",
        "GIT_TERMINAL_PROMPT",
        "GIT_FLUSH",
        "GIT_LITERAL_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
        "GIT_OPTIONAL_LOCKS",
        "GIT_ADVICE",
        "GIT_PRINT_SHA1_ELLIPSIS",
    ];

    /// Variables the runtimes' own documentation lists that load code, name files or programs
    /// (node(1), python(1) "Environment variables", perlrun, ruby(1), the JVM launcher, .NET).
    const RUNTIMES_DOCUMENTED: &[&str] = &[
        "NODE_OPTIONS",
        "NODE_PATH",
        "NODE_REPL_EXTERNAL_MODULE",
        "NODE_COMPILE_CACHE",
        "NODE_V8_COVERAGE",
        "NODE_REDIRECT_WARNINGS",
        "NODE_REPL_HISTORY",
        "NODE_EXTRA_CA_CERTS",
        "NODE_ICU_DATA",
        "NODE_TLS_REJECT_UNAUTHORIZED",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONPLATLIBDIR",
        "PYTHONPYCACHEPREFIX",
        "PYTHONUSERBASE",
        "PYTHONEXECUTABLE",
        "PYTHONWARNINGS",
        "PYTHONBREAKPOINT",
        "PYTHONINSPECT",
        "PYTHON_PRESITE",
        "PYTHON_HISTORY",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "PERL5DB",
        "PERL5SHELL",
        "PERLIO_DEBUG",
        "PERL_USE_UNSAFE_INC",
        "RUBYOPT",
        "RUBYLIB",
        "RUBYPATH",
        "RUBYSHELL",
        "JAVA_TOOL_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "_JAVA_OPTIONS",
        "DOTNET_STARTUP_HOOKS",
        "DOTNET_ADDITIONAL_DEPS",
        "CORECLR_PROFILER_PATH",
        "CARGO_REGISTRY_CREDENTIAL_PROVIDER",
        "CARGO_TARGET_DIR",
        "PIP_TRUSTED_HOST",
        "UV_PYTHON",
        "GOENV",
    ];

    #[test]
    fn documented_git_and_runtime_variables_are_denied_unless_data_only() {
        for name in GIT_DOCUMENTED.iter().chain(RUNTIMES_DOCUMENTED) {
            let spared = BUILTIN_ENV_SPARED.contains(name);
            assert_eq!(builtin_denies(name), !spared, "{name}");
        }
        // The one a hostile review ran through an allowed `git status`.
        assert!(builtin_denies("GIT_TEST_FSMONITOR"));
        assert!(builtin_denies("git_test_fsmonitor"));
    }

    #[test]
    fn every_spared_name_belongs_to_a_denied_family_and_is_spared() {
        let set = env_glob_set(BUILTIN_ENV_DENY).unwrap();
        for name in BUILTIN_ENV_SPARED {
            assert!(set.is_match(name), "{name} is spared from no family");
            assert!(!builtin_denies(name), "{name}");
            assert!(!builtin_denies(&name.to_ascii_lowercase()), "{name}");
        }
        // A spared name does not spare what it prefixes.
        assert!(builtin_denies("GIT_AUTHOR_NAME_X"));
    }

    #[test]
    fn every_entry_of_the_list_denies_what_it_names() {
        for pattern in BUILTIN_ENV_DENY {
            let name = pattern.replace('*', "X");
            assert!(builtin_denies(&name), "{pattern} ({name})");
        }
    }

    #[test]
    fn windows_code_loading_variables_are_denied_in_any_case() {
        // Windows names are case-insensitive: `ComSpec` and `Path` are how Windows spells them.
        for name in [
            "PATHEXT",
            "PathExt",
            "ComSpec",
            "PSModulePath",
            "PSExecutionPolicyPreference",
            "__COMPAT_LAYER",
            "COR_ENABLE_PROFILING",
            "COR_PROFILER",
            "Cor_Profiler_Path_64",
            "CORECLR_PROFILER_PATH",
            "COMPlus_DbgJITDebugLaunchSetting",
            "DOTNET_STARTUP_HOOKS",
            "NODE_OPTIONS",
            "SystemRoot",
            "windir",
            "UserProfile",
            "HOMEDRIVE",
            "HOMEPATH",
            "APPDATA",
            "LocalAppData",
            "ProgramData",
            "ALLUSERSPROFILE",
            "Path",
        ] {
            assert!(builtin_denies(name), "{name}");
        }
        for name in [
            "TEMP",
            "TMP",
            "USERNAME",
            "COMPUTERNAME",
            "NUMBER_OF_PROCESSORS",
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

//! The wrapper commands restrictive command rules look through (`timeout 5 rm …`), with the
//! options and operands to skip. The table is documented in docs/PERMISSIONS.md ("Wrappers").

/// A command that runs another command given in its arguments (`timeout 5 rm …`), and how to
/// find that command: skip the wrapper's options (and the values of those that take one), then
/// `operands` positional arguments. Options whose value is itself a command line (`flock -c`,
/// `su -c`, `script -c`, `env -S`) are expanded like `sh -c` scripts.
pub(crate) struct Wrapper {
    pub(crate) name: &'static str,
    /// A subcommand that must follow (`uv run …`, `bundle exec …`); `None` for plain wrappers.
    pub(crate) sub: Option<&'static str>,
    /// Short options that take a value, as `-n 5` or `-n5`.
    pub(crate) short_args: &'static str,
    /// Long options that take a value, as `--signal KILL` (the `--signal=KILL` form is always
    /// understood).
    pub(crate) long_args: &'static [&'static str],
    /// Positional arguments between the options and the command (`timeout DURATION`).
    pub(crate) operands: usize,
    /// Short options whose value is a command line.
    pub(crate) script_short: &'static str,
    /// Long options whose value is a command line.
    pub(crate) script_long: &'static [&'static str],
}

const fn plain(name: &'static str) -> Wrapper {
    Wrapper {
        name,
        sub: None,
        short_args: "",
        long_args: &[],
        operands: 0,
        script_short: "",
        script_long: &[],
    }
}

const fn with_args(
    name: &'static str,
    short_args: &'static str,
    long_args: &'static [&'static str],
) -> Wrapper {
    Wrapper {
        short_args,
        long_args,
        ..plain(name)
    }
}

const fn runner(
    name: &'static str,
    sub: &'static str,
    long_args: &'static [&'static str],
) -> Wrapper {
    Wrapper {
        sub: Some(sub),
        long_args,
        ..plain(name)
    }
}

/// The wrappers seen through (documented in docs/PERMISSIONS.md, "Commands").
pub(crate) const WRAPPERS: &[Wrapper] = &[
    // Privilege and identity.
    with_args(
        "sudo",
        "ugpCDrtTUR",
        &[
            "user",
            "group",
            "prompt",
            "close-from",
            "chdir",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "chroot",
            "host",
        ],
    ),
    with_args("doas", "uaC", &[]),
    with_args(
        "run0",
        "ugD",
        &[
            "user",
            "group",
            "chdir",
            "nice",
            "setenv",
            "property",
            "description",
            "slice",
            "machine",
            "unit",
            "background",
        ],
    ),
    with_args("pkexec", "", &["user"]),
    Wrapper {
        operands: 1,
        script_short: "c",
        script_long: &["command", "session-command"],
        ..with_args(
            "su",
            "sgG",
            &["shell", "group", "supp-group", "whitelist-environment"],
        )
    },
    Wrapper {
        operands: 1,
        script_short: "c",
        script_long: &["command", "session-command"],
        ..with_args(
            "runuser",
            "usgG",
            &[
                "user",
                "shell",
                "group",
                "supp-group",
                "whitelist-environment",
            ],
        )
    },
    Wrapper {
        operands: 1,
        script_short: "c",
        ..plain("sg")
    },
    with_args(
        "setpriv",
        "",
        &[
            "reuid",
            "regid",
            "ruid",
            "rgid",
            "euid",
            "egid",
            "groups",
            "inh-caps",
            "ambient-caps",
            "bounding-set",
            "securebits",
            "selinux-label",
            "apparmor-profile",
            "pdeathsig",
            "landlock-access",
            "landlock-rule",
        ],
    ),
    with_args("fakeroot", "lsi", &["lib", "faked"]),
    Wrapper {
        operands: 1,
        ..with_args("chroot", "", &["userspec", "groups"])
    },
    with_args(
        "unshare",
        "SGRw",
        &["setuid", "setgid", "root", "wd", "propagation", "setgroups"],
    ),
    with_args("nsenter", "tSG", &["target", "setuid", "setgid"]),
    // Environment and shell builtins.
    Wrapper {
        script_short: "S",
        script_long: &["split-string"],
        ..with_args("env", "uCPa", &["unset", "chdir", "argv0"])
    },
    plain("command"),
    plain("builtin"),
    with_args("exec", "a", &[]),
    plain("nohup"),
    with_args("time", "fo", &["format", "output"]),
    // Scheduling and resource limits.
    with_args("nice", "n", &["adjustment"]),
    Wrapper {
        operands: 1,
        ..with_args("timeout", "sk", &["signal", "kill-after"])
    },
    plain("setsid"),
    with_args("stdbuf", "ioe", &["input", "output", "error"]),
    with_args(
        "ionice",
        "cnpPu",
        &["class", "classdata", "pid", "pgid", "uid"],
    ),
    Wrapper {
        operands: 1,
        ..with_args(
            "chrt",
            "TPD",
            &["sched-runtime", "sched-period", "sched-deadline"],
        )
    },
    Wrapper {
        operands: 1,
        ..plain("taskset")
    },
    with_args(
        "numactl",
        "CNmpiP",
        &[
            "physcpubind",
            "cpunodebind",
            "membind",
            "preferred",
            "interleave",
            "preferred-many",
        ],
    ),
    with_args("prlimit", "p", &["pid", "output"]),
    with_args("cpulimit", "lpe", &["limit", "pid", "exe"]),
    with_args("cgexec", "g", &[]),
    with_args(
        "systemd-run",
        "pEMH",
        &[
            "property",
            "setenv",
            "machine",
            "host",
            "unit",
            "description",
            "slice",
            "uid",
            "gid",
            "nice",
            "working-directory",
            "service-type",
            "on-active",
            "on-boot",
            "on-calendar",
        ],
    ),
    with_args("caffeinate", "tw", &[]),
    with_args("trickle", "udwtln", &[]),
    // Locking, retrying, watching, recording, buffering.
    Wrapper {
        operands: 1,
        script_short: "c",
        script_long: &["command"],
        ..with_args("flock", "wE", &["timeout", "conflict-exit-code"])
    },
    Wrapper {
        script_short: "c",
        script_long: &["command"],
        ..with_args(
            "script",
            "EIOBTmo",
            &[
                "echo",
                "log-in",
                "log-out",
                "log-io",
                "log-timing",
                "logging-format",
                "output-limit",
            ],
        )
    },
    with_args("watch", "n", &["interval"]),
    plain("unbuffer"),
    plain("chronic"),
    plain("eatmydata"),
    plain("nocache"),
    Wrapper {
        operands: 1,
        ..plain("faketime")
    },
    with_args(
        "xargs",
        "adEILnPs",
        &[
            "arg-file",
            "delimiter",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
    ),
    // Tracing and debugging.
    with_args(
        "strace",
        "abeEIoOpPsSuX",
        &[
            "output",
            "attach",
            "string-limit",
            "user",
            "env",
            "columns",
            "trace",
            "signal",
            "trace-path",
            "summary-sort-by",
            "const-print-style",
        ],
    ),
    with_args("ltrace", "aADeFlnopsuwx", &["output", "library"]),
    plain("valgrind"),
    plain("catchsegv"),
    // Proxies and multi-call binaries.
    with_args("proxychains", "f", &[]),
    with_args("proxychains4", "f", &[]),
    with_args("torsocks", "uapP", &["user", "pass", "address", "port"]),
    plain("busybox"),
    plain("toybox"),
    // Project runners that run any command in their environment.
    runner(
        "uv",
        "run",
        &[
            "with",
            "with-requirements",
            "python",
            "project",
            "directory",
            "package",
            "extra",
            "group",
            "env-file",
            "index",
            "index-url",
        ],
    ),
    runner("poetry", "run", &["directory", "project"]),
    runner("pipenv", "run", &[]),
    runner("pdm", "run", &["project"]),
    runner("conda", "run", &["name", "prefix"]),
    runner("bundle", "exec", &[]),
    runner("pnpm", "exec", &["filter", "dir"]),
    runner("npm", "exec", &["package", "workspace"]),
    runner("rbenv", "exec", &[]),
    runner("pyenv", "exec", &[]),
    Wrapper {
        operands: 1,
        ..runner("direnv", "exec", &[])
    },
    runner("mise", "exec", &["env", "cd"]),
    runner("mise", "x", &["env", "cd"]),
];

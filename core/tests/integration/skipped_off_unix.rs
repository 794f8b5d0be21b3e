//! The suites that are compiled out off Unix (or off Linux), and why: a Windows run (under Wine
//! here) or a macOS run prints what it did not test instead of silently running less.
//! What they check on Unix is covered on Windows by containment.rs and batch_files.rs where it
//! applies there.

#[cfg(not(target_os = "linux"))]
#[test]
#[allow(clippy::print_stderr)]
fn suites_that_did_not_run_here() {
    let mut skipped: Vec<(&str, &str)> = vec![(
        "host_death.rs",
        "PR_SET_PDEATHSIG and the /proc process table are Linux's; a killed host is covered on \
         every OS by containment.rs",
    )];
    if cfg!(not(unix)) {
        skipped.extend([
            (
                "terminals.rs",
                "its commands are `sh`, `sleep`, `printf`, `pwd` and it checks process groups; \
                 Windows terminals are covered by containment.rs and batch_files.rs",
            ),
            (
                "supervisor.rs",
                "the agent is the mock behind a /bin/sh wrapper that counts its starts",
            ),
            (
                "pool.rs",
                "the agent is the mock behind a /bin/sh wrapper that counts its starts",
            ),
        ]);
    }
    for (suite, why) in skipped {
        eprintln!("skipped: {suite}: {why}");
    }
}

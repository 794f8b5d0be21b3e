//! The exit status says what happened: one table for the code, `acph --help` and the README.

/// The turn ended with `end_turn` (run), or the handshake succeeded (probe).
pub const OK: i32 = 0;
/// A failure, with one line `acph: ...` on stderr: the agent could not be started, failed a
/// request or exited, a protocol error, a bad option document.
pub const FAILED: i32 = 1;
pub const MAX_TOKENS: i32 = 3;
pub const MAX_TURN_REQUESTS: i32 = 4;
pub const REFUSAL: i32 = 5;
/// A stop reason this acph does not know (a later protocol version's).
pub const OTHER_STOP_REASON: i32 = 6;
/// A time limit expired (`--timeout`, the host's `requestTimeoutMs`/`promptTimeoutMs`), as
/// timeout(1) exits.
pub const TIMEOUT: i32 = 124;
/// Ctrl-C: the turn was cancelled (stop reason `cancelled`), or acph was interrupted.
pub const INTERRUPTED: i32 = 130;

/// `acph --help`'s table (the README has the same one).
pub const HELP: &str = "\
Exit status:
  0    the turn ended with end_turn (run); the handshake succeeded (probe)
  1    failure: the agent could not be started, failed a request or exited; a protocol error;
       a bad option document (one line `acph: ...` on stderr)
  2    usage error
  3    the turn ended with max_tokens
  4    the turn ended with max_turn_requests
  5    the turn ended with refusal
  6    the turn ended with a stop reason this acph does not know
  124  a time limit expired (--timeout, requestTimeoutMs, promptTimeoutMs)
  130  Ctrl-C: the turn was cancelled (stop reason cancelled), or acph was interrupted
  129, 143  stopped by SIGHUP, SIGTERM";

/// The exit status of a turn that ended with `reason`.
pub fn for_stop_reason(reason: &str) -> i32 {
    match reason {
        "end_turn" => OK,
        "max_tokens" => MAX_TOKENS,
        "max_turn_requests" => MAX_TURN_REQUESTS,
        "refusal" => REFUSAL,
        "cancelled" => INTERRUPTED,
        _ => OTHER_STOP_REASON,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stop reason has its own status, and the help lists each one.
    #[test]
    fn every_stop_reason_has_a_status_in_the_help() {
        let reasons = [
            "end_turn",
            "max_tokens",
            "max_turn_requests",
            "refusal",
            "cancelled",
        ];
        let codes: Vec<i32> = reasons.iter().map(|r| for_stop_reason(r)).collect();
        assert_eq!(
            codes,
            [OK, MAX_TOKENS, MAX_TURN_REQUESTS, REFUSAL, INTERRUPTED]
        );
        assert_eq!(for_stop_reason("future_reason"), OTHER_STOP_REASON);
        for (r, c) in reasons.iter().zip(codes) {
            let row = HELP
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{c} ")))
                .unwrap_or_else(|| panic!("no row for {c}"));
            assert!(row.contains(r), "{row}");
        }
    }
}

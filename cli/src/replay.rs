//! `acph replay FILE`: be the agent of a recording. A stdio ACP agent any host can spawn (our
//! faces, an editor, another library): it plays the recorded agent's messages, answers the
//! host's requests from the recording and says on stderr where the host diverges
//! (`acp_host::replay`; docs/RECORDING.md, "Replaying"). Nothing but the agent's side is written
//! to stdout.

use acp_host::replay::{Pace, ReplayOptions};

use crate::args::ReplayArgs;
use crate::render::eprint_line;

/// The exit status: the recorded agent's when it exited on its own (a crash replays as one);
/// else 1 when the host diverged, 0 when it did not; 2 when the recording cannot be read.
pub(crate) async fn replay(args: ReplayArgs) -> i32 {
    let options = ReplayOptions {
        pace: if args.fast {
            Pace::Fast
        } else {
            Pace::Recorded
        },
        wait: args.wait.0,
        report: args.report,
        ignore: args.ignore,
        ..ReplayOptions::new(args.file)
    };
    match acp_host::replay::run_stdio(&options).await {
        Ok(report) if report.agent_exited => report.exit_code.unwrap_or(0),
        Ok(report) if report.divergence_count > 0 => crate::exit::FAILED,
        Ok(_) => crate::exit::OK,
        Err(e) => {
            eprint_line(&format!("acph: {e}"));
            2
        }
    }
}

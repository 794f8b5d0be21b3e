//! `acp-bench-rust`: the Rust clients of the side-by-side benchmark (`scripts/bench-compare`).
//!
//! ```text
//! acp-bench-rust CLIENT WORKLOAD --agent PATH [--workspace DIR] [--n N] [--file PATH]
//!   CLIENT    floor | tokio-floor | host
//!   WORKLOAD  permission | read   (--agent acp-bench-agent; --n round trips, default 2000)
//!             flood               (--agent acp-mock-agent; --n updates, default 200000)
//!             spawn               (--agent acp-mock-agent; --n spawns, default 50)
//! ```
//!
//! Every run prints exactly one JSON line on stdout with `client`, `workload` and the metrics;
//! a broken run (an agent-counted failure, a wrong update count, an error) exits 1.
//!
//! - `permission` / `read`: spawn `acp-bench-agent`, initialize, open one session in
//!   `--workspace` and send one prompt naming the workload; the agent times every round trip
//!   itself and returns the statistics (`p50_us`, `p99_us`, …), which are printed.
//! - `flood`: `acp-mock-agent --flood N` streams N `agent_message_chunk` updates in one turn;
//!   `updates_per_sec` and `seconds` from prompt sent to turn ended, `idle_rss_kib` (this
//!   process before spawning the agent) and `peak_rss_kib` (`VmHWM` at the end).
//! - `spawn`: N times spawn `acp-mock-agent` → initialize → session/new, then shut it down;
//!   `p50_ms`/`p99_ms`/`mean_ms` of spawn start → session/new answered.
//!
//! Clients:
//!
//! - `floor` ([`floor`]): a bare blocking client: `std::process`, one `BufReader` line loop, a
//!   borrowed envelope parse and hand-written answers. No runtime, no tasks, no policy: the least
//!   any client can do, the anchor every ratio is taken against.
//! - `tokio-floor` ([`tokio_floor`]): the floor's round trips on tokio's multi-thread runtime
//!   (what the runtime's wake path alone costs; not an anchor).
//! - `host` ([`host`]): acp-host's Rust API.
//!
//! The official Rust SDK's client is `acp-bench-rust-sdk` (`bench/sdk/`, a workspace of its own).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark command: its output is the point"
)]

#[path = "../../common.rs"]
mod common;
mod floor;
mod host;
mod tokio_floor;

use common::BoxError;

const USAGE: &str = "usage: acp-bench-rust floor|host|tokio-floor permission|read|flood|spawn --agent PATH \
                     [--workspace DIR] [--n N] [--file PATH]";

fn main() {
    let args = match common::parse_args(USAGE, &["floor", "host", "tokio-floor"]) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("acp-bench-rust: {e}");
            std::process::exit(2);
        }
    };
    let result = if args.client == "floor" {
        floor::run(&args)
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(BoxError::from)
            .and_then(|rt| {
                rt.block_on(async {
                    match args.client.as_str() {
                        "tokio-floor" => tokio_floor::run(&args).await,
                        _ => host::run(&args).await,
                    }
                })
            })
    };
    common::finish("acp-bench-rust", &args, result);
}

//! Property tests of inbound dispatch, end to end through the public API: a fake agent over an
//! in-memory duplex completes the handshake, opens a session, then throws a generated sequence of
//! adversarial messages at the host (hostile ids, responses to unknown and duplicate ids, requests
//! with random methods and params shapes, permission requests with garbage options, fs calls with
//! bad paths, terminal garbage, `$/cancel_request` for random ids, `session/update` of any shape,
//! invalid UTF-8, blank lines, deep nesting, over-long lines). The harness
//! (`fuzz_support/dispatch.rs`) then checks that every request got exactly one answer, that the
//! host still answers a barrier request, a prompt and a shutdown within a bound, that every
//! permission request was resolved once, and that the event stream ends with `agent_exited`.
//! `PROPTEST_CASES` raises the case count; `fuzz/fuzz_targets/dispatch.rs` runs the same harness.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::fuzz_support;

use std::sync::Arc;
use std::time::Duration;

use acp_host::{Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions};
use fuzz_support::dispatch::{BOUND, Handler, Options, run};
use fuzz_support::script::arb_script;
use proptest::prelude::*;
use serde_json::json;

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        // A hang costs BOUND per shrink step: cap shrinking so a failure reports in minutes.
        max_shrink_time: 120_000,
        ..ProptestConfig::default()
    }
}

thread_local! {
    // Leaked, never dropped: on Windows a thread-local's destructor runs under the loader lock,
    // and a runtime dropped there joins its blocking threads, which need that lock to exit (the
    // test thread deadlocked at its end under Wine).
    static RT: &'static tokio::runtime::Runtime = Box::leak(Box::new(fuzz_support::wire::runtime()));
}

fn arb_options() -> impl Strategy<Value = Options> {
    (
        prop_oneof![Just(Handler::Decider), Just(Handler::DenyAll)],
        any::<bool>(),
        prop_oneof![3 => Just(4096usize), 1 => Just(128usize)],
    )
        .prop_map(|(handler, wire_events, max_line)| Options {
            handler,
            wire_events,
            max_line,
        })
}

proptest! {
    #![proptest_config(cases(40))]

    #[test]
    fn adversarial_messages_are_answered_once_and_the_host_stays_responsive(
        script in arb_script(40),
        opts in arb_options(),
    ) {
        let out = RT.with(|rt| rt.block_on(run(&script, &opts)));
        prop_assert!(out.is_ok(), "{}", out.err().unwrap_or_default());
    }

    #[test]
    fn arbitrary_bytes_after_the_handshake(
        data in prop::collection::vec(
            prop_oneof![8 => any::<u8>(), 1 => Just(b'\n'), 1 => Just(b'{'), 1 => Just(b'"')], 0..400),
    ) {
        let out = RT.with(|rt| fuzz_support::dispatch::fuzz_one(rt, &data));
        prop_assert!(out.is_ok(), "{}", out.err().unwrap_or_default());
    }
}

/// The harness can fail: a script whose request the host must refuse to answer twice, checked
/// from the agent's side, and a hand-written mix that covers every branch once per run.
#[test]
fn fixed_hostile_script() {
    let script = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", // duplicate response (initialize)
        "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n", // unknown id
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":1}}\n", // string id response
        "{\"jsonrpc\":\"2.0\",\"id\":5}\n",               // neither result nor error
        "{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s\",\"options\":\"garbage\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s\",\"toolCall\":{\"toolCallId\":\"t\"},\"options\":[{\"optionId\":\"ok\",\"name\":\"OK\",\"kind\":\"allow_once\"}]}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1.5}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":\"s\",\"path\":\"@CWD@/hello.txt\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"r2\",\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":\"s\",\"path\":\"@CWD@/../../../etc/passwd\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"r3\",\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":\"s\",\"path\":\"@CWD@/hello.txt\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"r3\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"fs/write_text_file\",\"params\":{\"sessionId\":\"s\",\"path\":\"@CWD@/x\",\"content\":\"y\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"t1\",\"method\":\"terminal/create\",\"params\":{\"sessionId\":\"s\",\"command\":\"true\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"t2\",\"method\":\"terminal/wait_for_exit\",\"params\":{\"sessionId\":\"s\",\"terminalId\":\"nope\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"t3\",\"method\":\"terminal/output\",\"params\":[1,2]}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":{\"obj\":1},\"method\":\"x\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"session/request_permission\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":\"no/such\"}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"t\",\"title\":\"T\"}}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":[\"tool_call\"]}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"zz\",\"update\":{\"sessionUpdate\":\"plan\",\"entries\":5}}}\n",
        "\n\r\n   \n",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
    );
    let mut bytes = script.as_bytes().to_vec();
    bytes
        .extend_from_slice(b"\xff\xfe{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"x\"}\n");
    bytes.extend_from_slice(&vec![b'x'; 5000]);
    for handler in [Handler::Decider, Handler::DenyAll] {
        let opts = Options {
            handler,
            wire_events: true,
            max_line: 4096,
        };
        let report = RT.with(|rt| rt.block_on(run(&bytes, &opts))).unwrap();
        for id in [
            "-3",
            "1.5",
            "123456789012345678901234567890",
            "\"r2\"",
            "\"r3\"",
            "\"w\"",
            "\"t1\"",
            "\"t2\"",
            "\"t3\"",
            "\"m\"",
        ] {
            assert_eq!(report.responses.get(id), Some(&1), "{id}: {report:?}");
        }
        assert!(!report.responses.contains_key("{\"obj\":1}"));
        assert_eq!(report.tool_calls, 1);
    }
}

/// The oracle is not vacuous: it expects an answer for every request the decoder sees.
#[test]
fn expectations_count_requests() {
    let (expected, tools) = fuzz_support::dispatch::expectations(
        b"{\"id\":1,\"method\":\"a\"}\n{\"id\":1,\"method\":\"a\"}\n{\"id\":2,\"result\":1}\n{\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"tool_call\"}}}",
        4096,
    )
    .unwrap();
    assert_eq!(expected.get("1"), Some(&2));
    assert_eq!(expected.len(), 1);
    assert_eq!(tools, 1);
}

/// Tasks alive on the runtime, after letting finished ones be reaped.
async fn alive_tasks() -> usize {
    tokio::time::sleep(Duration::from_millis(100)).await;
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Run `n` permission requests that the host answers at once; return (tasks before, after).
async fn permission_flood(handler: PermissionHandler, n: usize) -> (usize, usize) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client_side, agent_side) = tokio::io::duplex(1 << 20);
    let (agent_read, mut agent_write) = tokio::io::split(agent_side);
    let (answered_tx, mut answered_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(agent_read).lines();
        let mut go = Some(go_rx);
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: serde_json::Value = serde_json::from_str(&line).unwrap();
            let reply = match msg["method"].as_str() {
                Some("initialize") => {
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":1}})
                }
                Some("session/new") => {
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"sessionId":"s"}})
                }
                Some(_) => continue,
                None => {
                    let _ = answered_tx.send(());
                    continue;
                }
            };
            agent_write
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .unwrap();
            if msg["method"] == "session/new" {
                let _ = go.take().unwrap().await;
                for i in 0..n {
                    let ask = json!({"jsonrpc":"2.0","id":i,"method":"session/request_permission","params":{
                        "sessionId":"s","toolCall":{"toolCallId":format!("t{i}"),"title":"Edit","kind":"edit"},
                        "options":[{"optionId":"ok","name":"OK","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]}});
                    agent_write
                        .write_all(format!("{ask}\n").as_bytes())
                        .await
                        .unwrap();
                }
            }
        }
    });
    let host = Host::new(HostConfig {
        permission: handler,
        ..HostConfig::default()
    });
    let stream = host.events().unwrap();
    tokio::spawn(async move { while stream.next().await.is_some() {} });
    let (r, w) = tokio::io::split(client_side);
    let agent = host.connect(r, w).await.unwrap();
    let _session = agent
        .new_session(SessionOptions::new(std::env::temp_dir().to_string_lossy()))
        .await
        .unwrap();
    let before = alive_tasks().await;
    go_tx.send(()).unwrap();
    for _ in 0..n {
        tokio::time::timeout(BOUND, answered_rx.recv())
            .await
            .expect("every permission request answered")
            .unwrap();
    }
    let after = alive_tasks().await;
    tokio::time::timeout(BOUND, agent.shutdown()).await.unwrap();
    (before, after)
}

const FLOOD: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_permission_requests_leave_no_tasks_behind_deny_all() {
    let (before, after) = permission_flood(PermissionHandler::DenyAll, FLOOD).await;
    assert!(
        after <= before + 2,
        "{before} tasks before, {after} after {FLOOD} answered requests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_permission_requests_leave_no_tasks_behind_decider() {
    let decider = PermissionHandler::Decider(Arc::new(|req: PermissionRequest| async move {
        Ok(req.options.first().map(|o| o.option_id.clone()))
    }));
    let (before, after) = permission_flood(decider, FLOOD).await;
    assert!(
        after <= before + 2,
        "{before} tasks before, {after} after {FLOOD} answered requests"
    );
}

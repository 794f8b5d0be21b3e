//! Ordering and replay (replay tag past the early limit, early overflow keeps wire order),
//! malformed responses, permission requests for unknown sessions, and served requests the agent
//! withdraws with `$/cancel_request` (never take effect after -32800; a reused id gets its own
//! answer). Driven by a scripted fake agent over in-memory pipes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_host::permission::policy::Policy;
use acp_host::{
    Event, EventKind, EventStream, Host, HostConfig, PermissionHandler, PermissionRequest,
    SessionOptions,
};
use common::fake::*;
use serde_json::{Value, json};

/// A hang guard, not a speed check: generous for an emulated, loaded machine (Wine).
const T: Duration = Duration::from_secs(60);
const STEP: Duration = Duration::from_secs(5);

async fn pull_until(events: &EventStream, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut got = Vec::new();
    loop {
        let ev = tokio::time::timeout(STEP, events.next())
            .await
            .unwrap_or_else(|_| panic!("no event; got {:?}", common::kinds(&got)))
            .expect("stream open");
        let done = stop(&ev);
        got.push(ev);
        if done {
            return got;
        }
    }
}

fn updates(evs: &[Event]) -> Vec<&Event> {
    evs.iter()
        .filter(|e| e.kind == EventKind::SessionUpdate)
        .collect()
}

/// A load replay longer than `early_update_limit` keeps `replay: true` on every replayed update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_stays_tagged_past_the_early_limit() {
    tokio::time::timeout(T, async {
        let host = Host::new(HostConfig {
            early_update_limit: 10,
            ..HostConfig::default()
        });
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host).await;
        let a = agent.clone();
        let load = tokio::spawn(async move {
            a.load_session("L", SessionOptions::new(common::tmp_cwd()))
                .await
        });
        let req = fake.wait_method("session/load", STEP).await;
        for i in 0..50 {
            fake.send(update("L", &format!("old {i}"))).await;
        }
        fake.respond(&req["id"], json!({})).await;
        let session = load.await.unwrap().unwrap();
        let s2 = session.clone();
        let turn = tokio::spawn(async move { s2.prompt_text("go").await });
        let p = fake.wait_method("session/prompt", STEP).await;
        fake.send(update("L", "live")).await;
        fake.respond(&p["id"], json!({"stopReason":"end_turn"}))
            .await;
        turn.await.unwrap().unwrap();
        let evs = pull_until(&events, |e| e.kind == EventKind::TurnEnded).await;
        let ups = updates(&evs);
        assert_eq!(ups.len(), 51, "{:?}", common::kinds(&evs));
        for (i, u) in ups[..50].iter().enumerate() {
            assert_eq!(chunk_text(u), format!("old {i}"));
            assert!(u.replay, "replayed update {i} lost its replay tag");
        }
        assert_eq!(chunk_text(ups[50]), "live");
        assert!(!ups[50].replay, "a live update tagged as replay");
    })
    .await
    .expect("test timed out");
}

/// Updates that arrive before the `session/new` response and overflow the early limit keep wire
/// order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_overflow_keeps_wire_order() {
    tokio::time::timeout(T, async {
        let host = Host::new(HostConfig {
            early_update_limit: 5,
            ..HostConfig::default()
        });
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host).await;
        let a = agent.clone();
        let open =
            tokio::spawn(
                async move { a.new_session(SessionOptions::new(common::tmp_cwd())).await },
            );
        let req = fake.wait_method("session/new", STEP).await;
        for i in 0..20 {
            fake.send(update("sess_x", &i.to_string())).await;
        }
        fake.respond(&req["id"], json!({"sessionId":"sess_x"}))
            .await;
        open.await.unwrap().unwrap();
        let mut got = Vec::new();
        while updates(&got).len() < 20 {
            got.extend(pull_until(&events, |e| e.kind == EventKind::SessionUpdate).await);
        }
        common::assert_seq_strictly_increasing(&got);
        let texts: Vec<String> = updates(&got).into_iter().map(chunk_text).collect();
        let want: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        assert_eq!(texts, want, "early updates out of wire order");
    })
    .await
    .expect("test timed out");
}

/// A response with neither `result` nor `error` fails the call (`protocol`); `result: null`
/// still succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_without_result_or_error_fails_the_call() {
    tokio::time::timeout(T, async {
        let host = Host::new(HostConfig::default());
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host).await;
        let a = agent.clone();
        let call = tokio::spawn(async move { a.ext_request("_x/bare", &json!({})).await });
        let req = fake.wait_method("_x/bare", STEP).await;
        fake.send(json!({"jsonrpc":"2.0","id":req["id"]})).await;
        let err = call.await.unwrap().expect_err("no result, no error");
        assert_eq!(err.kind(), "protocol", "{err:?}");
        let evs = pull_until(&events, |e| e.kind == EventKind::ProtocolError).await;
        assert_eq!(
            evs.last().unwrap().data_value()["reason"],
            "invalid_response"
        );

        let a = agent.clone();
        let call = tokio::spawn(async move { a.ext_request("_x/null", &json!({})).await });
        let req = fake.wait_method("_x/null", STEP).await;
        fake.send(json!({"jsonrpc":"2.0","id":req["id"],"result":null}))
            .await;
        assert_eq!(call.await.unwrap().unwrap(), Value::Null);
    })
    .await
    .expect("test timed out");
}

/// A permission request for a session the host never opened is refused (-32602) without asking
/// the decider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_for_an_unknown_session_never_reaches_the_decider() {
    tokio::time::timeout(T, async {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let decider = PermissionHandler::Decider(Arc::new(move |req: PermissionRequest| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(req
                    .option_of_kind("allow_once")
                    .map(|o| o.option_id.clone()))
            }
        }));
        let host = Host::new(HostConfig {
            permission: decider,
            ..HostConfig::default()
        });
        let mut events = host.events().unwrap();
        let (agent, mut fake) = connect(&host).await;
        let _session = open_session(&agent, &mut fake, "real", &common::tmp_cwd()).await;
        fake.send(
            json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{
            "sessionId":"nope","toolCall":{"toolCallId":"t","title":"Edit","kind":"edit"},
            "options":[{"optionId":"ok","name":"OK","kind":"allow_once"},
                       {"optionId":"no","name":"No","kind":"reject_once"}]}}),
        )
        .await;
        let resp = fake.wait_response(&json!("p1"), STEP).await;
        assert_eq!(resp["error"]["code"], -32602, "{resp}");
        let evs = pull_until(&events, |e| {
            e.kind == EventKind::ProtocolError && e.data_value()["reason"] == "unknown_session"
        })
        .await;
        let later = common::drain(&mut events, Duration::from_millis(200)).await;
        assert!(
            common::of_kind(&evs, EventKind::PermissionRequested).is_empty()
                && common::of_kind(&later, EventKind::PermissionRequested).is_empty()
        );
        assert_eq!(asked.load(Ordering::SeqCst), 0, "the decider was asked");
    })
    .await
    .expect("test timed out");
}

/// The code of an error response, `None` for a success.
fn error_code(resp: &Value) -> Option<i64> {
    resp.get("error").map(|e| e["code"].as_i64().unwrap_or(0))
}

/// Host with a session `s` (cwd = a fresh temp dir) on a fake agent.
async fn served(policy: Policy) -> (Host, acp_host::Agent, Fake, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig {
        policy: Some(policy),
        permission: common::allow_once(),
        events_enabled: false,
        ..HostConfig::default()
    });
    let (agent, mut fake) = connect(&host).await;
    let cwd = dir.path().to_str().unwrap().to_owned();
    open_session(&agent, &mut fake, "s", &cwd).await;
    (host, agent, fake, dir)
}

/// Send `request` (id `id`) and `$/cancel_request` for it, in one write or two.
async fn request_then_withdraw(fake: &Fake, request: Value, id: u64, one_write: bool) {
    let cancel = json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id}});
    if one_write {
        fake.send_raw(&format!("{request}\n{cancel}\n")).await;
    } else {
        fake.send(request).await;
        fake.send(cancel).await;
    }
}

/// No second response for any of `ids`.
async fn assert_no_more_responses(fake: &mut Fake, ids: &[u64]) {
    let extra: Vec<Value> = fake
        .recv_for(Duration::from_millis(200))
        .await
        .into_iter()
        .filter(|v| v.get("method").is_none() && ids.iter().any(|i| v["id"] == *i))
        .collect();
    assert!(extra.is_empty(), "more than one response: {extra:?}");
}

/// A withdrawn `fs/write_text_file` either gets -32800 and never lands, or lands and gets its
/// real result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_write_does_not_land() {
    tokio::time::timeout(T, async {
        let (_host, _agent, mut fake, dir) = served(Policy::preset("ask").unwrap()).await;
        let mut withdrawn = Vec::new();
        let mut ids = Vec::new();
        let mut written = [0usize; 2];
        for round in 0..100u64 {
            let one_write = round >= 50;
            let id = 1000 + round;
            let path = dir.path().join(format!("f{round}.txt"));
            let req = json!({"jsonrpc":"2.0","id":id,"method":"fs/write_text_file","params":{
                "sessionId":"s","path":path,"content":"x"}});
            request_then_withdraw(&fake, req, id, one_write).await;
            let resp = fake.wait_response(&json!(id), STEP).await;
            ids.push(id);
            match error_code(&resp) {
                Some(-32800) => withdrawn.push(path),
                None => {
                    assert!(path.exists(), "round {round}: success but no file");
                    written[usize::from(one_write)] += 1;
                }
                Some(_) => panic!("round {round}: unexpected answer {resp}"),
            }
        }
        assert_no_more_responses(&mut fake, &ids).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        for p in &withdrawn {
            assert!(!p.exists(), "{} written after -32800", p.display());
        }
        // Not an assertion (timing): how the races fell, for the record.
        eprintln!(
            "write: -32800 {}, written (two writes) {}, written (one write) {}",
            withdrawn.len(),
            written[0],
            written[1]
        );
    })
    .await
    .expect("test timed out");
}

/// A withdrawn built-in `fs/read_text_file` is answered exactly once (-32800, or its content
/// when the read finished first), and a read that reuses the id afterwards gets its own answer:
/// the first read never answers for it. The first file is read through a link, which the
/// blocking path serves (a plain file in the page cache is answered in the step that reads the
/// request, before any withdrawal can arrive); the second one is a plain file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_read_is_answered_once_and_a_reused_id_gets_its_own_answer() {
    tokio::time::timeout(T, async {
        let (_host, _agent, mut fake, dir) = served(Policy::preset("ask").unwrap()).await;
        let (target, second) = (dir.path().join("target.txt"), dir.path().join("second.txt"));
        std::fs::write(&target, "first").unwrap();
        std::fs::write(&second, "second").unwrap();
        let first = dir.path().join("first.txt");
        #[cfg(unix)]
        std::os::unix::fs::symlink("target.txt", &first).unwrap();
        #[cfg(not(unix))] // every read takes the blocking path there
        std::fs::write(&first, "first").unwrap();
        let read = |id: u64, path: &Path| {
            json!({"jsonrpc":"2.0","id":id,"method":"fs/read_text_file","params":{
                "sessionId":"s","path":path}})
        };
        let mut outcomes = [0usize; 2];
        let mut ids = Vec::new();
        for round in 0..100u64 {
            let id = 5000 + round;
            request_then_withdraw(&fake, read(id, &first), id, round >= 50).await;
            let resp = fake.wait_response(&json!(id), STEP).await;
            match error_code(&resp) {
                Some(-32800) => outcomes[0] += 1,
                None => {
                    assert_eq!(resp["result"]["content"], "first", "round {round}: {resp}");
                    outcomes[1] += 1;
                }
                Some(_) => panic!("round {round}: unexpected answer {resp}"),
            }
            // The same id again, for another file: its answer is the second file's.
            fake.send(read(id, &second)).await;
            let resp = fake.wait_response(&json!(id), STEP).await;
            assert_eq!(resp["result"]["content"], "second", "round {round}: {resp}");
            ids.push(id);
        }
        assert_no_more_responses(&mut fake, &ids).await;
        eprintln!(
            "read: -32800 {}, answered with content {}",
            outcomes[0], outcomes[1]
        );
    })
    .await
    .expect("test timed out");
}

/// An embedder that counts the writes it was asked to do.
struct CountingFs(Arc<AtomicUsize>);

impl acp_host::services::FsHandler for CountingFs {
    fn read_text_file(
        &self,
        _: acp_host::services::FsRead,
    ) -> acp_host::services::ServiceFuture<String> {
        Box::pin(async { Ok(String::new()) })
    }
    fn write_text_file(
        &self,
        _: acp_host::services::FsWrite,
    ) -> acp_host::services::ServiceFuture<()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }
}

/// The same through an embedder: after -32800 the embedder was never asked to write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_write_never_reaches_the_embedder() {
    tokio::time::timeout(T, async {
        let dir = tempfile::tempdir().unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let host = Host::new(HostConfig {
            policy: Some(Policy::preset("ask").unwrap()),
            permission: common::allow_once(),
            events_enabled: false,
            fs: acp_host::services::FsService::Embedder(Arc::new(CountingFs(calls.clone()))),
            ..HostConfig::default()
        });
        let (_agent, mut fake) = connect(&host).await;
        let cwd = dir.path().to_str().unwrap().to_owned();
        open_session(&_agent, &mut fake, "s", &cwd).await;
        let (mut withdrawn, mut served) = (0usize, 0usize);
        for round in 0..50u64 {
            let id = 3000 + round;
            let path = dir.path().join(format!("e{round}.txt"));
            let req = json!({"jsonrpc":"2.0","id":id,"method":"fs/write_text_file","params":{
                "sessionId":"s","path":path,"content":"x"}});
            request_then_withdraw(&fake, req, id, round % 2 == 1).await;
            let resp = fake.wait_response(&json!(id), STEP).await;
            match error_code(&resp) {
                Some(-32800) => withdrawn += 1,
                None => served += 1,
                Some(_) => panic!("round {round}: unexpected answer {resp}"),
            }
            // Every write the embedder did was answered with its real result.
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(calls.load(Ordering::SeqCst), served, "round {round}");
        }
        eprintln!("embedder write: -32800 {withdrawn}, served {served}");
    })
    .await
    .expect("test timed out");
}

/// A withdrawn `terminal/create` either gets -32800 and never starts, or starts and gets its
/// terminal id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_terminal_does_not_start() {
    tokio::time::timeout(T, async {
        let policy = Policy::from_json(
            r#"{"preset":"ask","rules":[{"action":"allow","operations":["execute"],"commands":["acp-mock-agent *"]}]}"#,
        )
        .unwrap();
        let (_host, _agent, mut fake, dir) = served(policy).await;
        let mut withdrawn = Vec::new();
        let mut ids = Vec::new();
        let mut started = 0usize;
        for round in 0..20u64 {
            let id = 2000 + round;
            let marker = dir.path().join(format!("m{round}"));
            // The mock agent as the command on every OS (Windows has no `sh`): it writes the
            // marker as it starts, then sleeps until released.
            let req = json!({"jsonrpc":"2.0","id":id,"method":"terminal/create","params":{
                "sessionId":"s","command":common::mock_agent(),
                "args":["--record-args",marker,"--sleep","30000"]}});
            request_then_withdraw(&fake, req, id, round % 2 == 1).await;
            let resp = fake.wait_response(&json!(id), STEP).await;
            ids.push(id);
            match error_code(&resp) {
                Some(-32800) => withdrawn.push(marker),
                None => {
                    started += 1;
                    let deadline = tokio::time::Instant::now() + STEP;
                    while !marker.exists() {
                        assert!(tokio::time::Instant::now() < deadline, "started but no marker");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    let rel = 9000 + round;
                    fake.send(json!({"jsonrpc":"2.0","id":rel,"method":"terminal/release",
                        "params":{"sessionId":"s","terminalId":resp["result"]["terminalId"]}}))
                        .await;
                    let r = fake.wait_response(&json!(rel), STEP).await;
                    assert!(r.get("error").is_none(), "release: {r}");
                }
                Some(_) => panic!("round {round}: unexpected answer {resp}"),
            }
        }
        assert_no_more_responses(&mut fake, &ids).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        for m in &withdrawn {
            assert!(!m.exists(), "{} started after -32800", m.display());
        }
        eprintln!("terminal: -32800 {}, started {started}", withdrawn.len());
    })
    .await
    .expect("test timed out");
}

/// A request id reused right after a withdrawn request gets the answer for the new request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_id_gets_its_own_answer() {
    tokio::time::timeout(T, async {
        let (_host, _agent, mut fake, dir) = served(Policy::preset("ask").unwrap()).await;
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.txt");
        std::fs::write(&a, "AAAA").unwrap();
        let big = "B".repeat(4 * 1024 * 1024);
        std::fs::write(&b, &big).unwrap();
        let read = |p: &Path| {
            json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file",
                "params":{"sessionId":"s","path":p}})
        };
        let cancel = json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}});
        let mut first_was_a = 0usize;
        for round in 0..20 {
            fake.send_raw(&format!("{}\n{cancel}\n{}\n", read(&a), read(&b)))
                .await;
            let first = fake.wait_response(&json!(7), STEP).await;
            let second = fake.wait_response(&json!(7), STEP).await;
            match error_code(&first) {
                Some(-32800) => {}
                // Answered before the withdrawal was read: legitimate, but then with A's content.
                None if first["result"]["content"] == "AAAA" => first_was_a += 1,
                _ => panic!("round {round}: first answer {first}"),
            }
            assert!(
                second["result"]["content"].as_str() == Some(big.as_str()),
                "round {round}: the new request 7 got {}",
                &second.to_string()[..second.to_string().len().min(200)]
            );
            assert_no_more_responses(&mut fake, &[7]).await;
        }
        eprintln!("reused id: first answer was A's content {first_was_a} of 20");
    })
    .await
    .expect("test timed out");
}

//! Property tests of the wire: arbitrary bytes and adversarial JSON-RPC lines through the framing
//! (`LineReader`, fed in random chunk sizes) and the decoder. No panic; every line is accounted for
//! (message / noise / blank / too long, checked against a reference model of the framing); the
//! split points do not change the result; no line passes the bound; every decoded message keeps
//! its promises (ids echo back as valid JSON, payloads are JSON). `PROPTEST_CASES` raises the case
//! count; the libFuzzer target `fuzz/fuzz_targets/wire_decode.rs` runs the same check.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::fuzz_support;

use fuzz_support::script::arb_script;
use fuzz_support::wire::{Decoded, check_wire, fuzz_one, model_frames, runtime};
use proptest::prelude::*;

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
    /// One runtime per test thread: building one per case costs more than the case.
    // Leaked, never dropped: on Windows a thread-local's destructor runs under the loader lock,
    // and a runtime dropped there joins its blocking threads, which need that lock to exit (the
    // test thread deadlocked at its end under Wine).
    static RT: &'static tokio::runtime::Runtime = Box::leak(Box::new(runtime()));
}

fn arb_chunks() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..70, 1..8)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn arbitrary_bytes_frame_like_the_model(
        data in prop::collection::vec(
            prop_oneof![4 => any::<u8>(), 1 => Just(b'\n'), 1 => Just(b'\r')], 0..300),
        chunks in arb_chunks(),
        max_line in 1usize..80,
        buffered in any::<bool>(),
    ) {
        let out = RT.with(|rt| rt.block_on(check_wire(&data, &chunks, max_line, buffered)));
        prop_assert!(out.is_ok(), "{}", out.err().unwrap_or_default());
    }

    #[test]
    fn fuzz_entry_point_holds(data in prop::collection::vec(any::<u8>(), 0..400)) {
        let out = RT.with(|rt| fuzz_one(rt, &data));
        prop_assert!(out.is_ok(), "{}", out.err().unwrap_or_default());
    }
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn adversarial_json_rpc_lines_decode_consistently(
        script in arb_script(24),
        // Mostly large reads: a tiny read costs the reader a 64 KiB buffer fill, and the tiny-read
        // paths are covered by the test above.
        chunks in prop_oneof![1 => arb_chunks(), 4 => prop::collection::vec(512usize..70_000, 1..4)],
        max_line in prop_oneof![Just(4096usize), Just(64), 1usize..2000],
        buffered in any::<bool>(),
    ) {
        let out = RT.with(|rt| rt.block_on(check_wire(&script, &chunks, max_line, buffered)));
        prop_assert!(out.is_ok(), "{}", out.err().unwrap_or_default());
    }
}

/// The harness itself must be able to fail: a model that disagrees is caught.
#[test]
fn the_model_catches_a_wrong_bound() {
    let rt = runtime();
    let data = b"12345\nok\n";
    assert_eq!(model_frames(data, 4).len(), 2);
    let out = rt.block_on(check_wire(data, &[3], 4, false)).unwrap();
    assert_eq!(out[0], Decoded::TooLong(5));
    assert_eq!(
        out[1],
        Decoded::Noise,
        "`ok` is not JSON: reported as noise"
    );
    let reader = rt.block_on(fuzz_support::wire::reader_frames(data, &[1], 5, true));
    assert_ne!(
        reader,
        model_frames(data, 4),
        "the bound changes the frames"
    );
}

/// A last line without `\n` loses its `\r` like every other line (it kept it).
#[test]
fn unterminated_last_line_loses_its_cr() {
    let rt = runtime();
    let got = rt.block_on(fuzz_support::wire::reader_frames(
        b"a\r\nb\r",
        &[1],
        10,
        false,
    ));
    assert_eq!(
        got,
        vec![
            acp_host::wire::Frame::Line(b"a".to_vec()),
            acp_host::wire::Frame::Line(b"b".to_vec())
        ]
    );
}

/// Hand-picked hostile lines, always run (independent of the random cases).
#[test]
fn hostile_lines_are_classified() {
    let rt = runtime();
    let deep = "[".repeat(100_000);
    let nest = |n: usize| format!("{}0{}", "[".repeat(n), "]".repeat(n));
    let deep_update = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"plan","x":{}}}}}}}"#,
        nest(100_000)
    );
    let deep_request = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{}}}"#,
        nest(100)
    );
    let limit_request = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{}}}"#,
        nest(99)
    );
    let deep_response = format!(r#"{{"id":"r","result":{},"jsonrpc":"2.0"}}"#, nest(5000));
    let deep_elsewhere = format!(r#"{{"id":3,"x":{},"method":"m"}}"#, nest(200));
    let deep_array = nest(300);
    type Expect = fn(&Decoded) -> bool;
    let lines: Vec<(&str, Expect)> = vec![
        (deep.as_str(), |d| *d == Decoded::Noise),
        (deep_update.as_str(), |d| {
            *d == Decoded::TooDeep {
                id: None,
                method: Some("session/update".into()),
            }
        }),
        (deep_request.as_str(), |d| {
            *d == Decoded::TooDeep {
                id: Some("5".into()),
                method: Some("fs/read_text_file".into()),
            }
        }),
        // The message (1) holding params nested 99 levels: the limit: a message like any other.
        (
            limit_request.as_str(),
            |d| matches!(d, Decoded::Request { method, .. } if method == "fs/read_text_file"),
        ),
        (deep_response.as_str(), |d| {
            *d == Decoded::TooDeep {
                id: Some("\"r\"".into()),
                method: None,
            }
        }),
        // Deep anywhere in the message, even in a member nobody reads.
        (deep_elsewhere.as_str(), |d| {
            *d == Decoded::TooDeep {
                id: Some("3".into()),
                method: Some("m".into()),
            }
        }),
        (deep_array.as_str(), |d| {
            *d == Decoded::TooDeep {
                id: None,
                method: None,
            }
        }),
        // Valid JSON that serde_json cannot hold as a number: kept verbatim and echoed.
        (
            r#"{"jsonrpc":"2.0","id":1e400,"method":"x"}"#,
            |d| matches!(d, Decoded::Request { id, .. } if id == "1e400"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":-7,"method":"m"}"#,
            |d| matches!(d, Decoded::Request { id, .. } if id == "-7"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}"#,
            |d| matches!(d, Decoded::Request { id, .. } if id == "123456789012345678901234567890"),
        ),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"m"}"#, |d| {
            *d == Decoded::Invalid
        }),
        (r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#, |d| {
            *d == Decoded::Invalid
        }),
        (r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#, |d| {
            matches!(d, Decoded::Notification { .. })
        }),
        // Neither `result` nor `error`: it answers request 3, as a failure (not success + null).
        (
            r#"{"jsonrpc":"2.0","id":3}"#,
            |d| matches!(d, Decoded::Response { id, ok: false } if id == "3"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
            |d| matches!(d, Decoded::Response { id, ok: true } if id == "3"),
        ),
        (r#"{"jsonrpc":"2.0","id":3,"error":{"code":"x"}}"#, |d| {
            *d == Decoded::Invalid
        }),
        (
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool\u005fcall"}}}"#,
            |d| matches!(d, Decoded::Update { kind, .. } if kind == "tool_call"),
        ),
        // Positional (array) forms are not JSON-RPC objects (serde's derives would accept them).
        (
            r#"[7,"session/request_permission",{"sessionId":"s"}]"#,
            |d| *d == Decoded::Invalid,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"session/update","params":["s",{"sessionUpdate":"plan"}]}"#,
            |d| *d == Decoded::Invalid,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":["plan"]}}"#,
            |d| *d == Decoded::Invalid,
        ),
        (r#"{"jsonrpc":"2.0","id":3,"error":[-32000,"auth"]}"#, |d| {
            *d == Decoded::Invalid
        }),
        (
            " \t{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":1}",
            |d| matches!(d, Decoded::Response { id, ok: true } if id == "4"),
        ),
    ];
    for (line, ok) in lines {
        let mut data = line.as_bytes().to_vec();
        data.push(b'\n');
        let out = rt
            .block_on(check_wire(&data, &[7, 1, 4096], 1 << 20, true))
            .unwrap();
        assert!(ok(&out[0]), "{:.80}: {:?}", line, out[0]);
    }
}

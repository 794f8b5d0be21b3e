//! The method table (`acp_host::protocol::METHODS`) against the pinned ACP schema crate, the
//! generated table in docs/PROTOCOL.md, and the faces' own names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

use acp_host::protocol::{Direction, METHODS, Stability, methods};
use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES,
};

fn names(v: impl serde::Serialize) -> BTreeSet<String> {
    let v = serde_json::to_value(v).unwrap();
    v.as_object()
        .unwrap()
        .values()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

fn ours(direction: Direction) -> BTreeSet<String> {
    METHODS
        .iter()
        .filter(|m| m.direction == direction && m.stability == Stability::Stable)
        .map(|m| m.name.to_owned())
        .collect()
}

fn diff(what: &str, schema: &BTreeSet<String>, table: &BTreeSet<String>) {
    let missing: Vec<_> = schema.difference(table).collect();
    let extra: Vec<_> = table.difference(schema).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: stable in the pinned schema but not in the table: {missing:?}; \
         stable in the table but not in the schema: {extra:?}"
    );
}

#[test]
fn every_stable_schema_method_is_in_the_table_and_nothing_else_is_stable() {
    // The crate is built without its `unstable_*` features: what it lists is stable v1.
    diff(
        "client → agent",
        &names(AGENT_METHOD_NAMES),
        &ours(Direction::ClientToAgent),
    );
    diff(
        "agent → client",
        &names(CLIENT_METHOD_NAMES),
        &ours(Direction::AgentToClient),
    );
    diff(
        "both directions",
        &names(PROTOCOL_LEVEL_METHOD_NAMES),
        &ours(Direction::Both),
    );
}

#[test]
fn docs_protocol_md_shows_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PROTOCOL.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- methods:begin -->\n", "<!-- methods:end -->");
    let start = doc.find(begin).expect("begin marker") + begin.len();
    let stop = doc.find(end).expect("end marker");
    let table = methods::markdown_table();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let updated = format!("{}{table}{}", &doc[..start], &doc[stop..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        &doc[start..stop],
        table,
        "docs/PROTOCOL.md is stale: run UPDATE_EXPECT=1 cargo test -p acp-host --test integration method_table::"
    );
}

#[test]
fn face_names_in_the_table_exist_in_each_face() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    // A face's sources, every file of a directory tree with this extension: modules move.
    let tree = |dir: &str, ext: &str| {
        let mut text = String::new();
        let mut dirs = vec![root.join(dir)];
        while let Some(d) = dirs.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == ext) {
                    text += &std::fs::read_to_string(&path).unwrap();
                }
            }
        }
        assert!(!text.is_empty(), "no .{ext} file under {dir}");
        text
    };
    let header = read("include/acp_host.h");
    let node = tree("bindings/node/ts", "ts");
    let python = tree("bindings/python/python/acp_host", "py");
    let kotlin = tree("bindings/uniffi/kotlin/src/main/kotlin", "kt");
    let swift = tree("bindings/uniffi/swift/Sources/AcpHost", "swift");
    let rust = read("core/src/host.rs")
        + &read("core/src/agent.rs")
        + &read("core/src/agent/unstable.rs")
        + &read("core/src/session/handle.rs");
    for m in METHODS {
        let f = m.faces;
        if f.c.starts_with("acph_") {
            let name = f.c.split_whitespace().next().unwrap();
            assert!(header.contains(&format!("{name}(")), "{}: {name}", m.name);
        }
        // `agent.newSession` → a method `newSession(` in the facade.
        if let Some((_, call)) = f.node.split_once('.').filter(|_| !f.node.contains(' ')) {
            assert!(node.contains(&format!("{call}(")), "{}: {}", m.name, f.node);
        }
        if let Some((_, call)) = f.python.split_once('.').filter(|_| !f.python.contains(' ')) {
            assert!(
                python.contains(&format!("def {call}(")),
                "{}: {}",
                m.name,
                f.python
            );
        }
        // uniffi names: `fun \`newSession\`(` in Kotlin, `func newSession(` in Swift; a
        // handler column names the interface (protocol) the embedder implements.
        for (face, name, text, decl) in [
            ("Kotlin", f.kotlin, &kotlin, "fun `{}`("),
            ("Swift", f.swift, &swift, "func {}("),
        ] {
            if name.contains(' ') || name.is_empty() {
                continue;
            }
            let found = match name.split_once('.') {
                Some((_, call)) => text.contains(&decl.replace("{}", call)),
                None => {
                    text.contains(&format!("interface {name}"))
                        || text.contains(&format!("protocol {name}"))
                }
            };
            assert!(found, "{}: {face} {name}", m.name);
        }
        if let Some((_, call)) = f.rust.split_once("::") {
            assert!(
                rust.contains(&format!("fn {call}(")),
                "{}: {}",
                m.name,
                f.rust
            );
        }
    }
}

#[test]
fn the_faces_list_is_the_table_as_json() {
    let list = methods::methods_json();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), METHODS.len());
    let load = list.iter().find(|m| m["name"] == "session/load").unwrap();
    assert_eq!(load["gate"], "agentCapabilities.loadSession");
    assert_eq!(load["direction"], "client_to_agent");
    assert_eq!(load["faces"]["python"], "agent.load_session");
}

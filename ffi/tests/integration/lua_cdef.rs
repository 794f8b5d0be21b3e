//! `bindings/lua/acp_host_cdef.lua` is the header as a LuaJIT `ffi.cdef` declaration (Neovim,
//! any LuaJIT program), generated from the committed `include/acp_host.h` and committed. This test
//! regenerates it and fails when the committed file differs; run with `ACPH_UPDATE_LUA_CDEF=1` to
//! rewrite it (after regenerating the header).
//!
//! The conversion is what a C11 compiler sees of the header (no `__cplusplus`, `__STDC_VERSION__`
//! 201112L): the preprocessor conditionals are evaluated, so the enums are plain enums and
//! `acph_status` / `acph_event_kind` are `uint32_t` typedefs, exactly the ABI. Comments, includes
//! and the `extern "C"` guard go; integer `#define`s become `static const` integers (LuaJIT
//! reads those as `ffi.C.NAME`), the version string a Lua field. A conditional this file does not
//! know fails the test instead of guessing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The value of a preprocessor condition for C11, or `None` when it is not one we know.
fn condition(directive: &str) -> Option<bool> {
    match directive.trim() {
        "#ifndef ACP_HOST_H" => Some(true),
        "#ifndef __cplusplus" => Some(true),
        "#ifdef __cplusplus" => Some(false),
        "#if __STDC_VERSION__ >= 202311L" => Some(false),
        "#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L" => Some(false),
        _ => None,
    }
}

/// Remove `/* ... */` and `// ...` comments in one pass (either may contain the other's opener,
/// e.g. `fs/*` in a line comment); string literals are kept as they are.
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                assert!(i + 1 < b.len(), "unterminated comment");
                i += 2;
            }
            (b'"', _) => {
                out.push(b[i]);
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    out.push(b[i]);
                    i += 1;
                }
                if i < b.len() {
                    out.push(b[i]);
                    i += 1;
                }
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

struct Converted {
    cdef: String,
    /// (name, value) of the integer macros.
    constants: Vec<(String, String)>,
    version: String,
}

fn convert(header: &str) -> Converted {
    let text = strip_comments(header);
    let mut stack: Vec<bool> = Vec::new();
    let mut cdef = Vec::new();
    let mut constants = Vec::new();
    let mut version = String::new();
    for line in text.lines() {
        let t = line.trim();
        let active = stack.iter().all(|x| *x);
        if let Some(directive) = t.strip_prefix('#') {
            let word = directive.split_whitespace().next().unwrap_or("");
            match word {
                "if" | "ifdef" | "ifndef" => stack.push(
                    condition(t)
                        .unwrap_or_else(|| panic!("unknown conditional in the header: {t}")),
                ),
                "else" => {
                    let top = stack.last_mut().expect("#else without #if");
                    *top = !*top;
                }
                "endif" => {
                    stack.pop().expect("#endif without #if");
                }
                "include" => {}
                "define" if active => {
                    let mut parts = directive["define".len()..].split_whitespace();
                    let name = parts.next().expect("#define name").to_owned();
                    let value = parts.collect::<Vec<_>>().join(" ");
                    if value.is_empty() {
                        continue; // the include guard
                    }
                    if let Some(s) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                        assert_eq!(
                            name, "ACPH_VERSION_STRING",
                            "unexpected string macro {name}"
                        );
                        version = s.to_owned();
                        continue;
                    }
                    let value = match value.as_str() {
                        "UINT32_MAX" => "0xffffffff".to_owned(),
                        v if v.chars().all(|c| c.is_ascii_digit()) => v.to_owned(),
                        v => panic!("#define {name} {v}: not an integer this generator knows"),
                    };
                    constants.push((name, value));
                }
                "define" => {}
                other => panic!("unexpected preprocessor directive #{other}"),
            }
            continue;
        }
        if active && !t.is_empty() {
            cdef.push(line.to_owned());
        }
    }
    assert!(stack.is_empty(), "unbalanced conditionals");
    assert!(!version.is_empty(), "no ACPH_VERSION_STRING");
    Converted {
        cdef: cdef.join("\n"),
        constants,
        version,
    }
}

fn generate() -> String {
    let header = std::fs::read_to_string(repo().join("include/acp_host.h")).expect("header");
    let c = convert(&header);
    let mut out = String::new();
    out.push_str(
        "-- GENERATED from include/acp_host.h by ffi/tests/integration/lua_cdef.rs; do not edit. Regenerate with\n\
         -- `ACPH_UPDATE_LUA_CDEF=1 cargo test -p acp-host-ffi --test integration lua_cdef::` after the header changes.\n\
         --\n\
         -- The C ABI of libacp_host for LuaJIT's FFI (Neovim, any LuaJIT program), as a C11\n\
         -- compiler sees the header. Reference: docs/FFI.md. Usage:\n\
         --\n\
         --   local acph = require('acp_host_cdef')   -- declares the ABI (once per Lua state)\n\
         --   local lib = ffi.load('acp_host')        -- or a path to libacp_host.so\n\
         --   assert(lib.acph_abi_version() == acph.ABI_VERSION)\n\
         --\n\
         -- Enum values and the integer macros are reachable as `lib.ACPH_...` (also `ffi.C.ACPH_...`)\n\
         -- and as fields of the returned table.\n\
         local ffi = require('ffi')\n\n",
    );
    assert!(
        !c.cdef.contains("]==]"),
        "the declarations contain the long-string terminator"
    );
    let mut decl = String::new();
    for (name, value) in &c.constants {
        decl.push_str(&format!("static const uint32_t {name} = {value};\n"));
    }
    decl.push_str(&c.cdef);
    out.push_str("local cdef = [==[\n");
    out.push_str(&decl);
    out.push_str("\n]==]\n\n");
    out.push_str(
        "-- Declaring twice in one Lua state is an error in LuaJIT (\"attempt to redefine\"): declare\n\
         -- only when no earlier copy did.\n\
         if not pcall(ffi.typeof, 'struct acph_event') then\n  ffi.cdef(cdef)\nend\n\n",
    );
    out.push_str("return {\n  cdef = cdef,\n");
    out.push_str(&format!("  VERSION_STRING = '{}',\n", c.version));
    for (name, value) in &c.constants {
        out.push_str(&format!(
            "  {} = {},\n",
            name.trim_start_matches("ACPH_"),
            value
        ));
    }
    out.push_str("}\n");
    out
}

#[test]
fn committed_lua_cdef_matches_the_header() {
    let path = repo().join("bindings/lua/acp_host_cdef.lua");
    let generated = generate();
    if std::env::var_os("ACPH_UPDATE_LUA_CDEF").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "bindings/lua/acp_host_cdef.lua is out of date; regenerate it with \
         `ACPH_UPDATE_LUA_CDEF=1 cargo test -p acp-host-ffi --test integration lua_cdef::` and commit it"
    );
}

#[test]
fn the_declarations_keep_every_function_enum_value_and_struct() {
    let header = std::fs::read_to_string(repo().join("include/acp_host.h")).expect("header");
    let c = convert(&header);
    for needle in [
        "acph_status acph_host_try_next_event(",
        "acph_status acph_service_respond(",
        "ACPH_EVENT_SERVICE_REQUESTED = 24,",
        "ACPH_STATUS_ALREADY_RESOLVED = 106,",
        "typedef uint32_t acph_status;",
        "typedef uint32_t acph_event_kind;",
        "typedef struct acph_event {",
        "typedef struct acph_host acph_host;",
    ] {
        assert!(c.cdef.contains(needle), "missing: {needle}");
    }
    for gone in ["#", "//", "/*", "extern \"C\"", ": uint32_t"] {
        assert!(!c.cdef.contains(gone), "left in: {gone}");
    }
    // Every function the header declares is declared here.
    let calls = |s: &str| {
        s.match_indices("acph_")
            .filter(|(i, _)| {
                let rest = &s[*i..];
                let name_len = rest
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .unwrap_or(rest.len());
                rest[name_len..].starts_with('(')
            })
            .count()
    };
    let in_header = calls(&strip_comments(&header));
    assert!(in_header >= 40);
    assert_eq!(calls(&c.cdef), in_header);
    assert!(
        c.constants
            .iter()
            .any(|(n, v)| n == "ACPH_TIMEOUT_INFINITE" && v == "0xffffffff")
    );
}

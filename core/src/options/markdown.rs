//! docs/OPTIONS.md, rendered from the option table (a test keeps the committed file equal to
//! this output; `ACP_BLESS=1 cargo test -p acp-host --lib options` rewrites it).

use super::table::{DOCUMENTS, Opt, Ty};

/// Visit every row, nested objects after their parent, with its full path.
pub fn flatten(opts: &[Opt], prefix: &str, f: &mut dyn FnMut(&str, &Opt)) {
    for o in opts {
        let path = format!("{prefix}{}", o.name);
        f(&path, o);
        if let Ty::Object(rows) = &o.ty {
            flatten(rows, &format!("{path}."), f);
        }
    }
}

fn bytes(n: u64) -> String {
    const UNITS: &[(u64, &str)] = &[(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= *size && n.is_multiple_of(*size) {
            return format!("{} {unit}", n / size);
        }
    }
    n.to_string()
}

/// The type and range as the docs show them.
pub fn type_name(ty: &Ty) -> String {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("`\"{s}\"`"))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    match ty {
        Ty::Bool => "boolean".into(),
        Ty::Int { min, max } => format!("integer {} ..= {}", bytes(*min), bytes(*max)),
        Ty::Ms { min, max, none } => {
            let days = max / 86_400_000;
            let top = if max.is_multiple_of(86_400_000) {
                format!("{days} days")
            } else {
                max.to_string()
            };
            let null = if *none { ", or `null` (none)" } else { "" };
            format!("milliseconds {min} ..= {top}{null}")
        }
        Ty::Enum(v) => list(v),
        Ty::EnumList(v) => format!("list of {}", list(v)),
        Ty::Text => "non-empty string".into(),
        Ty::Texts => "list of strings".into(),
        Ty::Path { dir: true } => "absolute path of an existing directory".into(),
        Ty::Path { dir: false } => "absolute path".into(),
        Ty::Paths { dir: true } => "list of absolute paths of existing directories".into(),
        Ty::Paths { dir: false } => "list of absolute paths".into(),
        Ty::Env => "object: name → string | `null`".into(),
        Ty::Objects => "list of objects".into(),
        Ty::Policy => "preset name | absolute path | `{\"file\": path}` | object".into(),
        Ty::Object(_) => "object".into(),
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The whole of docs/OPTIONS.md.
pub fn render() -> String {
    let mut out = String::from(
        "<!-- Generated from core/src/options/table.rs by `ACP_BLESS=1 cargo test -p acp-host \
         --lib options`; do not edit by hand. -->\n\
         # Options\n\n\
         Every face takes the same options, checked by the same table in the core \
         (`core/src/options/table.rs`), so a value is accepted or refused — with the same \
         `invalid_config` error and `data.path` — whichever face it comes through.\n\n\
         How each face spells a document:\n\n\
         - **C**: the JSON text itself (`acph_host_new`, `acph_host_spawn`, \
         `acph_agent_new_session`, `acph_pool_new`).\n\
         - **Node**: the options object, names as below; a function (`onPermission`, \
         `onElicitation`, `fs`/`terminal` hooks, `onExtRequest`, `onTerminalAuth`) is the \
         face's handler for its option.\n\
         - **Python**: keyword arguments in snake_case (`max_line_bytes=`); a `…Ms` option is \
         also taken in seconds without the suffix (`request_timeout=120.0`); errors name the \
         option as below.\n\
         - **Kotlin**: `HostOptions`/`AgentSpec`/`SessionOptions`/`PoolOptions` properties of \
         the same names.\n\
         - **CLI**: `acph` flags for the options an interactive run needs (`acph --help`).\n\n\
         Rules every face shares:\n\n\
         - An unknown option is an error, never ignored (a typo cannot fall back to a default).\n\
         - `null` (Python `None`, JavaScript `undefined`) means \"not given\": the default; \
         for the time limits marked so, it means \"none\".\n\
         - Paths must be absolute and without `..`; a relative path is refused, not resolved (an editor's \
         process has no meaningful working directory). A `cwd` or `additionalDirectories` entry \
         must exist and be a directory when the options are read, before anything is spawned.\n\
         - A policy is a preset name, an absolute path of a JSON policy file, \
         `{\"file\": \"/abs/policy.json\"}`, or a policy document (docs/PERMISSIONS.md).\n\
         - A handler given while its option names another answerer is an error (it would \
         never be called).\n\n",
    );
    for (title, where_, opts, prefix) in DOCUMENTS {
        out.push_str(&format!("## {title}\n\n{where_}.\n\n"));
        out.push_str("| option | type and range | default | meaning |\n|---|---|---|---|\n");
        flatten(opts, prefix, &mut |path, o| {
            let face = o
                .face
                .map(|f| format!(" ({} face only)", f.name()))
                .unwrap_or_default();
            out.push_str(&format!(
                "| `{path}` | {} | {} | {}{face} |\n",
                cell(&type_name(&o.ty)),
                cell(o.default),
                cell(o.doc)
            ));
        });
        out.push('\n');
    }
    out
}

//! Table-driven validation of an option document: every field known, every value of its row's
//! type and range, errors naming the full field path (`pool.maxAgents`, `roots[2]`,
//! `env.PATH`). What passes here is read by `build` without further checks.

use serde_json::{Map, Value};

use super::Face;
use super::table::{Opt, Ty};
use crate::error::{Error, Result};

pub(super) fn bad(path: &str, message: impl Into<String>) -> Error {
    Error::InvalidConfig {
        path: if path.is_empty() {
            "$".into()
        } else {
            path.into()
        },
        message: message.into(),
    }
}

fn join(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
}

/// What a JSON value is, for messages ("got a string").
fn what(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Check `doc` (an object, or null for "all defaults") against `rows`; `prefix` is the path of
/// the document itself ("" or "pool.").
pub(super) fn object<'a>(
    doc: &'a Value,
    rows: &[Opt],
    prefix: &str,
    face: Face,
) -> Result<Option<&'a Map<String, Value>>> {
    let map = match doc {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => {
            return Err(bad(
                prefix.trim_end_matches('.'),
                format!("expected an object, got {}", what(other)),
            ));
        }
    };
    for (key, value) in map {
        let path = join(prefix, key);
        let Some(row) = rows.iter().find(|r| r.name == key) else {
            let names: Vec<&str> = rows
                .iter()
                .filter(|r| r.face.is_none_or(|f| f == face))
                .map(|r| r.name)
                .collect();
            return Err(bad(
                &path,
                format!("unknown option; expected one of: {}", names.join(", ")),
            ));
        };
        if let Some(only) = row.face
            && only != face
        {
            return Err(bad(&path, format!("only in the {} face", only.name())));
        }
        value_of(value, &row.ty, &path, face)?;
    }
    Ok(Some(map))
}

/// A whole number from a JSON number (`3` or `3.0`; never 3.5, -1, NaN).
pub(super) fn whole(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
}

fn range(v: &Value, min: u64, max: u64, path: &str, unit: &str) -> Result<()> {
    match whole(v) {
        Some(n) if (min..=max).contains(&n) => Ok(()),
        _ => Err(bad(
            path,
            format!("expected a whole number{unit} in {min} ..= {max}, got {v}"),
        )),
    }
}

fn absolute(v: &Value, dir: bool, path: &str) -> Result<()> {
    let Some(s) = v.as_str() else {
        return Err(bad(
            path,
            format!("expected an absolute path (a string), got {}", what(v)),
        ));
    };
    if s.is_empty() || !std::path::Path::new(s).is_absolute() {
        return Err(bad(
            path,
            format!("must be an absolute path, got `{s}` (relative paths are not resolved)"),
        ));
    }
    if s.contains('\0') {
        return Err(bad(path, "must not contain NUL"));
    }
    // The sandbox decides on paths as written: a root or cwd with `..` would never match
    // what it names, so it is refused rather than silently useless.
    if std::path::Path::new(s)
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(bad(path, format!("must not contain `..`, got `{s}`")));
    }
    if dir && let Some(why) = crate::transport::unusable_dir(std::path::Path::new(s)) {
        return Err(bad(path, why));
    }
    Ok(())
}

fn list<'a>(v: &'a Value, path: &str, of: &str) -> Result<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| bad(path, format!("expected a list of {of}, got {}", what(v))))
}

fn value_of(v: &Value, ty: &Ty, path: &str, face: Face) -> Result<()> {
    // `null` is "not given" (the default), except where a row says it means "none".
    if v.is_null() {
        return Ok(());
    }
    match ty {
        Ty::Bool => {
            if !v.is_boolean() {
                return Err(bad(path, format!("expected true or false, got {v}")));
            }
        }
        Ty::Int { min, max } => range(v, *min, *max, path, "")?,
        Ty::Ms { min, max, none } => {
            let unit = if *none {
                " of milliseconds (or null for none)"
            } else {
                " of milliseconds"
            };
            range(v, *min, *max, path, unit)?;
        }
        Ty::Enum(values) => match v.as_str() {
            Some(s) if values.contains(&s) => {}
            _ => {
                return Err(bad(
                    path,
                    format!("expected one of {}, got {v}", quoted(values)),
                ));
            }
        },
        Ty::EnumList(values) => {
            for (i, item) in list(v, path, "strings")?.iter().enumerate() {
                match item.as_str() {
                    Some(s) if values.contains(&s) => {}
                    _ => {
                        return Err(bad(
                            &format!("{path}[{i}]"),
                            format!("expected one of {}, got {item}", quoted(values)),
                        ));
                    }
                }
            }
        }
        Ty::Text => match v.as_str() {
            Some("") => return Err(bad(path, "must not be empty")),
            Some(_) => {}
            None => return Err(bad(path, format!("expected a string, got {}", what(v)))),
        },
        Ty::Texts => {
            for (i, item) in list(v, path, "strings")?.iter().enumerate() {
                if !item.is_string() {
                    return Err(bad(
                        &format!("{path}[{i}]"),
                        format!("expected a string, got {}", what(item)),
                    ));
                }
            }
        }
        Ty::Path { dir } => absolute(v, *dir, path)?,
        Ty::Paths { dir } => {
            for (i, item) in list(v, path, "absolute paths")?.iter().enumerate() {
                absolute(item, *dir, &format!("{path}[{i}]"))?;
            }
        }
        Ty::Env => {
            let Some(map) = v.as_object() else {
                return Err(bad(
                    path,
                    format!("expected an object of NAME: value, got {}", what(v)),
                ));
            };
            for (k, val) in map {
                let p = format!("{path}.{k}");
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    return Err(bad(&p, "not a variable name (empty, or has `=` or NUL)"));
                }
                match val {
                    Value::Null => {}
                    Value::String(s) if !s.contains('\0') => {}
                    Value::String(_) => return Err(bad(&p, "must not contain NUL")),
                    other => {
                        return Err(bad(
                            &p,
                            format!("expected a string or null, got {}", what(other)),
                        ));
                    }
                }
            }
        }
        Ty::Objects => {
            for (i, item) in list(v, path, "objects")?.iter().enumerate() {
                if !item.is_object() {
                    return Err(bad(
                        &format!("{path}[{i}]"),
                        format!("expected an object, got {}", what(item)),
                    ));
                }
            }
        }
        Ty::Policy => match v {
            Value::String(s) if !s.is_empty() => {}
            Value::Object(_) => {}
            other => {
                return Err(bad(
                    path,
                    format!(
                        "expected a preset name, an absolute file path or a policy document \
                         (object), got {}",
                        what(other)
                    ),
                ));
            }
        },
        Ty::Object(rows) => {
            object(v, rows, &format!("{path}."), face)?;
        }
    }
    Ok(())
}

pub(super) fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

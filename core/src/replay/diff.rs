//! Comparing what the host under test sent with what the recording holds, field by field, and the
//! values a replay learns instead of comparing (bindings).
//!
//! Some values differ between two honest runs and are not the host's behaviour: a session's
//! working directory (a test's temporary directory), a terminal id the host chose. The first time
//! such a value differs, the replay binds the recorded value to the live one and from then on
//! rewrites it in everything the agent's side sends (so the agent reads the files of the live
//! directory) and in everything it expects. A recorded `<redacted>` matches any value.

use serde::Serialize;
use serde_json::Value;

/// What redaction left in a recording (`record::redact`).
const REDACTED: &str = "<redacted>";
/// Keys whose string values are bound, not compared: paths a run chose and ids the host chose.
const BOUND_KEYS: &[&str] = &["cwd", "terminalId", "additionalDirectories"];
/// Differences kept per message (the count says how many there were).
const MAX_DIFFERENCES: usize = 20;

/// One field that differs: its path in the message (`params.prompt[0].text`), the recorded value
/// and the value the host sent (absent when the field is missing on that side).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
}

impl Difference {
    /// `params.cwd: recorded "/a", host sent "/b"`.
    pub fn describe(&self) -> String {
        let show = |v: &Option<Value>| match v {
            None => "nothing".to_owned(),
            Some(v) => clip(&v.to_string()),
        };
        format!(
            "{}: recorded {}, host sent {}",
            self.path,
            show(&self.recorded),
            show(&self.live)
        )
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 120;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

/// Recorded strings bound to live ones, in the order learnt.
#[derive(Debug, Default, Clone)]
pub struct Bindings {
    pairs: Vec<(String, String)>,
}

impl Bindings {
    /// `s` with a bound prefix rewritten: the whole string, or a path under it.
    pub fn apply_str(&self, s: &str) -> Option<String> {
        for (recorded, live) in &self.pairs {
            if s == recorded {
                return Some(live.clone());
            }
            if let Some(rest) = s.strip_prefix(recorded.as_str())
                && rest.starts_with(['/', '\\'])
            {
                return Some(format!("{live}{rest}"));
            }
        }
        None
    }

    /// Every string of `v` rewritten (object keys stay).
    pub fn apply(&self, v: &mut Value) {
        if self.pairs.is_empty() {
            return;
        }
        match v {
            Value::String(s) => {
                if let Some(new) = self.apply_str(s) {
                    *s = new;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.apply(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.apply(i)),
            _ => {}
        }
    }

    fn bind(&mut self, recorded: &str, live: &str) {
        if !recorded.is_empty() && !self.pairs.iter().any(|(r, _)| r == recorded) {
            self.pairs.push((recorded.to_owned(), live.to_owned()));
            // Longest first: a nested directory's binding wins over its parent's.
            self.pairs.sort_by_key(|(r, _)| std::cmp::Reverse(r.len()));
        }
    }
}

/// The differences between `recorded` and `live`, learning bindings on the way. `ignore` lists
/// paths (as in [`Difference::path`]) never compared. Returns the differences (at most
/// [`MAX_DIFFERENCES`]) and how many there were in all.
pub fn compare(
    recorded: &Value,
    live: &Value,
    ignore: &[String],
    bindings: &mut Bindings,
) -> (Vec<Difference>, usize) {
    let mut walk = Walk {
        ignore,
        bindings,
        out: Vec::new(),
        count: 0,
    };
    walk.value(recorded, live, &mut String::new(), false);
    (walk.out, walk.count)
}

struct Walk<'a> {
    ignore: &'a [String],
    bindings: &'a mut Bindings,
    out: Vec<Difference>,
    count: usize,
}

impl Walk<'_> {
    fn differ(&mut self, path: &str, recorded: Option<&Value>, live: Option<&Value>) {
        self.count += 1;
        if self.out.len() < MAX_DIFFERENCES {
            self.out.push(Difference {
                path: path.to_owned(),
                recorded: recorded.cloned(),
                live: live.cloned(),
            });
        }
    }

    fn value(&mut self, recorded: &Value, live: &Value, path: &mut String, bound: bool) {
        if self.ignore.iter().any(|i| i == path) {
            return;
        }
        match (recorded, live) {
            (Value::String(r), _) if r == REDACTED => {}
            (Value::String(r), Value::String(l)) => {
                let r = self.bindings.apply_str(r).unwrap_or_else(|| r.clone());
                if r == *l {
                    return;
                }
                if bound {
                    self.bindings.bind(&r, l);
                    return;
                }
                self.differ(path, Some(recorded), Some(live));
            }
            (Value::Number(r), Value::Number(l)) => {
                if r != l && r.as_f64() != l.as_f64() {
                    self.differ(path, Some(recorded), Some(live));
                }
            }
            (Value::Object(r), Value::Object(l)) => {
                let len = path.len();
                for (key, rv) in r {
                    push_key(path, key);
                    let bound = BOUND_KEYS.contains(&key.as_str());
                    match l.get(key) {
                        Some(lv) => self.value(rv, lv, path, bound),
                        None if self.ignore.iter().any(|i| i == path) => {}
                        None => self.differ(path, Some(rv), None),
                    }
                    path.truncate(len);
                }
                for (key, lv) in l {
                    if !r.contains_key(key) {
                        push_key(path, key);
                        if !self.ignore.iter().any(|i| i == path) {
                            self.differ(path, None, Some(lv));
                        }
                        path.truncate(len);
                    }
                }
            }
            (Value::Array(r), Value::Array(l)) => {
                let len = path.len();
                for i in 0..r.len().max(l.len()) {
                    path.push_str(&format!("[{i}]"));
                    match (r.get(i), l.get(i)) {
                        (Some(rv), Some(lv)) => self.value(rv, lv, path, bound),
                        (rv, lv) => self.differ(path, rv, lv),
                    }
                    path.truncate(len);
                }
            }
            (r, l) if r == l => {}
            (r, l) => self.differ(path, Some(r), Some(l)),
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diff(r: Value, l: Value) -> Vec<String> {
        let mut b = Bindings::default();
        compare(&r, &l, &[], &mut b)
            .0
            .iter()
            .map(Difference::describe)
            .collect()
    }

    #[test]
    fn equal_messages_have_no_difference() {
        let m = json!({"a": [1, {"b": "c"}], "n": 1});
        assert!(diff(m.clone(), m).is_empty());
        assert!(diff(json!({"n": 1}), json!({"n": 1.0})).is_empty());
    }

    #[test]
    fn every_kind_of_difference_is_named_by_its_path() {
        let got = diff(
            json!({"params": {"prompt": [{"text": "hi"}], "gone": 1, "x": [1, 2]}}),
            json!({"params": {"prompt": [{"text": "hello"}], "new": true, "x": [1]}}),
        );
        assert_eq!(
            got,
            [
                r#"params.prompt[0].text: recorded "hi", host sent "hello""#,
                "params.gone: recorded 1, host sent nothing",
                "params.x[1]: recorded 2, host sent nothing",
                "params.new: recorded nothing, host sent true",
            ]
        );
    }

    #[test]
    fn redacted_matches_anything_and_ignored_paths_are_skipped() {
        let mut b = Bindings::default();
        let (d, _) = compare(
            &json!({"env": "<redacted>", "clientInfo": {"v": 1}}),
            &json!({"env": {"K": "v"}, "clientInfo": {"v": 2}}),
            &["clientInfo".to_owned()],
            &mut b,
        );
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn a_working_directory_is_bound_and_rewritten_after() {
        let mut b = Bindings::default();
        let (d, _) = compare(
            &json!({"params": {"cwd": "/rec/ws", "additionalDirectories": ["/rec/other"]}}),
            &json!({"params": {"cwd": "/live/ws", "additionalDirectories": ["/live/o"]}}),
            &[],
            &mut b,
        );
        assert!(d.is_empty());
        let mut sent = json!({"path": "/rec/ws/src/a.rs", "other": "/rec/other", "x": "/rec/wsx"});
        b.apply(&mut sent);
        assert_eq!(
            sent,
            json!({"path": "/live/ws/src/a.rs", "other": "/live/o", "x": "/rec/wsx"})
        );
        // Once bound, a path elsewhere is compared after rewriting: equal.
        let (d, _) = compare(
            &json!({"path": "/rec/ws/b"}),
            &json!({"path": "/live/ws/b"}),
            &[],
            &mut b,
        );
        assert!(d.is_empty());
        // Not a bound key: still a difference.
        let (d, _) = compare(
            &json!({"path": "/rec/x"}),
            &json!({"path": "/y"}),
            &[],
            &mut b,
        );
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn long_values_are_clipped_in_the_description_only() {
        let long = "x".repeat(1000);
        let got = diff(json!({"a": long}), json!({"a": "y"}));
        assert!(got[0].len() < 300, "{}", got[0]);
        let count = compare(
            &json!((0..50).collect::<Vec<_>>()),
            &json!((100..150).collect::<Vec<_>>()),
            &[],
            &mut Bindings::default(),
        );
        assert_eq!((count.0.len(), count.1), (MAX_DIFFERENCES, 50));
    }
}

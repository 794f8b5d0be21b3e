//! The local rule engine: hard-deny rules, allow/ask/deny rules, presets and session grants.
//!
//! Everything here is synchronous, allocation-light and does no I/O after loading, so the
//! connection actor can call it inline. The semantics are documented in `docs/PERMISSIONS.md`;
//! the short version:
//!
//! - the built-in `.git` write deny is always on and cannot be removed;
//! - `hardDeny` entries and every `deny` rule are authoritative (nobody can override them);
//! - among matching rules, deny > ask > allow;
//! - unmatched subjects get the preset's default.
//!
//! Matching is deliberately asymmetric where the subject has several values: a restrictive rule
//! (`deny`, `ask`, `hardDeny`) matches if *any* path or command (in *any* of its normalised
//! forms) matches, while an `allow` rule needs *every* path and every command segment to match.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde_json::{Map, Value};

pub use super::commands::MAX_COMMAND_BYTES;
use super::commands::{CommandForms, join_command};
pub use super::env::{BUILTIN_ENV_DENY, BUILTIN_ENV_SPARED};
use super::env::{EnvPatterns, builtin_denies, builtin_rule, env_glob_set, env_matches};
use super::paths::{PathForms, PathGlobs, PathPatterns, forms_have_git_component};
use super::tool_call::{Command, Fields};
use crate::wire::lenient::Str;

/// The built-in presets, in documentation order.
pub const PRESETS: &[&str] = &["deny-all", "read-only", "ask"];

/// The ACP v1 tool kinds a rule's `kinds` may name. A tool call without a kind counts as `other`.
pub const TOOL_KINDS: &[&str] = &[
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

/// Kinds that only look at things (allowed by `read-only`, exempt from the built-in `.git` deny).
const READ_LIKE_KINDS: &[&str] = &["read", "search", "think", "fetch"];

/// The description carried by a verdict of the always-on `.git` write deny.
pub const BUILTIN_GIT_RULE: &str = "deny write **/.git/** (built-in)";

/// `rawInput` keys whose string (or array-of-strings) value is taken as a path.
pub(crate) const RAW_PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "notebook_path",
    "notebookPath",
    "paths",
    "file_paths",
    "filePaths",
    "source_path",
    "sourcePath",
    "destination_path",
    "destinationPath",
    "old_path",
    "oldPath",
    "new_path",
    "newPath",
];

/// What kind of request a [`Subject`] describes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A `session/request_permission` (the agent asks before running one of its own tools).
    #[default]
    Permission,
    /// `fs/read_text_file`.
    Read,
    /// `fs/write_text_file`.
    Write,
    /// `terminal/create`.
    Execute,
}

impl Operation {
    /// The name used in policy documents (`operations`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Permission => "permission",
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Execute => "execute",
        }
    }

    fn parse(s: &str) -> Option<Operation> {
        match s {
            "permission" => Some(Operation::Permission),
            "read" => Some(Operation::Read),
            "write" => Some(Operation::Write),
            "execute" => Some(Operation::Execute),
            _ => None,
        }
    }
}

/// What a rule is matched against, extracted from a permission request's toolCall (merged with the
/// session's known tool call) or from an fs/terminal request.
#[derive(Debug, Clone, Default)]
pub struct Subject {
    /// Permission (a request_permission) | Read | Write | Execute.
    pub operation: Operation,
    /// `toolCall.kind`; fs read → `"read"`, fs write → `"edit"`, terminal → `"execute"`.
    /// `None` counts as `"other"`.
    pub tool_kind: Option<String>,
    pub title: Option<String>,
    /// `toolCall.name`.
    pub tool_name: Option<String>,
    /// Absolute paths: `locations[].path`, `content[type=diff].path`, `rawInput.path` /
    /// `file_path` / `filePath` (and a few similar keys); the fs request's path.
    pub paths: Vec<String>,
    /// Command lines: terminal `"cmd arg1 arg2"` (args joined by single spaces);
    /// `rawInput.command` (a string, or an array joined by single spaces).
    pub commands: Vec<String>,
    /// Names of the environment variables the request sets: terminal `env[].name`;
    /// `rawInput.env` (an object's keys, or an array's `name`s).
    pub env: Vec<String>,
}

impl Subject {
    /// Extract a subject from a `toolCall` (a ToolCallUpdate, ideally merged over the session's
    /// known tool call). `operation` is [`Operation::Permission`]. Never fails: missing or
    /// mistyped fields are simply absent.
    pub fn from_tool_call(tool_call: &Value) -> Subject {
        Subject::from_fields(&Fields::of_tree(tool_call))
    }

    /// The one reading of a tool call's members (of its tree or of its text, see
    /// `permission/tool_call.rs`).
    pub(crate) fn from_fields(fields: &Fields<'_>) -> Subject {
        let mut subject = Subject {
            operation: Operation::Permission,
            tool_kind: fields.kind.clone().owned(),
            title: fields.title.clone().owned(),
            tool_name: fields.name.clone().owned(),
            ..Subject::default()
        };
        for location in &fields.locations.0 {
            if let Some(p) = location.0.as_deref() {
                subject.add_path(p);
            }
        }
        for item in &fields.content.0 {
            if item.kind.as_deref() == Some("diff")
                && let Some(p) = item.path.as_deref()
            {
                subject.add_path(p);
            }
        }
        let raw = &fields.raw_input;
        if !raw.object {
            return subject;
        }
        for (_, paths) in &raw.paths {
            for p in &paths.0 {
                subject.add_path(p);
            }
        }
        let args: Vec<&str> = raw.args.0.iter().filter_map(Str::as_deref).collect();
        match &raw.command {
            Command::Line(cmd) if !cmd.trim().is_empty() => {
                subject.commands.push(join_command(cmd, &args));
            }
            Command::Parts(parts) if !parts.is_empty() => subject.commands.push(parts.join(" ")),
            _ => {}
        }
        subject
            .env
            .extend(raw.env.0.iter().map(|n| n.clone().into_owned()));
        subject
    }

    /// The subject of an `fs/read_text_file` request.
    pub fn read(path: &str) -> Subject {
        Subject {
            operation: Operation::Read,
            tool_kind: Some("read".to_owned()),
            paths: vec![path.to_owned()],
            ..Subject::default()
        }
    }

    /// The subject of an `fs/write_text_file` request.
    pub fn write(path: &str) -> Subject {
        Subject {
            operation: Operation::Write,
            tool_kind: Some("edit".to_owned()),
            paths: vec![path.to_owned()],
            ..Subject::default()
        }
    }

    /// The subject of a `terminal/create` request: `command` and `args` joined by single spaces.
    pub fn execute<S: AsRef<str>>(command: &str, args: &[S]) -> Subject {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        Subject {
            operation: Operation::Execute,
            tool_kind: Some("execute".to_owned()),
            commands: vec![join_command(command, &args)],
            ..Subject::default()
        }
    }

    /// The same subject with the names of the environment variables the request sets
    /// (`terminal/create`'s `env`).
    pub fn with_env<I, S>(mut self, names: I) -> Subject
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.env
            .extend(names.into_iter().map(|n| n.as_ref().to_owned()));
        self
    }

    fn add_path(&mut self, p: &str) {
        if !p.is_empty() && !self.paths.iter().any(|q| q == p) {
            self.paths.push(p.to_owned());
        }
    }

    fn kind(&self) -> &str {
        self.tool_kind.as_deref().unwrap_or("other")
    }
}

/// The engine's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Denied locally; `rule` says which rule (e.g. `deny write **/.git/** (built-in)`).
    Deny { rule: String },
    /// Allowed locally; `rule` says which rule or preset.
    Allow { rule: String },
    /// Not decided locally: consult the session grants, then the host's decider.
    Ask,
}

/// A policy document (or preset) that cannot be used. `path` names the spot in the document,
/// e.g. `rules[2].paths[0]` (`$` for the document as a whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid policy: {path}: {message}")]
pub struct PolicyError {
    pub path: String,
    pub message: String,
}

impl From<PolicyError> for crate::Error {
    /// A policy is part of the host's configuration: `invalid_config` with `path` under `policy`.
    fn from(e: PolicyError) -> Self {
        let path = if e.path.is_empty() || e.path == "$" {
            "policy".to_owned()
        } else {
            format!("policy.{}", e.path)
        };
        crate::Error::InvalidConfig {
            path,
            message: e.message,
        }
    }
}

impl PolicyError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> PolicyError {
        PolicyError {
            path: path.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preset {
    DenyAll,
    ReadOnly,
    Ask,
}

impl Preset {
    fn parse(name: &str, path: &str) -> Result<Preset, PolicyError> {
        match name {
            "deny-all" => Ok(Preset::DenyAll),
            "read-only" => Ok(Preset::ReadOnly),
            "ask" => Ok(Preset::Ask),
            other => Err(PolicyError::new(
                path,
                format!(
                    "unknown preset {other:?}; expected one of: {}",
                    PRESETS.join(", ")
                ),
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Preset::DenyAll => "deny-all",
            Preset::ReadOnly => "read-only",
            Preset::Ask => "ask",
        }
    }

    /// The verdict for a subject no rule matched.
    fn default_verdict(self, subject: &Subject) -> Verdict {
        let rule = || format!("preset {}", self.name());
        match (self, subject.operation) {
            (_, Operation::Read) => Verdict::Allow { rule: rule() },
            (Preset::Ask, Operation::Permission) => Verdict::Ask,
            (Preset::Ask, Operation::Write | Operation::Execute) => Verdict::Allow { rule: rule() },
            (Preset::ReadOnly, Operation::Permission)
                if READ_LIKE_KINDS.contains(&subject.kind()) =>
            {
                Verdict::Allow { rule: rule() }
            }
            (Preset::DenyAll | Preset::ReadOnly, _) => Verdict::Deny { rule: rule() },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Allow,
    Deny,
    Ask,
}

#[derive(Debug, Clone)]
struct Rule {
    action: Action,
    /// `rules[2] (allow kinds=read|search)` or `rules[2] (deny: <description>)`.
    label: String,
    operations: Option<Vec<Operation>>,
    kinds: Option<Vec<String>>,
    titles: Option<GlobSet>,
    tool_names: Option<GlobSet>,
    paths: Option<PathGlobs>,
    commands: Option<GlobSet>,
    command_regex: Option<Regex>,
    env: Option<GlobSet>,
}

impl Rule {
    fn matches(&self, p: &Prepared<'_>) -> bool {
        let restrictive = self.action != Action::Allow;
        let s = p.subject;
        if let Some(ops) = &self.operations
            && !ops.contains(&s.operation)
        {
            return false;
        }
        if let Some(kinds) = &self.kinds
            && !kinds.iter().any(|k| k == s.kind())
        {
            return false;
        }
        if let Some(set) = &self.titles
            && !s.title.as_deref().is_some_and(|t| set.is_match(t))
        {
            return false;
        }
        if let Some(set) = &self.tool_names
            && !s.tool_name.as_deref().is_some_and(|t| set.is_match(t))
        {
            return false;
        }
        if let Some(set) = &self.paths
            && !set.matches(&p.paths, restrictive)
        {
            return false;
        }
        if let Some(set) = &self.commands
            && !p.commands_match(restrictive, |c| set.is_match(c))
        {
            return false;
        }
        if let Some(re) = &self.command_regex
            && !p.commands_match(restrictive, |c| re.is_match(c))
        {
            return false;
        }
        if let Some(set) = &self.env
            && !env_matches(set, &s.env, restrictive)
        {
            return false;
        }
        true
    }

    /// Whether this rule could match some subject of operation `op` (fs and terminal subjects
    /// have a fixed kind and no title or tool name; only fs subjects have paths, only terminal
    /// ones commands).
    fn could_match(&self, op: Operation) -> bool {
        if self
            .operations
            .as_ref()
            .is_some_and(|ops| !ops.contains(&op))
        {
            return false;
        }
        let (kind, paths, commands) = match op {
            Operation::Permission => return true,
            Operation::Read => ("read", true, false),
            Operation::Write => ("edit", true, false),
            Operation::Execute => ("execute", false, true),
        };
        let has_commands = self.commands.is_some() || self.command_regex.is_some();
        self.kinds
            .as_ref()
            .is_none_or(|k| k.iter().any(|k| k == kind))
            && self.titles.is_none()
            && self.tool_names.is_none()
            && (paths || self.paths.is_none())
            && (commands || !has_commands)
    }
}

/// A list of glob patterns with their sources (for naming the one that matched).
#[derive(Debug, Clone)]
struct PatternList {
    patterns: Vec<String>,
    set: GlobSet,
    literal_separator: bool,
}

impl PatternList {
    fn empty(literal_separator: bool) -> PatternList {
        PatternList {
            patterns: Vec::new(),
            set: GlobSet::empty(),
            literal_separator,
        }
    }

    fn push(&mut self, pattern: &str, list_at: &str) -> Result<(), PolicyError> {
        let mut patterns = self.patterns.clone();
        patterns.push(pattern.to_owned());
        let set = glob_set(&patterns, list_at, self.literal_separator)?;
        self.patterns = patterns;
        self.set = set;
        Ok(())
    }

    fn first_match(&self, candidate: &str) -> Option<&str> {
        if !self.set.is_match(candidate) {
            return None;
        }
        let index = *self.set.matches(candidate).first()?;
        self.patterns.get(index).map(String::as_str)
    }
}

/// A loaded policy: preset + rules + hard-deny lists (plus the always-on `.git` write deny).
#[derive(Debug, Clone)]
pub struct Policy {
    name: String,
    preset: Preset,
    rules: Vec<Rule>,
    hard_paths: PathPatterns,
    hard_commands: PatternList,
    hard_command_regex: Option<Regex>,
    hard_env: EnvPatterns,
}

impl Default for Policy {
    /// The `deny-all` preset.
    fn default() -> Policy {
        Policy::from_preset(Preset::DenyAll)
    }
}

impl Policy {
    fn from_preset(preset: Preset) -> Policy {
        Policy {
            name: preset.name().to_owned(),
            preset,
            rules: Vec::new(),
            hard_paths: PathPatterns::empty(),
            hard_commands: PatternList::empty(false),
            hard_command_regex: None,
            hard_env: EnvPatterns::default(),
        }
    }

    /// Built-in presets: `"deny-all"` | `"read-only"` | `"ask"` (an unknown name is an error
    /// listing the valid ones).
    pub fn preset(name: &str) -> Result<Policy, PolicyError> {
        Preset::parse(name, "preset").map(Policy::from_preset)
    }

    /// [`Policy::preset`] for a host configuration whose `policy` is a preset name: an unknown
    /// name is `invalid_config` at path `policy` (the name is the policy), as every face reports.
    pub fn preset_config(name: &str) -> Result<Policy, crate::Error> {
        Policy::preset(name).map_err(|e| crate::Error::InvalidConfig {
            path: "policy".into(),
            message: e.message,
        })
    }

    /// Parse a JSON policy document (schema in `docs/PERMISSIONS.md`). Unknown fields, bad
    /// values, bad globs and bad regexes are errors naming their location.
    pub fn from_json(text: &str) -> Result<Policy, PolicyError> {
        let doc: Value = serde_json::from_str(text)
            .map_err(|e| PolicyError::new("$", format!("not valid JSON: {e}")))?;
        parse_document(&doc)
    }

    /// Load a JSON policy document from a file. TOML is not supported (no TOML parser is built
    /// in): a `.toml` file is an error.
    pub fn from_file(path: &Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
        {
            return Err(PolicyError::new(
                shown,
                "TOML policy files are not supported; write the policy as JSON",
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| PolicyError::new(shown.clone(), format!("cannot read: {e}")))?;
        Policy::from_json(&text).map_err(|e| PolicyError {
            path: e.path,
            message: format!("{} (in {shown})", e.message),
        })
    }

    /// The preset's name for a policy made by [`Policy::preset`] (or `Default`), else `"custom"`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Add a hard-deny path glob (same syntax as `hardDeny.paths`). The policy becomes `custom`.
    pub fn add_hard_deny_path(&mut self, glob: &str) -> Result<(), PolicyError> {
        let at = format!("hardDeny.paths[{}]", self.hard_paths.patterns.len());
        check_pattern(glob, &at)?;
        self.hard_paths.push(glob, "hardDeny.paths")?;
        self.name = "custom".to_owned();
        Ok(())
    }

    /// Add a hard-deny command glob (same syntax as `hardDeny.commands`). The policy becomes
    /// `custom`.
    pub fn add_hard_deny_command(&mut self, glob: &str) -> Result<(), PolicyError> {
        let at = format!("hardDeny.commands[{}]", self.hard_commands.patterns.len());
        check_pattern(glob, &at)?;
        self.hard_commands.push(glob, "hardDeny.commands")?;
        self.name = "custom".to_owned();
        Ok(())
    }

    /// Add a hard-deny environment variable glob (same syntax as `hardDeny.env`, compared
    /// case-insensitively): a request that sets a matching variable is denied, whatever the
    /// rules say. The policy becomes `custom`.
    pub fn add_hard_deny_env(&mut self, glob: &str) -> Result<(), PolicyError> {
        let at = format!("hardDeny.env[{}]", self.hard_env.patterns.len());
        check_pattern(glob, &at)?;
        let mut patterns = self.hard_env.patterns.clone();
        patterns.push(glob.to_owned());
        self.hard_env = EnvPatterns::new(patterns).map_err(|(_, m)| PolicyError::new(at, m))?;
        self.name = "custom".to_owned();
        Ok(())
    }

    /// Whether some request of operation `op` could be allowed locally: by the preset, or by an
    /// allow rule that can match such a request. The host advertises `fs.writeTextFile` and
    /// `terminal` only when this holds for `Write` and `Execute`.
    pub fn can_allow(&self, op: Operation) -> bool {
        let preset = matches!(
            (self.preset, op),
            (_, Operation::Read)
                | (Preset::ReadOnly, Operation::Permission)
                | (Preset::Ask, Operation::Write | Operation::Execute)
        );
        preset
            || self
                .rules
                .iter()
                .any(|r| r.action == Action::Allow && r.could_match(op))
    }

    /// Decide locally: hard deny (built-in, `hardDeny`, `deny` rules) → ask rules → allow rules →
    /// the preset's default.
    pub fn evaluate(&self, subject: &Subject) -> Verdict {
        let prepared = Prepared::new(subject);
        if let Some(rule) = self.hard_deny_prepared(&prepared) {
            return Verdict::Deny { rule };
        }
        if self
            .rules
            .iter()
            .any(|r| r.action == Action::Ask && r.matches(&prepared))
        {
            return Verdict::Ask;
        }
        if let Some(rule) = self
            .rules
            .iter()
            .find(|r| r.action == Action::Allow && r.matches(&prepared))
        {
            return Verdict::Allow {
                rule: rule.label.clone(),
            };
        }
        self.preset.default_verdict(subject)
    }

    /// Only the hard-deny part (the built-in `.git` write deny, `hardDeny`, and every `deny`
    /// rule): for fs/terminal requests routed to the embedder and as a final guard. Returns the
    /// description of the first rule that denies.
    pub fn hard_deny(&self, subject: &Subject) -> Option<String> {
        self.hard_deny_prepared(&Prepared::new(subject))
    }

    fn hard_deny_prepared(&self, p: &Prepared<'_>) -> Option<String> {
        let s = p.subject;
        let writes = match s.operation {
            Operation::Write => true,
            Operation::Permission => !READ_LIKE_KINDS.contains(&s.kind()),
            Operation::Read | Operation::Execute => false,
        };
        if writes && p.paths.iter().any(forms_have_git_component) {
            return Some(BUILTIN_GIT_RULE.to_owned());
        }
        if let Some(glob) = self.hard_paths.first_match(&p.paths) {
            return Some(format!("hardDeny.paths ({glob})"));
        }
        if let Some((glob, name)) = self.hard_env.first_match(&s.env) {
            return Some(format!("hardDeny.env ({glob}: {name})"));
        }
        let has_command_patterns =
            !self.hard_commands.patterns.is_empty() || self.hard_command_regex.is_some();
        for forms in &p.commands {
            if forms.oversized && has_command_patterns {
                return Some(format!(
                    "hardDeny.commands (command line longer than {MAX_COMMAND_BYTES} bytes)"
                ));
            }
            for form in &forms.deny.list {
                if let Some(glob) = self.hard_commands.first_match(form) {
                    return Some(format!("hardDeny.commands ({glob})"));
                }
                if let Some(re) = &self.hard_command_regex
                    && re.is_match(form)
                {
                    return Some(format!("hardDeny.commandRegex ({})", re.as_str()));
                }
            }
        }
        if let Some(rule) = self
            .rules
            .iter()
            .find(|r| r.action == Action::Deny && r.matches(p))
        {
            return Some(rule.label.clone());
        }
        self.builtin_env_deny(p)
    }

    /// The built-in env deny: the first variable on [`BUILTIN_ENV_DENY`] that no allow rule
    /// matching the whole request names in its `env`.
    fn builtin_env_deny(&self, p: &Prepared<'_>) -> Option<String> {
        let mut denied = p
            .subject
            .env
            .iter()
            .filter(|n| builtin_denies(n))
            .peekable();
        denied.peek()?;
        let lifting: Vec<&GlobSet> = self
            .rules
            .iter()
            .filter(|r| r.action == Action::Allow && r.env.is_some() && r.matches(p))
            .filter_map(|r| r.env.as_ref())
            .collect();
        denied
            .find(|name| {
                !lifting
                    .iter()
                    .any(|set| env_matches(set, std::slice::from_ref(*name), false))
            })
            .map(|name| builtin_rule(name))
    }
}

/// A subject with its paths and commands expanded into the forms rules are matched against.
struct Prepared<'a> {
    subject: &'a Subject,
    /// Per path: its strict and generous forms (see `permission::paths`).
    paths: Vec<PathForms>,
    commands: Vec<CommandForms>,
}

impl<'a> Prepared<'a> {
    fn new(subject: &'a Subject) -> Prepared<'a> {
        Prepared {
            subject,
            paths: subject
                .paths
                .iter()
                .map(|raw| PathForms::new(raw))
                .collect(),
            commands: subject
                .commands
                .iter()
                .map(|c| CommandForms::new(c))
                .collect(),
        }
    }

    /// Restrictive: any deny form of any command. Allow: every segment of every command line,
    /// none of which may be unallowable.
    fn commands_match(&self, restrictive: bool, test: impl Fn(&str) -> bool) -> bool {
        if self.commands.is_empty() {
            return false;
        }
        if restrictive {
            self.commands
                .iter()
                .any(|c| c.oversized || c.deny.list.iter().any(|f| test(f)))
        } else {
            self.commands.iter().all(|c| {
                c.allowable && !c.segments.is_empty() && c.segments.iter().all(|f| test(f))
            })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Document parsing (by hand over serde_json::Value, so every error names its location).

const TOP_FIELDS: &[&str] = &["$schema", "preset", "rules", "hardDeny"];
const RULE_FIELDS: &[&str] = &[
    "action",
    "operations",
    "kinds",
    "titles",
    "toolNames",
    "paths",
    "commands",
    "commandRegex",
    "env",
    "description",
];
const HARD_DENY_FIELDS: &[&str] = &["paths", "commands", "commandRegex", "env"];

fn parse_document(doc: &Value) -> Result<Policy, PolicyError> {
    let top = as_object(doc, "$")?;
    check_fields(top, "", TOP_FIELDS)?;
    if let Some(v) = top.get("$schema") {
        as_str(v, "$schema")?;
    }
    let preset = match top.get("preset") {
        Some(v) => Preset::parse(as_str(v, "preset")?, "preset")?,
        None => Preset::Ask,
    };
    let mut policy = Policy::from_preset(preset);
    policy.name = "custom".to_owned();

    if let Some(v) = top.get("rules") {
        let Value::Array(items) = v else {
            return Err(PolicyError::new("rules", "expected an array of rules"));
        };
        for (i, item) in items.iter().enumerate() {
            policy.rules.push(parse_rule(item, i)?);
        }
    }
    if let Some(v) = top.get("hardDeny") {
        let hd = as_object(v, "hardDeny")?;
        check_fields(hd, "hardDeny", HARD_DENY_FIELDS)?;
        if let Some(v) = hd.get("paths") {
            let list = string_list(v, "hardDeny.paths")?;
            policy.hard_paths = PathPatterns::new(list, "hardDeny.paths")?;
        }
        if let Some(v) = hd.get("commands") {
            let list = string_list(v, "hardDeny.commands")?;
            policy.hard_commands = PatternList {
                set: glob_set(&list, "hardDeny.commands", false)?,
                patterns: list,
                literal_separator: false,
            };
        }
        if let Some(v) = hd.get("commandRegex") {
            policy.hard_command_regex = Some(regex(v, "hardDeny.commandRegex")?);
        }
        if let Some(v) = hd.get("env") {
            let list = string_list(v, "hardDeny.env")?;
            policy.hard_env = EnvPatterns::new(list)
                .map_err(|(i, m)| PolicyError::new(format!("hardDeny.env[{i}]"), m))?;
        }
    }
    Ok(policy)
}

fn parse_rule(v: &Value, index: usize) -> Result<Rule, PolicyError> {
    let at = format!("rules[{index}]");
    let obj = as_object(v, &at)?;
    check_fields(obj, &at, RULE_FIELDS)?;
    let field = |name: &str| format!("{at}.{name}");

    let action = match obj.get("action") {
        None => {
            return Err(PolicyError::new(
                field("action"),
                "missing; expected \"allow\", \"deny\" or \"ask\"",
            ));
        }
        Some(v) => match as_str(v, &field("action"))? {
            "allow" => Action::Allow,
            "deny" => Action::Deny,
            "ask" => Action::Ask,
            other => {
                return Err(PolicyError::new(
                    field("action"),
                    format!("unknown action {other:?}; expected \"allow\", \"deny\" or \"ask\""),
                ));
            }
        },
    };

    let operations = match obj.get("operations") {
        None => None,
        Some(v) => {
            let list = string_list(v, &field("operations"))?;
            let mut ops = Vec::new();
            for (i, name) in list.iter().enumerate() {
                ops.push(Operation::parse(name).ok_or_else(|| {
                    PolicyError::new(
                        format!("{at}.operations[{i}]"),
                        format!(
                            "unknown operation {name:?}; expected one of: permission, read, write, execute"
                        ),
                    )
                })?);
            }
            Some(ops)
        }
    };
    let kinds = match obj.get("kinds") {
        None => None,
        Some(v) => {
            let list = string_list(v, &field("kinds"))?;
            for (i, kind) in list.iter().enumerate() {
                if !TOOL_KINDS.contains(&kind.as_str()) {
                    return Err(PolicyError::new(
                        format!("{at}.kinds[{i}]"),
                        format!(
                            "unknown tool kind {kind:?}; expected one of: {}",
                            TOOL_KINDS.join(", ")
                        ),
                    ));
                }
            }
            Some(list)
        }
    };
    let mut summary: Vec<String> = Vec::new();
    let mut globs = |name: &str, literal_separator: bool| -> Result<Option<GlobSet>, PolicyError> {
        match obj.get(name) {
            None => Ok(None),
            Some(v) => {
                let list = string_list(v, &field(name))?;
                let set = glob_set(&list, &field(name), literal_separator)?;
                summary.push(format!("{name}={}", list.join("|")));
                Ok(Some(set))
            }
        }
    };
    let titles = globs("titles", false)?;
    let tool_names = globs("toolNames", false)?;
    // Validated and summarised with the others; compiled for both matching directions below.
    globs("paths", true)?;
    let commands = globs("commands", false)?;
    let paths = match obj.get("paths") {
        None => None,
        Some(v) => Some(PathGlobs::new(
            &string_list(v, &field("paths"))?,
            &field("paths"),
        )?),
    };
    let env = match obj.get("env") {
        None => None,
        Some(v) => {
            let list = string_list(v, &field("env"))?;
            let set = env_glob_set(&list)
                .map_err(|(i, m)| PolicyError::new(format!("{at}.env[{i}]"), m))?;
            Some((set, list))
        }
    };
    let command_regex = match obj.get("commandRegex") {
        None => None,
        Some(v) => {
            let re = regex(v, &field("commandRegex"))?;
            summary.push(format!("commandRegex={}", re.as_str()));
            Some(re)
        }
    };
    let env = env.map(|(set, list)| {
        summary.push(format!("env={}", list.join("|")));
        set
    });
    let description = match obj.get("description") {
        None => None,
        Some(v) => Some(as_str(v, &field("description"))?.to_owned()),
    };

    let action_name = match action {
        Action::Allow => "allow",
        Action::Deny => "deny",
        Action::Ask => "ask",
    };
    let label = match description {
        Some(d) if !d.trim().is_empty() => format!("{at} ({action_name}: {d})"),
        _ => {
            let mut parts = vec![action_name.to_owned()];
            if let Some(ops) = &operations {
                let names: Vec<&str> = ops.iter().map(|o| o.as_str()).collect();
                parts.push(format!("operations={}", names.join("|")));
            }
            if let Some(k) = &kinds {
                parts.push(format!("kinds={}", k.join("|")));
            }
            parts.extend(summary);
            format!("{at} ({})", parts.join(" "))
        }
    };

    Ok(Rule {
        action,
        label,
        operations,
        kinds,
        titles,
        tool_names,
        paths,
        commands,
        command_regex,
        env,
    })
}

fn as_object<'v>(v: &'v Value, at: &str) -> Result<&'v Map<String, Value>, PolicyError> {
    v.as_object()
        .ok_or_else(|| PolicyError::new(at, format!("expected an object, found {}", type_name(v))))
}

fn as_str<'v>(v: &'v Value, at: &str) -> Result<&'v str, PolicyError> {
    v.as_str()
        .ok_or_else(|| PolicyError::new(at, format!("expected a string, found {}", type_name(v))))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_fields(obj: &Map<String, Value>, at: &str, allowed: &[&str]) -> Result<(), PolicyError> {
    for key in obj.keys() {
        if !allowed.contains(&key.as_str()) {
            let path = if at.is_empty() {
                key.clone()
            } else {
                format!("{at}.{key}")
            };
            return Err(PolicyError::new(
                path,
                format!(
                    "unknown field {key:?}; expected one of: {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// A non-empty array of non-empty strings.
fn string_list(v: &Value, at: &str) -> Result<Vec<String>, PolicyError> {
    let Value::Array(items) = v else {
        return Err(PolicyError::new(
            at,
            format!("expected an array of strings, found {}", type_name(v)),
        ));
    };
    if items.is_empty() {
        return Err(PolicyError::new(
            at,
            "empty list (it would match nothing); leave the field out instead",
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{at}[{i}]");
            let s = as_str(item, &at)?;
            check_pattern(s, &at)?;
            Ok(s.to_owned())
        })
        .collect()
}

fn check_pattern(s: &str, at: &str) -> Result<(), PolicyError> {
    if s.trim().is_empty() {
        return Err(PolicyError::new(at, "empty pattern"));
    }
    Ok(())
}

/// Compile `patterns` into a set; an error names `at[i]`.
fn glob_set(
    patterns: &[String],
    at: &str,
    literal_separator: bool,
) -> Result<GlobSet, PolicyError> {
    let mut builder = GlobSetBuilder::new();
    for (i, pattern) in patterns.iter().enumerate() {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(literal_separator)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                PolicyError::new(
                    format!("{at}[{i}]"),
                    format!("bad glob {pattern:?}: {}", e.kind()),
                )
            })?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| PolicyError::new(at, format!("bad glob: {e}")))
}

fn regex(v: &Value, at: &str) -> Result<Regex, PolicyError> {
    let s = as_str(v, at)?;
    check_pattern(s, at)?;
    Regex::new(s).map_err(|e| {
        // The regex crate's message spans several lines; keep errors on one.
        let detail = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        PolicyError::new(at, format!("bad regex {s:?}: {detail}"))
    })
}

// ---------------------------------------------------------------------------------------------
// Session grants.

/// Session grants (in memory only): remembered when the host picks an `allow_always` option.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    by_session: HashMap<String, HashSet<String>>,
}

impl Grants {
    /// The documented matching key: tool kind + tool name (or title when there is no name), e.g.
    /// `"execute:Bash"` / `"edit:Write notes.txt"`. A missing kind counts as `other`. `None` when
    /// the subject has neither a name nor a title (a kind alone is too broad to remember).
    pub fn key(subject: &Subject) -> Option<String> {
        let label = subject
            .tool_name
            .as_deref()
            .filter(|n| !n.is_empty())
            .or(subject.title.as_deref().filter(|t| !t.is_empty()))?;
        Some(format!("{}:{label}", subject.kind()))
    }

    /// Remember that `subject`'s key is allowed for the rest of `session_id`. No-op without a key.
    pub fn grant(&mut self, session_id: &str, subject: &Subject) {
        if let Some(key) = Grants::key(subject) {
            self.by_session
                .entry(session_id.to_owned())
                .or_default()
                .insert(key);
        }
    }

    /// Whether `subject`'s key was granted in `session_id`.
    pub fn is_granted(&self, session_id: &str, subject: &Subject) -> bool {
        match (self.by_session.get(session_id), Grants::key(subject)) {
            (Some(keys), Some(key)) => keys.contains(&key),
            _ => false,
        }
    }

    /// Drop every grant of `session_id` (the session closed or its agent exited).
    pub fn forget_session(&mut self, session_id: &str) {
        self.by_session.remove(session_id);
    }
}

#[cfg(test)]
mod tests {
    use crate::permission::paths::{has_git_component, normalize_path};

    #[test]
    fn normalises_paths_lexically() {
        assert_eq!(normalize_path("/p/src/../.git/x"), "/p/.git/x");
        assert_eq!(normalize_path("/p//a/./b"), "/p/a/b");
        assert_eq!(normalize_path("/../../etc"), "/etc");
        assert_eq!(normalize_path("a/../../b"), "../b");
        assert_eq!(normalize_path("C:\\p\\..\\q"), "C:/q");
        assert_eq!(normalize_path("C:/.."), "C:");
    }

    #[test]
    fn git_components() {
        assert!(has_git_component("/p/.git/hooks/pre-commit"));
        assert!(has_git_component("/p/.git"));
        assert!(has_git_component("C:\\p\\.GIT\\config"));
        assert!(has_git_component("/p/.git./hooks"));
        assert!(has_git_component("C:\\p\\.git::$INDEX_ALLOCATION\\hooks"));
        assert!(has_git_component("C:\\p\\GIT~1\\hooks"));
        assert!(!has_git_component("/p/.gitignore"));
        assert!(!has_git_component("/p/.github/workflows/ci.yml"));
    }
}

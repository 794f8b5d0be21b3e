//! `AcpError` (Kotlin: the sealed `AcpException` hierarchy, Swift: `AcpError`): one variant per
//! error kind of the core's table that a non-C face can report, with the same stable `code`.

/// A failed call. Every variant carries `detail` (the message) and `data` (JSON text or null: the
/// kind's documented data, docs/ERRORS.md).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum AcpError {
    #[error("invalid_argument: {detail}")]
    InvalidArgument {
        detail: String,
        data: Option<String>,
    },
    #[error("invalid_config: {detail}")]
    InvalidConfig {
        detail: String,
        data: Option<String>,
    },
    #[error("already_resolved: {detail}")]
    AlreadyResolved {
        detail: String,
        data: Option<String>,
    },
    #[error("agent_exited: {detail}")]
    AgentExited {
        detail: String,
        data: Option<String>,
    },
    #[error("timeout: {detail}")]
    Timeout {
        detail: String,
        data: Option<String>,
    },
    #[error("unsupported: {detail}")]
    Unsupported {
        detail: String,
        data: Option<String>,
    },
    #[error("protocol: {detail}")]
    Protocol {
        detail: String,
        data: Option<String>,
    },
    #[error("agent_error: {detail}")]
    AgentError {
        detail: String,
        data: Option<String>,
    },
    #[error("auth_required: {detail}")]
    AuthRequired {
        detail: String,
        data: Option<String>,
    },
    #[error("version_unsupported: {detail}")]
    VersionUnsupported {
        detail: String,
        data: Option<String>,
    },
    #[error("spawn_failed: {detail}")]
    SpawnFailed {
        detail: String,
        data: Option<String>,
    },
    #[error("io: {detail}")]
    Io {
        detail: String,
        data: Option<String>,
    },
    #[error("closed: {detail}")]
    Closed {
        detail: String,
        data: Option<String>,
    },
    #[error("cancelled: {detail}")]
    Cancelled {
        detail: String,
        data: Option<String>,
    },
    #[error("busy: {detail}")]
    Busy {
        detail: String,
        data: Option<String>,
    },
    #[error("not_found: {detail}")]
    NotFound {
        detail: String,
        data: Option<String>,
    },
    #[error("events_stalled: {detail}")]
    EventsStalled {
        detail: String,
        data: Option<String>,
    },
}

impl AcpError {
    /// Build the variant of `code` (a kind of the core's error table). `None` for a kind this
    /// face has no variant for (the C-only kinds).
    pub(crate) fn from_code(code: &str, detail: String, data: Option<String>) -> Option<AcpError> {
        use AcpError as E;
        Some(match code {
            "invalid_argument" => E::InvalidArgument { detail, data },
            "invalid_config" => E::InvalidConfig { detail, data },
            "already_resolved" => E::AlreadyResolved { detail, data },
            "agent_exited" => E::AgentExited { detail, data },
            "timeout" => E::Timeout { detail, data },
            "unsupported" => E::Unsupported { detail, data },
            "protocol" => E::Protocol { detail, data },
            "agent_error" => E::AgentError { detail, data },
            "auth_required" => E::AuthRequired { detail, data },
            "version_unsupported" => E::VersionUnsupported { detail, data },
            "spawn_failed" => E::SpawnFailed { detail, data },
            "io" => E::Io { detail, data },
            "closed" => E::Closed { detail, data },
            "cancelled" => E::Cancelled { detail, data },
            "busy" => E::Busy { detail, data },
            "not_found" => E::NotFound { detail, data },
            "events_stalled" => E::EventsStalled { detail, data },
            _ => return None,
        })
    }

    /// The stable error code (the kind in docs/ERRORS.md).
    pub fn code(&self) -> &'static str {
        use AcpError as E;
        match self {
            E::InvalidArgument { .. } => "invalid_argument",
            E::InvalidConfig { .. } => "invalid_config",
            E::AlreadyResolved { .. } => "already_resolved",
            E::AgentExited { .. } => "agent_exited",
            E::Timeout { .. } => "timeout",
            E::Unsupported { .. } => "unsupported",
            E::Protocol { .. } => "protocol",
            E::AgentError { .. } => "agent_error",
            E::AuthRequired { .. } => "auth_required",
            E::VersionUnsupported { .. } => "version_unsupported",
            E::SpawnFailed { .. } => "spawn_failed",
            E::Io { .. } => "io",
            E::Closed { .. } => "closed",
            E::Cancelled { .. } => "cancelled",
            E::Busy { .. } => "busy",
            E::NotFound { .. } => "not_found",
            E::EventsStalled { .. } => "events_stalled",
        }
    }

    pub(crate) fn invalid_argument(detail: impl Into<String>, path: Option<&str>) -> AcpError {
        AcpError::InvalidArgument {
            detail: detail.into(),
            data: path.map(|p| serde_json::json!({ "path": p }).to_string()),
        }
    }

    pub(crate) fn invalid_config(path: &str, detail: impl Into<String>) -> AcpError {
        AcpError::InvalidConfig {
            detail: detail.into(),
            data: Some(serde_json::json!({ "path": path }).to_string()),
        }
    }
}

impl From<acp_host::Error> for AcpError {
    fn from(e: acp_host::Error) -> AcpError {
        let data = match e.data() {
            serde_json::Value::Null => None,
            v => Some(v.to_string()),
        };
        let detail = e.to_string();
        // Every kind the core reports outside the C ABI has a variant (a test walks the table).
        AcpError::from_code(e.kind(), detail.clone(), data.clone())
            .unwrap_or(AcpError::Protocol { detail, data })
    }
}

impl From<acp_host::permission::policy::PolicyError> for AcpError {
    fn from(e: acp_host::permission::policy::PolicyError) -> AcpError {
        acp_host::Error::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_a_face_can_report_has_a_variant_with_the_same_code() {
        for k in acp_host::error::ERROR_KINDS {
            let made = AcpError::from_code(k.kind, "m".into(), None);
            match k.reach {
                acp_host::error::Reach::Every => {
                    let made = made.unwrap_or_else(|| unreachable!("no variant for `{}`", k.kind));
                    assert_eq!(made.code(), k.kind);
                }
                acp_host::error::Reach::COnly => assert!(made.is_none(), "{}", k.kind),
            }
        }
    }
}

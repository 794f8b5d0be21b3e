//! Python module of acp-host (work in progress).

//! Core errors → the Python exception tree (`acp_host._errors`), mapped once by `kind()`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static FROM_NATIVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn build(py: Python<'_>, kind: &str, message: String, data: String) -> PyErr {
    let factory = FROM_NATIVE.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("acp_host._errors")?
            .getattr("_from_native")?
            .unbind())
    });
    let made = crate::python_code(py, || {
        factory.and_then(|f| f.bind(py).call1((kind, message, data)))
    });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// The Python exception for a core error: `AcpError` subclass by kind, `.code`, `.data`.
pub(crate) fn to_py(py: Python<'_>, e: &acp_host::Error) -> PyErr {
    build(py, e.kind(), e.to_string(), e.data().to_string())
}

/// An error of this face itself (bad argument types or values), with a core kind.
pub(crate) fn local(py: Python<'_>, kind: &str, message: impl Into<String>) -> PyErr {
    build(py, kind, message.into(), "null".into())
}

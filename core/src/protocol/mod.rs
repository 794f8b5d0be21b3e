//! What the ACP protocol is, as data: the method table every gate, dispatch and doc derives from.

pub mod methods;

pub use methods::{
    Direction, Faces, Gate, METHODS, MessageKind, Method, Stability, method, methods_json,
};

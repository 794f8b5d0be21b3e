//! What the ACP protocol is, as data: the method table every gate, dispatch and doc derives from.

pub mod methods;

pub use methods::{
    Direction, Faces, Gate, METHODS, MessageKind, Method, OPT_IN_METHODS, PROTOCOL_V2, Stability,
    check_opt_in, method, methods_json,
};

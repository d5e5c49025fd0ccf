//! The parse tree of an interpolation string: literal text with escapes already
//! decoded, interpolations with their byte ranges, and typed resolver arguments.

use crate::config::node::Value;

/// A parsed config value: literal text and interpolations, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    pub pieces: Vec<Piece>,
}

impl Template {
    /// The interpolation when the whole value is exactly one (its result keeps its type).
    pub fn single(&self) -> Option<&Interp> {
        match self.pieces.as_slice() {
            [Piece::Interp(i)] => Some(i),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Lit(String),
    Interp(Interp),
}

/// One `${…}` with its byte range in the parsed text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interp {
    pub kind: InterpKind,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InterpKind {
    /// `${a.b[0]}`, `${..x}`.
    Node(NodePath),
    /// `${name:arg,…}`; the name's parts are joined with `.`.
    Resolver {
        name: Vec<NamePart>,
        args: Vec<Element>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodePath {
    /// Leading dots: 0 = absolute, 1 = the node's own container, 2 = its parent, …
    pub dots: usize,
    pub segs: Vec<KeySeg>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeySeg {
    pub key: KeyPart,
    /// Written as `[key]` rather than `.key`.
    pub bracket: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KeyPart {
    Text(String),
    Interp(Box<Interp>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NamePart {
    Id(String),
    Interp(Interp),
}

/// A resolver argument (or an `oc.decode` result).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Element {
    /// A single typed token: `null`, `true`, `3`, `1e-3`, `abc`.
    Scalar(Value),
    /// A single interpolation: its result keeps its type.
    Interp(Box<Interp>),
    /// Several tokens, or a quoted string: always a string.
    Str(Vec<Piece>),
    List(Vec<Element>),
    Dict(Vec<(Value, Element)>),
}

/// A grammar error: where, what, and the start of the enclosing `${` if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SyntaxError {
    pub at: usize,
    pub open: Option<usize>,
    pub message: String,
}

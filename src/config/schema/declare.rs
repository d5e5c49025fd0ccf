//! `infra_model!`: each infra model is declared once, as a table of its fields; the
//! struct, the keys it accepts, its reader and its dump all come from that table, so a
//! field cannot be accepted without being read, or read without being dumped.
//!
//! ```text
//! infra_model! {
//!     /// Doc of the struct.
//!     pub struct Model {
//!         /// Doc of the field.
//!         rust_name: Type = "yamlKey", converter, mode [, section SubModel] [, dump hook]
//!             [, schema hook];
//!         ...
//!     }
//!     [derived { rust_name: Type = from_node; }]
//!     read reader_fn [, rules rules_fn];
//!     [impl Default;]
//! }
//! ```
//!
//! - `converter`: `fn(&mut Cx, &Node, &Path) -> Option<T>` reading the value (`strict_str`,
//!   `enum_value`, another model's reader, or a hand-written one).
//! - `mode`: `req` (absent or null is an error), `opt` (absent or null is `None`) or
//!   `or(default)` (absent is `default`; the same value `impl Default` uses).
//! - `section SubModel`: a key of `SubModel` written one level too high is pointed at this
//!   field (the unknown-key hint).
//! - `dump hook`: `fn(&T) -> Option<Node>` instead of the type's own [`Dump`]; `None`
//!   leaves the key out.
//! - `schema hook`: `fn(&mut SchemaCx) -> serde_json::Value` instead of the type's own
//!   [`Describe`], for a converter that takes more than the type says (quantities written
//!   unquoted, null to remove a default).
//! - `derived`: struct fields that are not YAML keys, computed from the model's node.
//! - `read reader_fn`: the generated `fn reader_fn(cx, node, path) -> Option<Model>` reads
//!   the fields in declaration order, then runs `rules_fn(cx, node, path, model)` (the
//!   cross-field rules, which only ever see valid fields).
//!
//! `to_node` writes every field in declaration order, which is therefore the key order of
//! the dump and of the JSON Schema's properties ([`Describe`], `nrl schema`): the field docs
//! are its descriptions, `or(default)` its defaults, `req` its required keys.
//!
//! [`Dump`]: super::dump::Dump
//! [`Describe`]: crate::config::typed::json_schema::Describe

macro_rules! infra_model {
    // One field read through `Obj`, by mode.
    (@read $o:ident, $cx:ident, $key:literal, $conv:expr, req) => {
        $o.req($cx, $key, $conv)
    };
    (@read $o:ident, $cx:ident, $key:literal, $conv:expr, opt) => {
        $o.opt($cx, $key, $conv)
    };
    (@read $o:ident, $cx:ident, $key:literal, $conv:expr, or($default:expr)) => {
        $o.or($cx, $key, $conv, $default)
    };

    // The field's value once read: a required field was `None` only after a reported
    // problem, so the model is withheld then.
    (@take req, $v:ident) => {
        $v?
    };
    (@take $mode:ident, $v:ident) => {
        $v
    };

    // One key of the dump.
    (@put $map:ident, $key:literal, $value:expr) => {
        $map.insert(
            $key.to_string(),
            $crate::config::schema::dump::Dump::dump($value),
        );
    };
    (@put $map:ident, $key:literal, $value:expr, $dump:path) => {
        if let Some(node) = $dump($value) {
            $map.insert($key.to_string(), node);
        }
    };

    // One property of the JSON Schema: the type's own description unless a hook is given.
    (@schema $cx:ident, $ty:ty) => {
        <$ty as $crate::config::typed::json_schema::Describe>::describe($cx)
    };
    (@schema $cx:ident, $ty:ty, $hook:path) => {
        $hook($cx)
    };
    (@schema_default $ty:ty, or($default:expr)) => {{
        let default: $ty = $default;
        Some($crate::config::schema::dump::Dump::dump(&default).to_json())
    }};
    (@schema_default $ty:ty, $mode:ident) => {
        None
    };
    (@schema_required req) => {
        true
    };
    (@schema_required $mode:ident) => {
        false
    };

    // `impl Default;`: every field's default.
    (@default [] $name:ident { $($fields:tt)* }) => {};
    (@default [Default] $name:ident { $( $field:ident: $mode:ident $(($default:expr))?; )* }) => {
        impl Default for $name {
            fn default() -> Self {
                $name {
                    $(
                        $field: $crate::config::schema::declare::infra_model!(
                            @default_of $mode $(($default))?
                        ),
                    )*
                }
            }
        }
    };
    (@default_of or($default:expr)) => {
        $default
    };
    (@default_of opt) => {
        None
    };
    (@default_of req) => {
        compile_error!("a model with a required field has no `impl Default`")
    };

    (
        $(#[doc = $doc:literal])*
        pub struct $name:ident {
            $(
                $(#[doc = $fdoc:literal])*
                $field:ident: $ty:ty = $key:literal, $conv:expr, $mode:ident $(($default:expr))?
                    $(, section $section:ty)?
                    $(, dump $dump:path)?
                    $(, schema $schema:path)?;
            )*
        }
        $(derived { $( $(#[$xmeta:meta])* $xfield:ident: $xty:ty = $xfrom:path; )* })?
        read $read:ident $(, rules $rules:path)?;
        $(impl $default_trait:ident;)?
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
            $($( $(#[$xmeta])* pub $xfield: $xty, )*)?
        }

        impl $name {
            /// The keys this model accepts, in declaration order, and its sub-sections.
            pub(crate) const SHAPE: $crate::config::typed::check::Shape =
                $crate::config::typed::check::Shape {
                    fields: &[$($key),*],
                    sections: &[$($( ($key, &<$section>::SHAPE), )?)*],
                };

            /// The model as a plain tree: every field in declaration order, defaults
            /// included, enums as their strings, nulls as null.
            pub fn to_node(&self) -> $crate::config::node::Node {
                let mut map = $crate::config::node::Map::new();
                $(
                    $crate::config::schema::declare::infra_model!(
                        @put map, $key, &self.$field $(, $dump)?
                    );
                )*
                $crate::config::node::Node::from_map(map)
            }
        }

        impl $crate::config::typed::json_schema::Describe for $name {
            fn describe(
                cx: &mut $crate::config::typed::json_schema::SchemaCx,
            ) -> serde_json::Value {
                cx.reference(stringify!($name), |cx| {
                    let fields = vec![$(
                        $crate::config::typed::json_schema::FieldSchema {
                            key: $key,
                            doc: &[$($fdoc),*],
                            schema: $crate::config::schema::declare::infra_model!(
                                @schema cx, $ty $(, $schema)?
                            ),
                            default: $crate::config::schema::declare::infra_model!(
                                @schema_default $ty, $mode $(($default))?
                            ),
                            required: $crate::config::schema::declare::infra_model!(
                                @schema_required $mode
                            ),
                        },
                    )*];
                    $crate::config::typed::json_schema::object_schema(cx, &[$($doc),*], fields)
                })
            }
        }

        impl $crate::config::schema::dump::Dump for $name {
            fn dump(&self) -> $crate::config::node::Node {
                self.to_node()
            }
        }

        pub(super) fn $read(
            cx: &mut $crate::config::typed::check::Cx,
            node: &$crate::config::node::Node,
            path: &$crate::config::typed::check::Path,
        ) -> Option<$name> {
            let mut o = $crate::config::typed::check::Obj::open(cx, node, path, &$name::SHAPE)?;
            $(
                let $field = $crate::config::schema::declare::infra_model!(
                    @read o, cx, $key, $conv, $mode $(($default))?
                );
            )*
            let v = $name {
                $( $field: $crate::config::schema::declare::infra_model!(@take $mode, $field), )*
                $($( $xfield: $xfrom(node), )*)?
            };
            let v = o.finish(v)?;
            $( let v = $rules(cx, node, path, v)?; )?
            Some(v)
        }

        $crate::config::schema::declare::infra_model!(
            @default [$($default_trait)?] $name { $( $field: $mode $(($default))?; )* }
        );
    };
}

pub(super) use infra_model;

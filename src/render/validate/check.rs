//! The schema walk: a rendered tree against a compiled schema, collecting every problem.

use base64::Engine;

use super::Problem;
use super::path::{JsonPath, Seg};
use super::patterns;
use super::schema::{self, CompiledKind, Extra, Family, Format, Schema, SchemaId, types};
use super::suggest::{did_you_mean, list_some};
use crate::config::node::{Node, Value};
use crate::config::source::Span;
use crate::diag::Diag;

pub(super) const CODE: &str = "nrl::render::schema";

pub(super) struct Checker<'a> {
    compiled: CompiledKind,
    family: Family,
    /// `RayCluster alice-x`, the prefix of every message.
    object: &'a str,
    path: JsonPath<'a>,
    pub out: Vec<Problem>,
}

impl<'a> Checker<'a> {
    pub fn new(compiled: CompiledKind, object: &'a str) -> Checker<'a> {
        Checker {
            compiled,
            family: compiled.family,
            object,
            path: JsonPath::default(),
            out: Vec::new(),
        }
    }

    /// Check `node` against schema `id`. `near` is the closest spanned ancestor, used when
    /// nrl synthesised the node itself and it has no span of its own.
    pub fn check(&mut self, id: SchemaId, node: &'a Node, near: Option<Span>) {
        let s = self.compiled.node(id);
        let near = node.best_span().or(near);
        if let Value::Null = node.value {
            // Built-in schemas type every field nullable; custom resources prune nulls.
            return;
        }
        if s.types != 0 && !type_matches(s.types, &node.value) {
            self.type_error(s, node, near);
            return;
        }
        match &node.value {
            Value::Str(v) => self.check_string(s, v, node, near),
            Value::Int(i) => self.check_number(s, *i as f64, Some(*i), node, near),
            Value::Float(f) => self.check_number(s, *f, None, node, near),
            Value::List(items) => self.check_list(s, items, node, near),
            Value::Map(map) => self.check_map(s, map, node, near),
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn check_map(
        &mut self,
        s: &Schema,
        map: &'a crate::config::Map,
        node: &'a Node,
        near: Option<Span>,
    ) {
        for (key, child) in map {
            let target = match s.prop(key) {
                Some(pid) => Some(pid),
                None => match s.extra {
                    Extra::Allow => None,
                    Extra::Schema(x) => Some(x),
                    Extra::Reject => {
                        self.unknown_field(s, map, key, child, near);
                        None
                    }
                },
            };
            if let Some(t) = target {
                self.path.push(Seg::Key(key));
                self.check(t, child, near);
                self.path.pop();
            }
        }
        for req in s.required() {
            // The API server decodes a custom resource, prunes it (a null of a field that is
            // not `nullable` goes), then fills in the schema's `default:` values, and only
            // then checks `required`: a required field with a default may be left out
            // (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting).
            // A nullable field set to null keeps its null and gets no default.
            let field = s.prop(req).map(|p| self.compiled.node(p));
            let crd = self.family == Family::Crd;
            let defaulted = crd && field.is_some_and(|f| f.default.is_some());
            let present = match map.get(req) {
                None => defaulted,
                // A null reaches Kubernetes as "unset" (Go's zero value for built-in kinds,
                // pruned for a custom resource unless the field is nullable).
                Some(v) if v.is_null() => {
                    crd && field.is_some_and(|f| f.nullable || f.default.is_some())
                }
                Some(_) => true,
            };
            if !present {
                self.missing_field(req, node, map, near);
            }
        }
    }

    fn check_list(&mut self, s: &Schema, items: &'a [Node], node: &'a Node, near: Option<Span>) {
        let n = items.len() as u64;
        if let Some(min) = s.limits().min_items.filter(|m| n < *m) {
            self.report(
                node.span,
                near,
                format!("needs at least {min} item(s), has {n}"),
                "too few items",
                format!("add at least {min} item(s)"),
            );
        }
        if let Some(max) = s.limits().max_items.filter(|m| n > *m) {
            self.report(
                node.span,
                near,
                format!("allows at most {max} item(s), has {n}"),
                "too many items",
                format!("keep at most {max} item(s)"),
            );
        }
        if let Some(item) = s.items {
            for (i, child) in items.iter().enumerate() {
                self.path.push(Seg::Index(i));
                self.check(item, child, near);
                self.path.pop();
            }
        }
        if self.family == Family::Crd && (s.list_set || s.list_keys().len() > 0) {
            self.check_unique(s, items, near);
        }
    }

    /// Items of a `set` list, and the keys of a `map` list's items, must be unique, after
    /// defaulting (apiextensions-apiserver `pkg/apiserver/schema/listtype/validation.go`:
    /// `validateListSet`, `validateListMap`; a key field the item leaves out and that has no
    /// default counts as unspecified, and two unspecified keys are equal). Reported once per
    /// duplicated value, at its second occurrence, as the server does.
    fn check_unique(&mut self, s: &Schema, items: &'a [Node], near: Option<Span>) {
        let item_schema = s.items.map(|i| self.compiled.node(i));
        let keys: Vec<Vec<KeyVal<'a>>> = items
            .iter()
            .map(|item| {
                if s.list_set {
                    return vec![KeyVal::Given(&item.value)];
                }
                s.list_keys()
                    .map(|k| match item.get(k).filter(|v| !v.is_null()) {
                        Some(v) => KeyVal::Given(&v.value),
                        None => match item_schema
                            .and_then(|is| is.prop(k))
                            .and_then(|p| self.compiled.node(p).default)
                        {
                            Some(c) => KeyVal::Default(c),
                            None => KeyVal::Unset,
                        },
                    })
                    .collect()
            })
            .collect();
        for (i, key) in keys.iter().enumerate() {
            let earlier: Vec<usize> = (0..i).filter(|&j| keys[j] == *key).collect();
            if earlier.len() != 1 {
                continue;
            }
            let item = &items[i];
            let shown = if s.list_set {
                short(&item.to_string())
            } else {
                let parts: Vec<String> = s
                    .list_keys()
                    .zip(key)
                    .filter(|(_, v)| **v != KeyVal::Unset)
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            };
            let what = if s.list_set {
                "items".to_string()
            } else {
                let names: Vec<String> = s.list_keys().map(|k| format!("`{k}`")).collect();
                format!("items' {}", names.join(" and "))
            };
            let span = item
                .as_map()
                .and_then(|m| m.values().next())
                .and_then(|first| first.key_span)
                .or(item.span);
            self.path.push(Seg::Index(i));
            self.report(
                span,
                near,
                format!("Duplicate value: {shown}"),
                format!("same as item {}", earlier[0]),
                format!(
                    "this list's {what} must be unique: the API server refuses the object with                      `Duplicate value`; remove or rename one of them"
                ),
            );
            self.path.pop();
        }
    }

    fn check_string(&mut self, s: &Schema, v: &str, node: &'a Node, near: Option<Span>) {
        if let Some(allowed) = s.enum_values()
            && !allowed.clone().any(|a| a == v)
        {
            let names: Vec<&str> = allowed.collect();
            let shown = quoted_list(&names);
            let help = match did_you_mean(v, names.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? allowed values: {shown}"),
                None => format!("allowed values: {shown}"),
            };
            self.report(
                node.span,
                near,
                format!("{} is not an allowed value", node),
                "not an allowed value",
                help,
            );
            return;
        }
        let len = v.chars().count() as u64;
        if let Some(max) = s.limits().max_length.filter(|m| len > *m) {
            self.report(
                node.span,
                near,
                format!("is {len} characters long, at most {max} allowed"),
                "too long",
                format!("shorten it to {max} characters or fewer"),
            );
        }
        if let Some(min) = s.limits().min_length.filter(|m| len < *m) {
            self.report(
                node.span,
                near,
                format!("is {len} characters long, at least {min} required"),
                "too short",
                format!("make it at least {min} characters long"),
            );
        }
        if let Some(p) = s.pattern {
            self.check_pattern(p, v, node, near);
        }
        if s.format == Format::Byte
            && base64::engine::general_purpose::STANDARD
                .decode(v.as_bytes())
                .is_err()
        {
            self.report(
                node.span,
                near,
                "is not base64".to_string(),
                "not base64",
                "Secret `data` values are base64-encoded; put plain text under `stringData` instead",
            );
        }
    }

    fn check_pattern(&mut self, id: u16, v: &str, node: &'a Node, near: Option<Span>) {
        let (source, matcher) = match schema::pattern(id) {
            Ok(p) => p,
            Err(e) => {
                self.out.push(Problem::whole(super::bundle_bug(e)));
                return;
            }
        };
        if !matcher.is_match(v) {
            // The quantity pattern is named in messages instead of shown.
            let (what, help) = if source == patterns::QUANTITY {
                (
                    "a Kubernetes quantity".to_string(),
                    "write a quantity such as `4`, `500m`, `64Gi` or `1.5`, without spaces"
                        .to_string(),
                )
            } else {
                (
                    format!("the pattern `{source}`"),
                    format!("change the value so it matches `{source}`"),
                )
            };
            self.report(
                node.span,
                near,
                format!("{node} is not {what}"),
                format!("not {what}"),
                help,
            );
        }
    }

    fn check_number(
        &mut self,
        s: &Schema,
        f: f64,
        int: Option<i64>,
        node: &'a Node,
        near: Option<Span>,
    ) {
        if let (Format::Int32, Some(i)) = (s.format, int)
            && i32::try_from(i).is_err()
        {
            self.report(
                node.span,
                near,
                format!("{i} does not fit a 32-bit integer"),
                "out of range",
                format!("use a value between {} and {}", i32::MIN, i32::MAX),
            );
            return;
        }
        if let Some(min) = s.limits().minimum.filter(|m| f < *m) {
            self.report(
                node.span,
                near,
                format!("{node} is below the minimum {min}"),
                "too small",
                format!("use a value of at least {min}"),
            );
        }
        if let Some(max) = s.limits().maximum.filter(|m| f > *m) {
            self.report(
                node.span,
                near,
                format!("{node} is above the maximum {max}"),
                "too large",
                format!("use a value of at most {max}"),
            );
        }
    }

    fn type_error(&mut self, s: &Schema, node: &Node, near: Option<Span>) {
        let expected = expected_types(s.types);
        let found = found_desc(node);
        let help = type_help(s.types, node);
        self.report(
            node.span,
            near,
            format!("expected {expected}, found {found}"),
            format!("expected {expected}"),
            help,
        );
    }

    fn unknown_field(
        &mut self,
        s: &Schema,
        map: &crate::config::Map,
        key: &'a str,
        child: &Node,
        near: Option<Span>,
    ) {
        // Prefer names not already used in this mapping, but a layer may have set the
        // right key while an override misspelt it, so fall back to all of them.
        let unused = s.prop_names().filter(|n| !map.contains_key(*n));
        let best = did_you_mean(key, unused).or_else(|| did_you_mean(key, s.prop_names()));
        let mut help = match best {
            Some(best) => format!("did you mean `{best}`?"),
            None if !s.has_props() => "this mapping takes no fields here".to_string(),
            None => format!("fields allowed here: {}", list_some(s.prop_names(), 12)),
        };
        help.push_str(match self.family {
            Family::Crd => {
                "\nnote: Kubernetes silently drops fields a custom resource's schema does not \
                 declare, so this setting would be lost"
            }
            Family::Kubernetes => {
                "\nnote: the API server rejects unknown fields of built-in kinds (or drops them \
                 without strict field validation)"
            }
        });
        self.path.push(Seg::Key(key));
        let span = child.key_span.or(child.span);
        self.report(
            span,
            near,
            "unknown field".to_string(),
            "unknown field",
            help,
        );
        self.path.pop();
    }

    fn missing_field(
        &mut self,
        name: &str,
        node: &Node,
        map: &crate::config::Map,
        near: Option<Span>,
    ) {
        // Point at the mapping's key (`resources:`), else its first key (a list item).
        let span = node
            .key_span
            .or_else(|| map.values().next().and_then(|first| first.key_span))
            .or(node.span);
        let what = match self.path.last_key() {
            Some(k) => format!("`{k}`"),
            None if self.path.is_empty() => "the object".to_string(),
            None => "this item".to_string(),
        };
        self.report(
            span,
            near,
            format!("missing required field `{name}`"),
            format!("{what} needs `{name}`"),
            format!("add `{name}: ...` here"),
        );
    }

    fn report(
        &mut self,
        span: Option<Span>,
        near: Option<Span>,
        what: String,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let label = label.into();
        let diag = match span {
            Some(sp) => Diag::new(CODE, what).label(Some(sp), label),
            None => Diag::new(CODE, what).label(near, format!("{label} (inside this)")),
        };
        self.out.push(Problem {
            object: self.object.to_string(),
            path: self.path.to_string(),
            diag: diag.help(help),
        });
    }
}

/// One key field of a list item, for the uniqueness check.
#[derive(Debug, Clone, Copy)]
enum KeyVal<'a> {
    Given(&'a Value),
    /// Left out; the schema's default.
    Default(schema::Const),
    /// Left out, no default.
    Unset,
}

impl PartialEq for KeyVal<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (KeyVal::Unset, KeyVal::Unset) => true,
            (KeyVal::Unset, _) | (_, KeyVal::Unset) => false,
            (KeyVal::Given(a), KeyVal::Given(b)) => a == b,
            (KeyVal::Given(a), KeyVal::Default(c)) | (KeyVal::Default(c), KeyVal::Given(a)) => {
                **a == c.to_value()
            }
            (KeyVal::Default(a), KeyVal::Default(b)) => a == b,
        }
    }
}

impl std::fmt::Display for KeyVal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyVal::Given(v) => write!(f, "{}", Node::new((*v).clone())),
            KeyVal::Default(c) => write!(f, "{} (default)", Node::new(c.to_value())),
            KeyVal::Unset => f.write_str("unset"),
        }
    }
}

fn type_matches(bits: u8, v: &Value) -> bool {
    let need = match v {
        Value::Null => types::NULL,
        Value::Bool(_) => types::BOOLEAN,
        Value::Int(_) => types::INTEGER | types::NUMBER,
        Value::Float(_) => types::NUMBER,
        Value::Str(_) => types::STRING,
        Value::List(_) => types::ARRAY,
        Value::Map(_) => types::OBJECT,
    };
    bits & need != 0
}

fn expected_types(bits: u8) -> String {
    let names: Vec<&str> = [
        (types::INTEGER, "integer"),
        (types::NUMBER, "number"),
        (types::STRING, "string"),
        (types::BOOLEAN, "boolean"),
        (types::ARRAY, "list"),
        (types::OBJECT, "mapping"),
    ]
    .iter()
    .filter(|(b, _)| bits & b != 0)
    .map(|(_, n)| *n)
    .collect();
    match names.as_slice() {
        [] => "null".to_string(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn found_desc(node: &Node) -> String {
    let shown = short(&node.to_string());
    match &node.value {
        Value::Str(_) => format!("string {shown}"),
        Value::Int(_) => format!("integer {shown}"),
        Value::Float(_) => format!("number {shown}"),
        Value::Bool(_) => format!("boolean {shown}"),
        Value::List(_) => "a list".to_string(),
        Value::Map(_) => "a mapping".to_string(),
        Value::Null => "null".to_string(),
    }
}

fn short(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        let head: String = s.chars().take(57).collect();
        format!("{head}...")
    }
}

/// How to fix a wrong type, in YAML terms: most mistakes are quoting.
fn type_help(bits: u8, node: &Node) -> String {
    let text = node
        .span
        .map(|s| s.text())
        .unwrap_or_else(|| node.to_string());
    let wants_string = bits & types::STRING != 0;
    let wants_int = bits & types::INTEGER != 0;
    let wants_number = bits & types::NUMBER != 0;
    match &node.value {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) if wants_string => {
            let why = match node.value {
                Value::Bool(_) => "YAML reads true/false, yes/no and on/off unquoted as booleans",
                Value::Int(_) => "YAML reads it unquoted as an integer",
                _ => "YAML reads it unquoted as a number",
            };
            format!(
                "quote the value (`'{}'`): {why}",
                text.trim_matches(['"', '\''])
            )
        }
        Value::Str(s) if wants_int || wants_number => {
            let numeric = if wants_int {
                s.trim().parse::<i64>().is_ok()
            } else {
                s.trim().parse::<f64>().is_ok()
            };
            if numeric {
                format!(
                    "remove the quotes (`{}`): quoted, YAML reads it as a string",
                    s.trim()
                )
            } else if wants_int {
                "write a whole number, without quotes (e.g. `4`)".to_string()
            } else {
                "write a number, without quotes (e.g. `1.5`)".to_string()
            }
        }
        Value::Float(_) if wants_int => "write a whole number (no decimal point)".to_string(),
        Value::Str(s) if bits & types::BOOLEAN != 0 && matches!(s.as_str(), "true" | "false") => {
            format!("remove the quotes (`{s}`): quoted, YAML reads it as a string")
        }
        _ if bits & types::OBJECT != 0 => {
            "write `key: value` lines indented under this key".to_string()
        }
        _ if bits & types::ARRAY != 0 => "write a list: one `- item` line per entry".to_string(),
        _ => format!("write a {} here", expected_types(bits)),
    }
}

fn quoted_list(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| {
            if v.is_empty() {
                "`\"\"`".to_string()
            } else {
                format!("`{v}`")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

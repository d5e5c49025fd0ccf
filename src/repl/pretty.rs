//! How the REPL shows a result: strings as text, arrays of maps as tables (Kubernetes
//! objects as NAME/NAMESPACE/KIND/STATUS/AGE), maps and manifests as YAML, handles as
//! their one-line status, `()` as nothing.

use rhai::{Array, Dynamic, Engine, Map, Scope};

use crate::config::node::Node;
use crate::render::emit::{to_yaml, to_yaml_stream};
use crate::script::builtins::k8s::{PortForward, k8s_module};
use crate::script::builtins::render::Manifest;
use crate::script::convert::{dynamic_to_json, dynamic_to_node};
use crate::terminal_text::Wrap;

/// Widest table cell before it is cut.
const CELL: usize = 48;

/// Keys of a Kubernetes object, in the order `kubectl` shows them.
const OBJECT_KEYS: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];

/// Formats results for a terminal `width` columns wide.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub width: usize,
}

impl Printer {
    /// The text shown for a result (ending in a newline), or `None` for `()`.
    pub fn show(&self, engine: &Engine, v: &Dynamic) -> Option<String> {
        let v = v.flatten_clone();
        if v.is_unit() {
            return None;
        }
        let mut text = if v.is_string() {
            let s = v.to_string();
            if s.is_empty() { "\"\"".to_string() } else { s }
        } else if let Some(m) = v.read_lock::<Manifest>() {
            to_yaml(m.node())
        } else if v.is_map() {
            yaml_of(&v).unwrap_or_else(|| format!("{v:?}"))
        } else if v.is_array() {
            self.array(engine, &v.clone().cast::<Array>())
        } else if is_plain(&v) {
            v.to_string()
        } else {
            handle_line(engine, &v)
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        Some(text)
    }

    /// One line describing a value, for `:vars`.
    pub fn summary(&self, engine: &Engine, v: &Dynamic) -> String {
        let v = v.flatten_clone();
        let line = if v.is_string() {
            format!("{:?}", v.to_string())
        } else if v.is_map() {
            let n = v.read_lock::<Map>().map(|m| m.len()).unwrap_or(0);
            match object_name(&v) {
                Some((kind, name)) => format!("{kind}/{name}"),
                None => format!("#{{…{n} keys}}"),
            }
        } else if v.is_array() {
            let n = v.read_lock::<Array>().map(|a| a.len()).unwrap_or(0);
            format!("[…{n} items]")
        } else if is_plain(&v) || v.is_unit() {
            format!("{v:?}")
        } else {
            handle_line(engine, &v)
        };
        cut(&line, self.width.saturating_sub(20).max(20))
    }

    fn array(&self, engine: &Engine, items: &Array) -> String {
        if items.is_empty() {
            return "[]".to_string();
        }
        if items.iter().all(|i| i.read_lock::<Manifest>().is_some()) {
            let docs: Vec<Node> = items
                .iter()
                .filter_map(|i| i.read_lock::<Manifest>().map(|m| m.node().clone()))
                .collect();
            return to_yaml_stream(&docs);
        }
        if items.iter().all(Dynamic::is_map) {
            return table(items);
        }
        if items.iter().all(is_plain) {
            let line = format!("{:?}", Dynamic::from_array(items.clone()));
            if line.chars().count() <= self.width {
                return line;
            }
        }
        if let Ok(node) = dynamic_to_node(&Dynamic::from_array(items.clone())) {
            return to_yaml(&node);
        }
        items
            .iter()
            .map(|i| self.summary(engine, i))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Numbers, booleans, characters.
fn is_plain(v: &Dynamic) -> bool {
    v.is_int() || v.is_float() || v.is_bool() || v.is_char() || v.is_string()
}

/// A map as YAML, Kubernetes keys first.
fn yaml_of(v: &Dynamic) -> Option<String> {
    let mut node = dynamic_to_node(v).ok()?;
    if let Some(m) = node.as_map_mut() {
        let mut at = 0;
        for key in OBJECT_KEYS {
            if let Some(i) = m.get_index_of(key) {
                m.move_index(i, at);
                at += 1;
            }
        }
    }
    Some(to_yaml(&node))
}

/// A handle's one-line status: its `to_string` (`RayJob(ns/name, run …)`), else its
/// type name.
fn handle_line(engine: &Engine, v: &Dynamic) -> String {
    if let Some(pf) = v.read_lock::<PortForward>() {
        let mut pf = pf.clone();
        return format!("PortForward({})", k8s_module::url(&mut pf));
    }
    let type_name = engine.map_type_name(v.type_name()).to_string();
    let mut scope = Scope::new();
    scope.push("value", v.clone());
    match engine.eval_with_scope::<String>(&mut scope, "to_string(value)") {
        // Without a registered `to_string`, Rhai prints the Rust type path.
        Ok(s) if s != v.type_name() && !s.is_empty() => s,
        _ => type_name,
    }
}

/// `(kind, name)` of a map that looks like a Kubernetes object.
fn object_name(v: &Dynamic) -> Option<(String, String)> {
    let m = v.read_lock::<Map>()?;
    let kind = m.get("kind").filter(|k| k.is_string())?.to_string();
    let meta = m.get("metadata")?.read_lock::<Map>()?;
    let name = meta.get("name").filter(|n| n.is_string())?.to_string();
    Some((kind, name))
}

fn table(items: &Array) -> String {
    let maps: Vec<Map> = items
        .iter()
        .filter_map(|i| i.read_lock::<Map>().map(|m| m.clone()))
        .collect();
    let (header, rows) = if items.iter().all(|i| object_name(i).is_some()) {
        object_rows(&maps)
    } else {
        generic_rows(&maps)
    };
    crate::terminal_text::plain_table(&header, rows, Wrap::Never)
}

/// Columns: every key, in order of first appearance; nested values as short JSON.
fn generic_rows(maps: &[Map]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut keys: Vec<String> = Vec::new();
    for m in maps {
        for k in m.keys() {
            if !keys.iter().any(|x| x == k.as_str()) {
                keys.push(k.to_string());
            }
        }
    }
    let rows = maps
        .iter()
        .map(|m| {
            keys.iter()
                .map(|k| m.get(k.as_str()).map(cell).unwrap_or_default())
                .collect()
        })
        .collect();
    (keys, rows)
}

/// `kubectl get`-like columns; NAMESPACE and KIND only when they vary or are set.
fn object_rows(maps: &[Map]) -> (Vec<String>, Vec<Vec<String>>) {
    let get = |m: &Map, path: &[&str]| -> Option<Dynamic> {
        let mut cur = m.get(path[0])?.clone();
        for seg in &path[1..] {
            let next = cur.read_lock::<Map>()?.get(*seg)?.clone();
            cur = next;
        }
        Some(cur)
    };
    let text = |m: &Map, path: &[&str]| {
        get(m, path)
            .filter(|v| !v.is_unit())
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    let kinds: std::collections::BTreeSet<String> =
        maps.iter().map(|m| text(m, &["kind"])).collect();
    let with_ns = maps
        .iter()
        .any(|m| !text(m, &["metadata", "namespace"]).is_empty());
    let now = jiff::Timestamp::now();
    let mut header = vec!["NAME".to_string()];
    if with_ns {
        header.push("NAMESPACE".into());
    }
    if kinds.len() > 1 {
        header.push("KIND".into());
    }
    header.extend(["STATUS".to_string(), "AGE".to_string()]);
    let rows = maps
        .iter()
        .map(|m| {
            let mut row = vec![text(m, &["metadata", "name"])];
            if with_ns {
                row.push(text(m, &["metadata", "namespace"]));
            }
            if kinds.len() > 1 {
                row.push(text(m, &["kind"]));
            }
            let status = [
                &["status", "state"][..],
                &["status", "jobStatus"],
                &["status", "phase"],
            ]
            .iter()
            .map(|p| text(m, p))
            .find(|s| !s.is_empty())
            .unwrap_or_else(|| true_conditions(get(m, &["status", "conditions"])));
            row.push(status);
            let created = text(m, &["metadata", "creationTimestamp"]);
            row.push(age(&created, now));
            row
        })
        .collect();
    (header, rows)
}

/// The types of the conditions that are `True` (`Available,Progressing`).
fn true_conditions(conditions: Option<Dynamic>) -> String {
    let Some(list) = conditions.and_then(|c| c.read_lock::<Array>().map(|a| a.clone())) else {
        return String::new();
    };
    list.iter()
        .filter_map(|c| {
            let m = c.read_lock::<Map>()?;
            let status = m.get("status")?.to_string();
            (status == "True").then(|| m.get("type").map(|t| t.to_string()))?
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `42s`, `5m`, `3h`, `2d` since an RFC 3339 time; empty when unknown.
fn age(created: &str, now: jiff::Timestamp) -> String {
    crate::launch::inspect::age_since(created, now).unwrap_or_default()
}

fn cell(v: &Dynamic) -> String {
    let text = if v.is_unit() {
        String::new()
    } else if is_plain(v) {
        v.to_string()
    } else {
        dynamic_to_json(v)
            .map(|j| j.to_string())
            .unwrap_or_else(|_| format!("{v:?}"))
    };
    cut(&text.replace('\n', " "), CELL)
}

/// `text` cut to `max` characters, with `…`.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::convert::json_to_dynamic;
    use serde_json::json;

    fn show(v: Dynamic) -> String {
        Printer { width: 80 }
            .show(&Engine::new_raw(), &v)
            .unwrap_or_default()
    }

    #[test]
    fn scalars_strings_and_unit() {
        assert_eq!(show(Dynamic::from_int(42)), "42\n");
        assert_eq!(show(Dynamic::from("two\nlines")), "two\nlines\n");
        assert_eq!(show(Dynamic::from("")), "\"\"\n");
        assert!(
            Printer { width: 80 }
                .show(&Engine::new_raw(), &Dynamic::UNIT)
                .is_none()
        );
        assert_eq!(
            show(json_to_dynamic(&json!([1, "a", true]))),
            "[1, \"a\", true]\n"
        );
    }

    #[test]
    fn maps_are_yaml_with_kubernetes_keys_first() {
        let v = json_to_dynamic(&json!({"spec": {"a": 1}, "kind": "Pod", "apiVersion": "v1",
                                         "metadata": {"name": "p"}}));
        assert_eq!(
            show(v),
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  a: 1\n"
        );
    }

    #[test]
    fn arrays_of_objects_are_kubectl_tables() {
        let v = json_to_dynamic(&json!([
            {"kind": "RayCluster", "metadata": {"name": "a", "namespace": "ns",
              "creationTimestamp": "2000-01-01T00:00:00Z"}, "status": {"state": "ready"}},
            {"kind": "RayCluster", "metadata": {"name": "bb", "namespace": "ns"}},
        ]));
        let text = show(v);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "NAME  NAMESPACE  STATUS  AGE");
        assert!(lines[1].starts_with("a     ns         ready   "), "{text}");
        assert!(lines[1].ends_with('d'), "{text}");
        assert_eq!(lines[2], "bb    ns");
    }

    #[test]
    fn arrays_of_other_maps_are_tables_of_their_keys() {
        let v = json_to_dynamic(&json!([{"a": 1, "b": {"x": [1, 2]}}, {"a": 2, "c": "z"}]));
        assert_eq!(
            show(v),
            "a  b            c\n1  {\"x\":[1,2]}\n2               z\n"
        );
    }

    #[test]
    fn handles_are_one_line() {
        let engine = Engine::new_raw();
        let v = Dynamic::from(Manifest::new(Node::from_json(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        )));
        let p = Printer { width: 80 };
        assert_eq!(
            p.show(&engine, &v).unwrap(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        );
        assert_eq!(
            p.summary(&engine, &json_to_dynamic(&json!({"a": 1, "b": 2}))),
            "#{…2 keys}"
        );
        assert_eq!(
            age(
                "2000-01-01T00:00:00Z",
                "2000-01-01T00:00:30Z".parse().unwrap()
            ),
            "30s"
        );
        assert_eq!(
            age(
                "2000-01-01T00:00:00Z",
                "2000-01-03T00:00:00Z".parse().unwrap()
            ),
            "2d"
        );
    }
}

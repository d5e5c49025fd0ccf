//! Server-side apply and `metadata.managedFields`.
//!
//! Field ownership is tracked as leaf paths. How lists and maps merge comes from the kind's
//! schema (`schema.rs`): `x-kubernetes-list-type: map` lists are keyed by their
//! `x-kubernetes-list-map-keys` (containers by `name`, container ports by `containerPort` +
//! `protocol`, `metadata.ownerReferences` by `uid`), every other list — and any list a
//! CRD leaves unannotated, such as `spec.workerGroupSpecs` — is atomic: one field, owned
//! and replaced whole (https://kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy).
//! `set` lists are approximated as atomic. Below `x-kubernetes-preserve-unknown-fields`
//! maps are granular and lists atomic, as structured-merge-diff deduces. The sets are
//! stored in `metadata.managedFields` in the real `FieldsV1` shape (`f:spec`,
//! `k:{"name":…}`, `.`), so clients can read them back.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::meta::now_rfc3339;
use super::schema::{self, Field, ListType, Node};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathElem {
    Field(String),
    /// An associative list element, by its key (`{"name":"x"}` as JSON text).
    Key(String),
    /// The list element itself (`.` in FieldsV1).
    Itself,
}

pub type FieldPath = Vec<PathElem>;
pub type FieldSet = BTreeSet<FieldPath>;

#[derive(Debug, Clone, PartialEq)]
pub struct ManagerEntry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub subresource: Option<String>,
    pub time: String,
    pub fields: FieldSet,
}

/// The schema of field `k` under `node` (`None`: untyped, deduced from the value).
fn child_node(node: Option<Node>, k: &str) -> Option<Node> {
    match node?.field(k) {
        Field::Known(n) => Some(n),
        Field::Untyped | Field::Unknown => None,
    }
}

/// The key fields of a list, when the schema makes it a `map` list.
fn map_keys(node: Option<Node>) -> Option<Vec<String>> {
    match node?.list_type() {
        ListType::Map(keys) if !keys.is_empty() => Some(keys),
        _ => None,
    }
}

fn collect(v: &Value, node: Option<Node>, path: &mut FieldPath, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() && !node.is_some_and(|n| n.atomic_map()) => {
            for (k, child) in m {
                path.push(PathElem::Field(k.clone()));
                collect(child, child_node(node, k), path, out);
                path.pop();
            }
        }
        Value::Array(items) => match map_keys(node) {
            Some(keys) => {
                let item_node = node.and_then(|n| n.items());
                for elem in items {
                    path.push(PathElem::Key(schema::element_key(elem, &keys)));
                    let mut itself = path.clone();
                    itself.push(PathElem::Itself);
                    out.insert(itself);
                    collect(elem, item_node, path, out);
                    path.pop();
                }
            }
            None => {
                out.insert(path.clone());
            }
        },
        _ => {
            out.insert(path.clone());
        }
    }
}

/// The fields an object (or an applied configuration) sets, merged by the schema of its
/// kind. `status` is only tracked for the status subresource; of `metadata` only labels,
/// annotations, finalizers and ownerReferences are tracked, as the real field manager does.
pub fn field_set(obj: &Value, status_only: bool) -> FieldSet {
    let mut out = FieldSet::new();
    let Some(m) = obj.as_object() else { return out };
    let root = schema::for_object(obj);
    for (k, v) in m {
        let tracked = match k.as_str() {
            "apiVersion" | "kind" => false,
            "status" => status_only,
            "metadata" => !status_only,
            _ => !status_only,
        };
        if !tracked {
            continue;
        }
        let node = child_node(root, k);
        if k == "metadata" {
            for mk in ["labels", "annotations", "finalizers", "ownerReferences"] {
                if let Some(mv) = v.get(mk) {
                    let mut p = vec![
                        PathElem::Field("metadata".into()),
                        PathElem::Field(mk.into()),
                    ];
                    collect(mv, child_node(node, mk), &mut p, &mut out);
                }
            }
        } else {
            let mut p = vec![PathElem::Field(k.clone())];
            collect(v, node, &mut p, &mut out);
        }
    }
    out
}

/// Does list element `e` have the key `key` (all its fields)?
fn key_matches(e: &Value, key: &Map<String, Value>) -> bool {
    !key.is_empty() && key.iter().all(|(k, v)| e.get(k) == Some(v))
}

/// The value at a field path, if present.
pub fn value_at<'a>(obj: &'a Value, path: &[PathElem]) -> Option<&'a Value> {
    let mut cur = obj;
    for elem in path {
        cur = match elem {
            PathElem::Field(k) => cur.get(k)?,
            PathElem::Key(key) => {
                let key: Map<String, Value> = serde_json::from_str(key).ok()?;
                cur.as_array()?.iter().find(|e| key_matches(e, &key))?
            }
            PathElem::Itself => cur,
        };
    }
    Some(cur)
}

/// Remove the value at a field path (an `Itself` path removes the whole list element).
/// Maps left empty by the removal are removed too.
pub fn remove_at(obj: &mut Value, path: &[PathElem]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    if *last == PathElem::Itself {
        let Some((PathElem::Key(key), list_path)) = parent_path.split_last() else {
            return;
        };
        let Ok(key) = serde_json::from_str::<Map<String, Value>>(key) else {
            return;
        };
        if let Some(Value::Array(items)) = value_at_mut(obj, list_path) {
            items.retain(|e| !key_matches(e, &key));
        }
        return;
    }
    let PathElem::Field(k) = last else { return };
    if let Some(Value::Object(m)) = value_at_mut(obj, parent_path) {
        m.remove(k);
    }
    // Clean up parents that became empty maps.
    let mut depth = parent_path.len();
    while depth > 0 {
        let p = &path[..depth];
        let empty = matches!(value_at(obj, p), Some(Value::Object(m)) if m.is_empty());
        if !empty || !matches!(p.last(), Some(PathElem::Field(_))) {
            break;
        }
        if let (Some(PathElem::Field(k)), Some(Value::Object(m))) =
            (p.last(), value_at_mut(obj, &p[..depth - 1]))
        {
            m.remove(k);
        }
        depth -= 1;
    }
}

fn value_at_mut<'a>(obj: &'a mut Value, path: &[PathElem]) -> Option<&'a mut Value> {
    let mut cur = obj;
    for elem in path {
        cur = match elem {
            PathElem::Field(k) => cur.get_mut(k)?,
            PathElem::Key(key) => {
                let key: Map<String, Value> = serde_json::from_str(key).ok()?;
                cur.as_array_mut()?
                    .iter_mut()
                    .find(|e| key_matches(e, &key))?
            }
            PathElem::Itself => cur,
        };
    }
    Some(cur)
}

/// Merge an applied configuration into a live object of the same kind: maps recursively,
/// `map` lists by key, atomic lists and maps replaced; `null` removes.
pub fn merge_applied(live: &mut Value, applied: &Value) {
    let root = schema::for_object(applied);
    merge_node(live, applied, root);
}

fn merge_node(live: &mut Value, applied: &Value, node: Option<Node>) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) if !node.is_some_and(|n| n.atomic_map()) => {
            for (k, v) in a {
                if v.is_null() {
                    l.remove(k);
                } else if let Some(existing) = l.get_mut(k) {
                    merge_node(existing, v, child_node(node, k));
                } else {
                    l.insert(k.clone(), v.clone());
                }
            }
        }
        (Value::Array(l), Value::Array(a)) => match map_keys(node) {
            Some(keys) => {
                let item_node = node.and_then(|n| n.items());
                for elem in a {
                    let key: Map<String, Value> =
                        serde_json::from_str(&schema::element_key(elem, &keys)).unwrap_or_default();
                    match l.iter_mut().find(|e| key_matches(e, &key)) {
                        Some(existing) => merge_node(existing, elem, item_node),
                        None => l.push(elem.clone()),
                    }
                }
            }
            None => *l = a.clone(),
        },
        (live, applied) => *live = applied.clone(),
    }
}

/// A field path as the server prints it: `.spec.containers[name="head"].image`.
fn path_to_string(path: &[PathElem]) -> String {
    let mut out = String::new();
    for e in path {
        match e {
            PathElem::Field(k) => {
                out.push('.');
                out.push_str(k);
            }
            PathElem::Key(k) => {
                let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push('[');
                out.push_str(&parts.join(","));
                out.push(']');
            }
            PathElem::Itself => {}
        }
    }
    out
}

/// FieldsV1 encoding of a set.
pub fn encode_fields(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for elem in path {
            let key = match elem {
                PathElem::Field(k) => format!("f:{k}"),
                PathElem::Key(k) => format!("k:{k}"),
                PathElem::Itself => ".".to_string(),
            };
            let next = cur.entry(key).or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(m) = next else { break };
            cur = m;
        }
    }
    Value::Object(root)
}

fn decode_into(node: &Map<String, Value>, path: &mut FieldPath, out: &mut FieldSet) {
    for (k, child) in node {
        let elem = if k == "." {
            PathElem::Itself
        } else if let Some(f) = k.strip_prefix("f:") {
            PathElem::Field(f.to_string())
        } else if let Some(key) = k.strip_prefix("k:") {
            PathElem::Key(key.to_string())
        } else {
            continue;
        };
        path.push(elem);
        match child.as_object() {
            Some(m) if !m.is_empty() => decode_into(m, path, out),
            _ => {
                out.insert(path.clone());
            }
        }
        path.pop();
    }
}

pub fn decode_fields(v: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    if let Some(m) = v.as_object() {
        decode_into(m, &mut Vec::new(), &mut out);
    }
    out
}

pub fn read_managed(obj: &Value) -> Vec<ManagerEntry> {
    let Some(entries) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .map(|e| ManagerEntry {
            manager: e
                .get("manager")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            operation: e
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("Update")
                .to_string(),
            api_version: e
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            subresource: e
                .get("subresource")
                .and_then(Value::as_str)
                .map(str::to_string),
            time: e
                .get("time")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            fields: e.get("fieldsV1").map(decode_fields).unwrap_or_default(),
        })
        .collect()
}

pub fn write_managed(obj: &mut Value, entries: &[ManagerEntry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": encode_fields(&e.fields),
            });
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// One ownership conflict: another manager owns a field the apply would change.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub manager: String,
    pub field: String,
    /// `Update` managers are named with their apiVersion and time, `Apply` ones alone.
    pub operation: String,
    pub api_version: String,
    pub time: String,
}

impl Conflict {
    /// `"kubectl-edit" using ray.io/v1 at 2026-01-01T00:00:00Z` or `"nrl"`
    /// (apimachinery `managedfields/internal/conflict.go` `NewConflictError`).
    fn who(&self) -> String {
        if self.operation == "Update" {
            format!(
                "\"{}\" using {} at {}",
                self.manager, self.api_version, self.time
            )
        } else {
            format!("\"{}\"", self.manager)
        }
    }
}

/// Server-side apply of `applied` (already stripped to the subresource's part) onto `live`.
/// Returns the merged object and the new managed-fields entries, or the conflicts.
pub fn server_side_apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    subresource: Option<&str>,
    force: bool,
) -> Result<(Value, Vec<ManagerEntry>), Vec<Conflict>> {
    let status_only = subresource == Some("status");
    let api_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let new_set = field_set(applied, status_only);
    let Some(live) = live else {
        let entry = ManagerEntry {
            manager: manager.to_string(),
            operation: "Apply".into(),
            api_version,
            subresource: subresource.map(str::to_string),
            time: now_rfc3339(),
            fields: new_set,
        };
        return Ok((applied.clone(), vec![entry]));
    };
    let mut entries = read_managed(live);
    let same_sub = |e: &ManagerEntry| e.subresource.as_deref() == subresource;
    let is_mine = |e: &ManagerEntry| e.manager == manager && e.operation == "Apply" && same_sub(e);

    // Conflicts: another manager owns a leaf this apply sets to a different value.
    let mut conflicts = Vec::new();
    let mut conflicting: Vec<FieldPath> = Vec::new();
    for path in new_set
        .iter()
        .filter(|p| p.last() != Some(&PathElem::Itself))
    {
        for e in entries
            .iter()
            .filter(|e| !is_mine(e) && same_sub(e) && e.manager != manager)
        {
            if e.fields.contains(path) && value_at(live, path) != value_at(applied, path) {
                conflicts.push(Conflict {
                    manager: e.manager.clone(),
                    field: path_to_string(path),
                    operation: e.operation.clone(),
                    api_version: e.api_version.clone(),
                    time: e.time.clone(),
                });
                conflicting.push(path.clone());
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }

    // Fields this manager applied before but no longer does, and nobody else owns: removed.
    let old_set: FieldSet = entries
        .iter()
        .filter(|e| is_mine(e))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let mut merged = live.clone();
    let mut dropped: Vec<&FieldPath> = old_set
        .difference(&new_set)
        .filter(|p| !entries.iter().any(|e| !is_mine(e) && e.fields.contains(*p)))
        .collect();
    // Deepest first, so element removal does not hide deeper paths.
    dropped.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in dropped {
        remove_at(&mut merged, p);
    }
    merge_applied(&mut merged, applied);

    for e in entries.iter_mut().filter(|e| !is_mine(e)) {
        for p in &conflicting {
            e.fields.remove(p);
        }
    }
    let mine = ManagerEntry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version,
        subresource: subresource.map(str::to_string),
        time: now_rfc3339(),
        fields: new_set,
    };
    // The applier's entry keeps its place, so a no-op re-apply leaves the list as it was.
    match entries.iter().position(is_mine) {
        Some(i) => entries[i] = mine,
        None => entries.push(mine),
    }
    entries.retain(|e| !e.fields.is_empty());
    Ok((merged, entries))
}

/// Ownership after a non-apply write (create, update, patch): the writer takes the fields it
/// changed; other managers lose them; removed fields leave every set.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    subresource: Option<&str>,
) -> Vec<ManagerEntry> {
    let status_only = subresource == Some("status");
    let api_version = new
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut entries = old.map(read_managed).unwrap_or_default();
    let new_set = field_set(new, status_only);
    let changed: FieldSet = new_set
        .iter()
        .filter(|p| old.is_none_or(|o| value_at(o, p) != value_at(new, p)))
        .cloned()
        .collect();
    let removed: FieldSet = old
        .map(|o| field_set(o, status_only))
        .unwrap_or_default()
        .difference(&new_set)
        .cloned()
        .collect();
    let same_sub = |e: &ManagerEntry| e.subresource.as_deref() == subresource;
    for e in entries.iter_mut().filter(|e| same_sub(e)) {
        let owned_by_writer = e.manager == manager && e.operation == "Update";
        e.fields
            .retain(|p| !removed.contains(p) && (owned_by_writer || !changed.contains(p)));
    }
    if !changed.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.manager == manager && e.operation == "Update" && same_sub(e))
        {
            Some(e) => {
                e.fields.extend(changed);
                e.time = now_rfc3339();
            }
            None => entries.push(ManagerEntry {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version,
                subresource: subresource.map(str::to_string),
                time: now_rfc3339(),
                fields: changed,
            }),
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    entries
}

/// The message and causes of a 409 apply conflict, as the real server words it
/// (apimachinery `managedfields/internal/conflict.go` `NewConflictError`,
/// `api/errors` `NewApplyConflict`).
pub fn conflict_status(conflicts: &[Conflict], _api_version: &str) -> Value {
    let n = conflicts.len();
    let message = if n == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            conflicts[0].who(),
            conflicts[0].field
        )
    } else {
        let mut by_manager: Vec<(String, Vec<&str>)> = Vec::new();
        for c in conflicts {
            let who = c.who();
            match by_manager.iter_mut().find(|(w, _)| *w == who) {
                Some((_, f)) => f.push(&c.field),
                None => by_manager.push((who, vec![&c.field])),
            }
        }
        let parts: Vec<String> = by_manager
            .iter()
            .map(|(who, fields)| {
                if fields.len() == 1 {
                    format!("conflict with {who}: {}", fields[0])
                } else {
                    let list: Vec<String> = fields.iter().map(|f| format!("- {f}")).collect();
                    format!("conflicts with {who}:\n{}", list.join("\n"))
                }
            })
            .collect();
        format!("Apply failed with {n} conflicts: {}", parts.join("\n"))
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", c.who()), "field": c.field}))
        .collect();
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": "Conflict",
        "details": {"causes": causes}, "code": 409
    })
}

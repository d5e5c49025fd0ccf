//! JSON merge patch (RFC 7386; strategic merge patch is treated the same way) and JSON
//! patch (RFC 6902).

use serde_json::Value;

use super::meta::{ApiError, ApiResult};

/// RFC 7386: maps merge recursively, `null` deletes, everything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(target_map) = target else {
        return;
    };
    for (k, v) in patch_map {
        if v.is_null() {
            target_map.remove(k);
        } else {
            merge_patch(target_map.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Strategic merge patch: a merge patch, except that lists the schema gives a `merge`
/// patch strategy merge element-wise by their `x-kubernetes-patch-merge-key` (containers and
/// env by `name`, container ports by `containerPort`); other lists are replaced
/// (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/#notes-on-the-strategic-merge-patch).
/// `$patch`/`$retainKeys` directives are dropped. Built-in kinds only: custom resources
/// refuse it (see `handlers.rs`).
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    let root = super::schema::for_object(target);
    smp(target, patch, root);
}

fn smp(target: &mut Value, patch: &Value, node: Option<super::schema::Node>) {
    use super::schema::Field;
    let child = |k: &str| match node.map(|n| n.field(k)) {
        Some(Field::Known(n)) => Some(n),
        _ => None,
    };
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if k.starts_with('$') {
                    continue;
                }
                if v.is_null() {
                    t.remove(k);
                } else if let Some(existing) = t.get_mut(k) {
                    smp(existing, v, child(k));
                } else {
                    let mut fresh = Value::Null;
                    smp(&mut fresh, v, child(k));
                    t.insert(k.clone(), fresh);
                }
            }
        }
        (Value::Array(t), Value::Array(p)) if node.and_then(|n| n.patch_merge_key()).is_some() => {
            let key = node.and_then(|n| n.patch_merge_key()).unwrap_or_default();
            let items = node.and_then(|n| n.items());
            for item in p {
                let kv = item.get(&key);
                match t.iter_mut().find(|e| kv.is_some() && e.get(&key) == kv) {
                    Some(existing) => smp(existing, item, items),
                    None => {
                        let mut fresh = item.clone();
                        strip_directives(&mut fresh);
                        t.push(fresh);
                    }
                }
            }
        }
        (target, patch) => {
            let mut p = patch.clone();
            strip_directives(&mut p);
            *target = p;
        }
    }
}

fn strip_directives(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !k.starts_with('$'));
            m.values_mut().for_each(strip_directives);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directives),
        _ => {}
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> ApiResult<Vec<String>> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| ApiError::bad_request(format!("invalid JSON pointer {path:?}")))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn parent_and_key<'a>(doc: &'a mut Value, path: &str) -> ApiResult<(&'a mut Value, String)> {
    let mut tokens = split_pointer(path)?;
    let key = tokens
        .pop()
        .ok_or_else(|| ApiError::bad_request("JSON patch cannot target the document root"))?;
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(&t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                format!("jsonpatch: doc is missing path: {path:?}"),
            )
        })?;
    }
    Ok((cur, key))
}

fn add(doc: &mut Value, path: &str, value: Value) -> ApiResult<()> {
    let (parent, key) = parent_and_key(doc, path)?;
    match parent {
        Value::Object(m) => {
            m.insert(key, value);
            Ok(())
        }
        Value::Array(a) => {
            let idx = if key == "-" {
                a.len()
            } else {
                key.parse().unwrap_or(usize::MAX)
            };
            if idx > a.len() {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!("jsonpatch: index out of range at {path:?}"),
                ));
            }
            a.insert(idx, value);
            Ok(())
        }
        _ => Err(ApiError::new(
            422,
            "Invalid",
            format!("jsonpatch: cannot add at {path:?}"),
        )),
    }
}

fn remove(doc: &mut Value, path: &str) -> ApiResult<Value> {
    let (parent, key) = parent_and_key(doc, path)?;
    let missing = || {
        ApiError::new(
            422,
            "Invalid",
            format!("jsonpatch remove operation does not apply: doc is missing path: {path:?}"),
        )
    };
    match parent {
        Value::Object(m) => m.remove(&key).ok_or_else(missing),
        Value::Array(a) => match key.parse::<usize>() {
            Ok(i) if i < a.len() => Ok(a.remove(i)),
            _ => Err(missing()),
        },
        _ => Err(missing()),
    }
}

/// RFC 6902 operations: add, remove, replace, move, copy, test.
pub fn json_patch(doc: &mut Value, ops: &Value) -> ApiResult<()> {
    let ops = ops
        .as_array()
        .ok_or_else(|| ApiError::bad_request("json patch must be an array of operations"))?;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| ApiError::bad_request(format!("json patch {kind} needs a value")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad_request(format!("json patch {kind} needs from")))
        };
        match kind {
            "add" => add(doc, path, value()?)?,
            "remove" => {
                remove(doc, path)?;
            }
            "replace" => {
                remove(doc, path)?;
                add(doc, path, value()?)?;
            }
            "move" => {
                let v = remove(doc, from()?)?;
                add(doc, path, v)?;
            }
            "copy" => {
                let v = doc
                    .pointer(from()?)
                    .cloned()
                    .ok_or_else(|| ApiError::new(422, "Invalid", "jsonpatch copy: missing from"))?;
                add(doc, path, v)?;
            }
            "test" => {
                if doc.pointer(path) != Some(&value()?) {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        format!("testing value {path} failed"),
                    ));
                }
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown json patch operation {other:?}"
                )));
            }
        }
    }
    Ok(())
}

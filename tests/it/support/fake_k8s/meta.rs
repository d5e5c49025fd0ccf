//! Small helpers over JSON objects: metadata access, timestamps, uids, names and the
//! `Status` error objects the real API server returns.

use serde_json::{Map, Value, json};

use super::resources::ResourceType;

/// An API error: HTTP code plus the `Status` body the real server would send.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub status: Value,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        ApiError {
            code,
            status: json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code
            }),
        }
    }

    pub fn with_details(mut self, rt: &ResourceType, name: &str) -> Self {
        self.status["details"] = json!({"name": name, "group": rt.group, "kind": rt.plural});
        self
    }

    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", rt.qualified_plural(), name),
        )
        .with_details(rt, name)
    }

    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", rt.qualified_plural(), name),
        )
        .with_details(rt, name)
    }

    pub fn conflict(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
                rt.qualified_plural(),
                name
            ),
        )
        .with_details(rt, name)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 with one field cause, as validation failures come back.
    pub fn invalid(rt: &ResourceType, name: &str, field: &str, detail: &str) -> Self {
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{} \"{}\" is invalid: {}: {}", rt.kind, name, field, detail),
        );
        e.status["details"] = json!({
            "name": name, "group": rt.group, "kind": rt.kind,
            "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}]
        });
        e
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    pub fn unsupported_media_type(ct: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {ct:?})"
            ),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }
}

/// The `Status` the server sends for a successful immediate delete.
pub fn success_status(rt: &ResourceType, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": rt.group, "kind": rt.plural, "uid": uid}
    })
}

pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

pub fn now_rfc3339_nanos() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        .to_string()
}

/// Seconds since an RFC 3339 timestamp, or `None` when it does not parse.
pub fn age_seconds(ts: &str) -> Option<f64> {
    let t: jiff::Timestamp = ts.parse().ok()?;
    let d = jiff::Timestamp::now().duration_since(t);
    Some(d.as_secs_f64())
}

pub fn new_uid() -> String {
    let hex = |n: usize| -> String {
        (0..n)
            .map(|_| char::from_digit(fastrand::u32(0..16), 16).unwrap_or('0'))
            .collect()
    };
    format!("{}-{}-{}-{}-{}", hex(8), hex(4), hex(4), hex(4), hex(12))
}

/// The 5-character suffix Kubernetes uses for generated names (no vowels, no digits
/// that read like letters).
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[fastrand::usize(0..ALPHABET.len())] as char)
        .collect()
}

/// DNS-1123 subdomain, as object names must be.
pub fn is_dns1123_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// `metadata.<key>` as a string ("" when absent); hot, so no JSON-pointer parsing.
fn meta_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn name_of(obj: &Value) -> &str {
    meta_str(obj, "name")
}

pub fn namespace_of(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

pub fn uid_of(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

pub fn rv_of(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap_or(0)
}

pub fn labels_of(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `obj.metadata`, created as an empty map if missing or not a map.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    ensure_map(obj, "metadata")
}

/// `obj[key]` as a map, replacing anything that is not one.
pub fn ensure_map<'a>(obj: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(m) = obj else {
        unreachable!("just made an object")
    };
    let entry = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry
        .as_object_mut()
        .unwrap_or_else(|| unreachable!("just made an object"))
}

/// Set `obj[key]` only when it is absent (or null): server-side defaulting.
pub fn default_field(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// The ownerReference the controllers put on what they create.
pub fn owner_ref(owner: &Value, controller: bool) -> Value {
    json!({
        "apiVersion": owner.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": owner.get("kind").cloned().unwrap_or(Value::Null),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": controller,
        "blockOwnerDeletion": true
    })
}

pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Look up a dotted path (`status.phase`, `metadata.name`) in an object.
pub fn get_path<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(obj, |v, k| v.get(k))
}

/// A minimal glob: `*` matches any run of characters.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(pos) => rest = &rest[pos + part.len()..],
                None => return false,
            }
        }
    }
    true
}

//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`) and field selectors
//! (`metadata.name`, `metadata.namespace`, `status.phase`, any dotted path) as the API server
//! parses them.

use serde_json::Value;

use super::meta::{ApiError, ApiResult, get_path};

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

/// Split on commas that are not inside `( … )`.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_label_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn parse_set(key: &str, rest: &str, raw: &str) -> ApiResult<Vec<String>> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "unable to parse requirement: {raw:?}: found '{rest}', expected: '(' for key {key}"
            ))
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    pub fn parse(s: &str) -> ApiResult<Self> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for raw in split_top_level(s) {
            let term = raw.trim();
            if term.is_empty() {
                continue;
            }
            let bad = || {
                ApiError::bad_request(format!(
                    "unable to parse requirement: invalid label selector term {term:?}"
                ))
            };
            let req = if let Some(k) = term.strip_prefix('!') {
                LabelReq::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = term.split_once("!=") {
                LabelReq::NotEq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = term.split_once("==") {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = term.split_once('=') {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some(pos) = term.find(" notin ") {
                let key = term[..pos].trim();
                LabelReq::NotIn(key.to_string(), parse_set(key, &term[pos + 7..], term)?)
            } else if let Some(pos) = term.find(" in ") {
                let key = term[..pos].trim();
                LabelReq::In(key.to_string(), parse_set(key, &term[pos + 4..], term)?)
            } else {
                LabelReq::Exists(term.to_string())
            };
            let key = match &req {
                LabelReq::Eq(k, _)
                | LabelReq::NotEq(k, _)
                | LabelReq::In(k, _)
                | LabelReq::NotIn(k, _)
                | LabelReq::Exists(k)
                | LabelReq::NotExists(k) => k,
            };
            if !valid_label_key(key) {
                return Err(bad());
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Build from a `matchLabels` map (what controllers use for their pods).
    pub fn from_match_labels(labels: &serde_json::Map<String, Value>) -> Self {
        LabelSelector(
            labels
                .iter()
                .map(|(k, v)| LabelReq::Eq(k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        // Not `pointer()`: it allocates per token, and this runs for every object of a list.
        let labels = obj
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|req| match req {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
struct FieldReq {
    path: String,
    value: String,
    equal: bool,
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<FieldReq>);

impl FieldSelector {
    pub fn parse(s: &str) -> ApiResult<Self> {
        let mut reqs = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (path, value, equal) = if let Some((k, v)) = term.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, v, true)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, v, true)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            reqs.push(FieldReq {
                path: path.trim().to_string(),
                value: value.trim().to_string(),
                equal,
            });
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|r| {
            let actual = match get_path(obj, &r.path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == r.value) == r.equal
        })
    }
}

/// Both selectors of a list or watch request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub fn parse(label: Option<&str>, field: Option<&str>) -> ApiResult<Self> {
        Ok(Selectors {
            labels: LabelSelector::parse(label.unwrap_or(""))?,
            fields: FieldSelector::parse(field.unwrap_or(""))?,
        })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }
}

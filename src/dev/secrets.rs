//! `nrl dev setup-secrets`: the user's Secret, whose keys become the dev pod's environment.
//!
//! Written by server-side apply with field manager `nrl`, so there is no read-then-replace
//! race (the reference's PUT could drop a concurrent writer's keys):
//! - the apply carries the `resourceVersion` that was read, so a concurrent change makes
//!   it fail with a conflict instead of overwriting; nrl then reads again and retries;
//! - `KEY=VALUE` takes ownership of KEY even when someone else wrote it (force), because
//!   the user asked for that value;
//! - keys nrl applied earlier stay in the apply with their current values; `KEY-` leaves
//!   KEY out, and the API server removes what nobody else owns;
//! - a key that another tool wrote (`kubectl create secret`, the reference's PUT) is not
//!   removed by leaving it out of an apply, so `KEY-` removes it with a JSON patch guarded
//!   by the same `resourceVersion` test; keys nobody mentions are never touched.
//!
//! Values are never printed: the summary shows each key's state and size.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value as Json, json};

use crate::config::env::Env;
use crate::diag::{Diag, Result};
use crate::k8s::objects::FIELD_MANAGER;

/// Keys a first-time secret must contain, with how to supply each.
pub const FIRST_USE_REQUIRED: &[(&str, &str)] = &[
    ("HF_TOKEN", "HF_TOKEN=hf_..."),
    ("WANDB_API_KEY", "WANDB_API_KEY=..."),
    ("SSH_KEY_CONTENT", "--ssh-key ~/.ssh/id_ed25519"),
];

const CODE_ARGS: &str = "nrl::dev::secret_args";

/// One requested change to the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretEdit {
    Set(String, Vec<u8>),
    Remove(String),
}

impl SecretEdit {
    pub fn key(&self) -> &str {
        match self {
            SecretEdit::Set(k, _) | SecretEdit::Remove(k) => k,
        }
    }
}

/// `KEY=VALUE` (split at the first `=`) or `KEY-` (remove).
pub fn parse_edit(arg: &str) -> Result<SecretEdit> {
    let edit = match arg.split_once('=') {
        Some((k, v)) => SecretEdit::Set(k.to_string(), v.as_bytes().to_vec()),
        None => match arg.strip_suffix('-') {
            Some(k) => SecretEdit::Remove(k.to_string()),
            None => {
                return Err(Diag::new(
                    CODE_ARGS,
                    format!("invalid argument `{arg}`: expected KEY=VALUE, or KEY- to remove KEY"),
                )
                .help("e.g. `nrl dev setup-secrets HF_TOKEN=hf_abc WANDB_API_KEY=123 OLD_KEY-`"));
            }
        },
    };
    check_key(edit.key())?;
    Ok(edit)
}

/// Keys become environment variables of the dev pod (`envFrom`), so they must be names a
/// shell can use: letters, digits and `_`, not starting with a digit.
pub fn check_key(key: &str) -> Result<()> {
    let mut chars = key.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= 253;
    if ok {
        return Ok(());
    }
    Err(Diag::new(
        "nrl::dev::secret_key",
        format!("`{key}` cannot be a key of the dev secret"),
    )
    .help(
        "every key becomes an environment variable in the dev pod, so use letters, digits and \
         `_`, not starting with a digit (e.g. `HF_TOKEN`)",
    ))
}

/// `SSH_KEY_NAME` (the file name) and `SSH_KEY_CONTENT` (its bytes) from `--ssh-key FILE`.
pub fn ssh_key_edits(path: &Path) -> Result<Vec<SecretEdit>> {
    let content = read_input(
        path,
        "SSH key",
        "pass the private key file, e.g. --ssh-key ~/.ssh/id_ed25519",
    )?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "id_rsa".to_string());
    Ok(vec![
        SecretEdit::Set("SSH_KEY_NAME".into(), name.into_bytes()),
        SecretEdit::Set("SSH_KEY_CONTENT".into(), content),
    ])
}

/// Where rclone keeps its config: `$RCLONE_CONFIG`, else `~/.config/rclone/rclone.conf`.
pub fn rclone_config_path(env: &dyn Env) -> Option<PathBuf> {
    match env.var("RCLONE_CONFIG") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => env
            .home()
            .map(|h| h.join(".config").join("rclone").join("rclone.conf")),
    }
}

/// `RCLONE_CONF` from the local rclone config (`--add-rclone`).
pub fn rclone_edit(env: &dyn Env) -> Result<SecretEdit> {
    let Some(path) = rclone_config_path(env) else {
        return Err(Diag::new(
            "nrl::dev::rclone",
            "cannot find the rclone config: no home directory",
        )
        .help("set RCLONE_CONFIG to the config file's path"));
    };
    if !path.is_file() {
        return Err(Diag::new(
            "nrl::dev::rclone",
            format!("rclone config not found at {}", path.display()),
        )
        .help("install rclone and run `rclone config` first, or set RCLONE_CONFIG to the file"));
    }
    let content = read_input(&path, "rclone config", "check the file is readable")?;
    Ok(SecretEdit::Set("RCLONE_CONF".into(), content))
}

fn read_input(path: &Path, what: &str, help: &str) -> Result<Vec<u8>> {
    crate::config::input::read_bytes(path).map_err(|e| {
        Diag::new(
            "nrl::dev::read",
            format!("cannot read the {what} {}: {e}", path.display()),
        )
        .help(help.to_string())
    })
}

/// Refuse a key mentioned twice (set twice, or set and removed): which one was meant?
pub fn check_unique(edits: &[SecretEdit]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for e in edits {
        if !seen.insert(e.key()) {
            return Err(Diag::new(
                CODE_ARGS,
                format!("`{}` is given more than once", e.key()),
            )
            .help("set or remove each key once per command (`--ssh-key` sets SSH_KEY_NAME and SSH_KEY_CONTENT, `--add-rclone` sets RCLONE_CONF)"));
        }
    }
    Ok(())
}

/// What a key's line in the summary says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    Added,
    Changed,
    Unchanged,
    /// Present and not mentioned this time.
    Kept,
    Removed,
    /// `KEY-` for a key that was not there.
    Absent,
    /// `KEY-`, but the key is still there afterwards (another writer put it back).
    NotRemoved,
}

impl KeyState {
    pub fn word(self) -> &'static str {
        match self {
            KeyState::Added => "added",
            KeyState::Changed => "changed",
            KeyState::Unchanged => "unchanged",
            KeyState::Kept => "kept",
            KeyState::Removed => "removed",
            KeyState::Absent => "not present",
            KeyState::NotRemoved => "NOT removed",
        }
    }
}

/// One line of the summary; never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLine {
    pub key: String,
    pub state: KeyState,
    /// Size of the value now stored (`None` once removed).
    pub bytes: Option<usize>,
    /// Field managers other than nrl that wrote this key.
    pub other_writers: Vec<String>,
}

/// The live secret, as far as planning is concerned.
#[derive(Debug, Clone, Default)]
pub struct LiveSecret {
    pub resource_version: String,
    /// Key -> base64 value, as stored.
    pub data: BTreeMap<String, String>,
    /// Key -> the field managers that own it (`nrl` for nrl's applies).
    pub owners: BTreeMap<String, BTreeSet<String>>,
}

impl LiveSecret {
    pub fn from_json(obj: &Json) -> LiveSecret {
        let data = obj
            .get("data")
            .and_then(Json::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let mut owners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let entries = obj
            .pointer("/metadata/managedFields")
            .and_then(Json::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for e in entries {
            let manager = e.get("manager").and_then(Json::as_str).unwrap_or("");
            let applied = e.get("operation").and_then(Json::as_str) == Some("Apply");
            // nrl's own applies are "nrl"; anything else (including an `Update` by nrl's
            // JSON patch) counts as another writer.
            let who = if manager == FIELD_MANAGER && applied {
                FIELD_MANAGER.to_string()
            } else if manager == FIELD_MANAGER {
                format!("{manager} (patch)")
            } else {
                manager.to_string()
            };
            let keys = e
                .pointer("/fieldsV1/f:data")
                .and_then(Json::as_object)
                .into_iter()
                .flat_map(|m| m.keys())
                .filter_map(|k| k.strip_prefix("f:"));
            for k in keys {
                owners.entry(k.to_string()).or_default().insert(who.clone());
            }
        }
        LiveSecret {
            resource_version: obj
                .pointer("/metadata/resourceVersion")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string(),
            data,
            owners,
        }
    }

    fn owned_only_by_nrl(&self, key: &str) -> bool {
        self.owners
            .get(key)
            .is_some_and(|o| o.len() == 1 && o.contains(FIELD_MANAGER))
    }

    fn other_writers(&self, key: &str) -> Vec<String> {
        self.owners
            .get(key)
            .map(|o| o.iter().filter(|m| *m != FIELD_MANAGER).cloned().collect())
            .unwrap_or_default()
    }
}

/// Which secret, where, and the labels it carries.
#[derive(Debug, Clone)]
pub struct SecretTarget {
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

/// The requests that carry out the edits against one read of the secret.
#[derive(Debug, Clone)]
pub struct SecretPlan {
    pub create: bool,
    /// Keys another writer owns that `KEY-` removes (JSON patch first).
    pub remove_by_patch: Vec<String>,
    /// The server-side apply body (its resourceVersion is filled in by the caller).
    pub apply: Json,
    pub lines: Vec<KeyLine>,
}

/// Plan the edits against the live secret (`None`: it does not exist yet).
pub fn plan(
    target: &SecretTarget,
    live: Option<&LiveSecret>,
    edits: &[SecretEdit],
) -> Result<SecretPlan> {
    let empty = LiveSecret::default();
    let create = live.is_none();
    let live = live.unwrap_or(&empty);
    if create {
        check_first_use(target, edits)?;
    }
    let sets: BTreeMap<&str, &[u8]> = edits
        .iter()
        .filter_map(|e| match e {
            SecretEdit::Set(k, v) => Some((k.as_str(), v.as_slice())),
            SecretEdit::Remove(_) => None,
        })
        .collect();
    let removes: BTreeSet<&str> = edits
        .iter()
        .filter_map(|e| match e {
            SecretEdit::Remove(k) => Some(k.as_str()),
            SecretEdit::Set(..) => None,
        })
        .collect();

    // The apply: every key nrl owns (current value) unless removed, plus the new values.
    let mut data = serde_json::Map::new();
    for (k, v) in &live.data {
        let ours = live
            .owners
            .get(k)
            .is_some_and(|o| o.contains(FIELD_MANAGER));
        if ours && !removes.contains(k.as_str()) {
            data.insert(k.clone(), Json::String(v.clone()));
        }
    }
    for (k, v) in &sets {
        data.insert(k.to_string(), Json::String(B64.encode(v)));
    }
    let mut metadata = json!({"name": target.name, "namespace": target.namespace});
    if !target.labels.is_empty() {
        metadata["labels"] = json!(target.labels);
    }
    let mut apply =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data});
    if create {
        // `type` is immutable: only a new secret gets one.
        apply["type"] = json!("Opaque");
    }

    let remove_by_patch = removes
        .iter()
        .filter(|k| live.data.contains_key(**k) && !live.owned_only_by_nrl(k))
        .map(|k| k.to_string())
        .collect();

    let mut keys: BTreeSet<&str> = live.data.keys().map(String::as_str).collect();
    keys.extend(sets.keys());
    keys.extend(removes.iter());
    let lines = keys
        .into_iter()
        .map(|k| {
            let old = live.data.get(k);
            let (state, bytes) = if let Some(v) = sets.get(k) {
                let same = old.is_some_and(|o| *o == B64.encode(v));
                let state = match old {
                    None => KeyState::Added,
                    Some(_) if same => KeyState::Unchanged,
                    Some(_) => KeyState::Changed,
                };
                (state, Some(v.len()))
            } else if removes.contains(k) {
                let state = if old.is_some() {
                    KeyState::Removed
                } else {
                    KeyState::Absent
                };
                (state, None)
            } else {
                (KeyState::Kept, old.map(|v| decoded_len(v)))
            };
            KeyLine {
                key: k.to_string(),
                state,
                bytes,
                other_writers: live.other_writers(k),
            }
        })
        .collect();
    Ok(SecretPlan {
        create,
        remove_by_patch,
        apply,
        lines,
    })
}

fn decoded_len(b64: &str) -> usize {
    B64.decode(b64).map(|v| v.len()).unwrap_or(0)
}

/// A new secret must carry the keys the pod needs; all missing ones are named at once.
fn check_first_use(target: &SecretTarget, edits: &[SecretEdit]) -> Result<()> {
    let has = |key: &str| {
        edits
            .iter()
            .any(|e| matches!(e, SecretEdit::Set(k, v) if k == key && !v.is_empty()))
    };
    let missing: Vec<_> = FIRST_USE_REQUIRED.iter().filter(|(k, _)| !has(k)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|(k, _)| *k).collect();
    let example: Vec<&str> = FIRST_USE_REQUIRED.iter().map(|(_, how)| *how).collect();
    Err(Diag::new(
        "nrl::dev::secret_first_use",
        format!(
            "secret {} does not exist in namespace `{}` yet, and a first setup requires: {}",
            target.name,
            target.namespace,
            names.join(", ")
        ),
    )
    .help(format!(
        "supply them all the first time, e.g.\n  nrl dev setup-secrets {}",
        example.join(" ")
    )))
}

/// Bring the planned lines up to date with the secret the API server returned: sizes of
/// what is stored now, and removals that did not happen.
pub fn finalize(mut lines: Vec<KeyLine>, stored: &Json) -> Vec<KeyLine> {
    let data = stored.get("data").and_then(Json::as_object);
    for l in &mut lines {
        let now = data
            .and_then(|d| d.get(&l.key))
            .and_then(Json::as_str)
            .map(decoded_len);
        if l.state == KeyState::Removed && now.is_some() {
            l.state = KeyState::NotRemoved;
        }
        l.bytes = now;
    }
    lines
}

/// The summary printed after a successful change: every key now present, plus the ones
/// removed or asked to be removed; values masked.
pub fn summary(target: &SecretTarget, created: bool, lines: &[KeyLine]) -> String {
    let present = lines.iter().filter(|l| l.bytes.is_some()).count();
    let mut out = format!(
        "{} secret {} in namespace `{}` ({present} key{})\n",
        if created { "created" } else { "updated" },
        target.name,
        target.namespace,
        if present == 1 { "" } else { "s" }
    );
    let width = lines.iter().map(|l| l.key.len()).max().unwrap_or(0);
    for l in lines {
        let size = match l.bytes {
            Some(n) => format!("  ******** ({n} byte{})", if n == 1 { "" } else { "s" }),
            None => String::new(),
        };
        let writers = if l.other_writers.is_empty() {
            String::new()
        } else {
            format!("  [also written by {}]", l.other_writers.join(", "))
        };
        out.push_str(&format!(
            "  {:<width$}  {:<11}{size}{writers}\n",
            l.key,
            l.state.word()
        ));
    }
    out
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;

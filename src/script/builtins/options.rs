//! Reading a built-in's options map (`#{wait: true, timeout: 600}`): unknown keys are
//! refused with a did-you-mean, and each value is checked for its type, so a typo in a
//! playbook fails at the call instead of being ignored.

use std::time::Duration;

use rhai::{Dynamic, FLOAT, INT, Map};

use crate::config::suggest::did_you_mean;
use crate::diag::Diag;
use crate::script::convert::string_list;
use crate::script::errors::{RhaiResult, fail};

pub const CODE_OPTION: &str = "nrl::script::option";

/// The options of one call of `what`.
pub struct Options<'a> {
    what: &'static str,
    map: &'a Map,
}

impl<'a> Options<'a> {
    /// Check that every key is one of `allowed`.
    pub fn new(what: &'static str, map: &'a Map, allowed: &[&str]) -> RhaiResult<Options<'a>> {
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                let list = allowed.join(", ");
                let help = match did_you_mean(key, allowed.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`? (options: {list})"),
                    None => format!("the options are: {list}"),
                };
                return Err(fail(
                    Diag::new(CODE_OPTION, format!("{what}() has no option `{key}`")).help(help),
                ));
            }
        }
        Ok(Options { what, map })
    }

    fn get(&self, key: &str) -> Option<&'a Dynamic> {
        self.map.get(key).filter(|v| !v.is_unit())
    }

    fn bad(&self, key: &str, want: &str, got: &Dynamic) -> Box<rhai::EvalAltResult> {
        fail(
            Diag::new(
                CODE_OPTION,
                format!(
                    "option `{key}` of {}() must be {want} (got {})",
                    self.what,
                    got.type_name()
                ),
            )
            .help(format!("e.g. #{{{key}: …}} with {want}")),
        )
    }

    /// A value given as anything printable (`()` counts as absent).
    pub fn str(&self, key: &str) -> Option<String> {
        self.get(key).map(|v| v.to_string())
    }

    pub fn bool(&self, key: &str, default: bool) -> RhaiResult<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.as_bool().map_err(|_| self.bad(key, "true or false", v)),
        }
    }

    pub fn int(&self, key: &str) -> RhaiResult<Option<INT>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_int()
                .map(Some)
                .map_err(|_| self.bad(key, "an integer", v)),
        }
    }

    /// Seconds (an integer or a float, zero or more).
    pub fn seconds(&self, key: &str, default: Duration) -> RhaiResult<Duration> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let secs = v
            .as_float()
            .ok()
            .or_else(|| v.as_int().ok().map(|i| i as FLOAT));
        secs.and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| self.bad(key, "a number of seconds, zero or more", v))
    }

    /// A list of strings; a single string is a list of one.
    pub fn strings(&self, key: &str) -> RhaiResult<Option<Vec<String>>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => string_list(v, &format!("option `{key}` of {}()", self.what))
                .map(Some)
                .map_err(fail),
        }
    }

    /// A map of strings (`#{HF_TOKEN: "…"}`): values are written as text.
    pub fn string_map(&self, key: &str) -> RhaiResult<Option<Vec<(String, String)>>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.read_lock::<Map>() {
                Some(m) => Ok(Some(
                    m.iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                )),
                None => Err(self.bad(key, "a map", v)),
            },
        }
    }

    /// The raw value.
    pub fn value(&self, key: &str) -> Option<&'a Dynamic> {
        self.get(key)
    }
}

//! The process environment as an injectable dependency, so `${oc.env:…}`, `${user:}`,
//! user-defaults paths and namespace inference are hermetic in tests.

use std::collections::HashMap;
use std::path::PathBuf;

/// Read-only view of environment variables and the few machine facts config needs.
pub trait Env: Send + Sync {
    fn var(&self, name: &str) -> Option<String>;

    /// Home directory (for `~/.config/...`).
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// The login name from the user database, for when no environment variable names
    /// the user (Python's `getpass.getuser()` falls back the same way).
    fn login_name(&self) -> Option<String> {
        None
    }

    /// The in-cluster service-account directory (`token`, `namespace`, `ca.crt`).
    fn service_account_dir(&self) -> PathBuf {
        PathBuf::from("/var/run/secrets/kubernetes.io/serviceaccount")
    }
}

/// The real process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn home(&self) -> Option<PathBuf> {
        dirs::home_dir()
    }

    fn login_name(&self) -> Option<String> {
        passwd_name(
            std::fs::read_to_string("/etc/passwd").ok()?.as_str(),
            current_uid()?,
        )
    }
}

#[cfg(unix)]
fn current_uid() -> Option<u32> {
    Some(rustix::process::getuid().as_raw())
}

#[cfg(not(unix))]
fn current_uid() -> Option<u32> {
    None
}

/// The name of `uid` in `/etc/passwd` text (`name:x:uid:gid:…`).
fn passwd_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let _password = fields.next()?;
        let id: u32 = fields.next()?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

/// A fixed environment for tests and scripts.
#[derive(Debug, Default, Clone)]
pub struct MapEnv {
    pub vars: HashMap<String, String>,
    /// Stands for the service-account directory; unset: a directory that does not exist.
    pub sa_dir: Option<PathBuf>,
}

impl MapEnv {
    pub fn new<const N: usize>(pairs: [(&str, &str); N]) -> MapEnv {
        MapEnv {
            vars: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            sa_dir: None,
        }
    }

    pub fn set(&mut self, k: &str, v: &str) -> &mut Self {
        self.vars.insert(k.to_string(), v.to_string());
        self
    }
}

impl Env for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    fn service_account_dir(&self) -> PathBuf {
        self.sa_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/nonexistent/nrl-test/serviceaccount"))
    }
}

/// The user name nrl acts as: `NRL_USER`, then `NRL_K8S_USER`, then the login name;
/// lower-cased with `_` and `.` turned into `-` (what `${user:}` gives and what owner
/// labels carry).
pub fn username(env: &dyn Env) -> String {
    let raw = ["NRL_USER", "NRL_K8S_USER"]
        .iter()
        .filter_map(|k| env.var(k))
        .find(|v| !v.is_empty())
        .or_else(|| {
            ["LOGNAME", "USER", "LNAME", "USERNAME"]
                .iter()
                .filter_map(|k| env.var(k))
                .find(|v| !v.is_empty())
        })
        .or_else(|| env.login_name())
        .unwrap_or_else(|| "nobody".to_string());
    normalise_user(&raw)
}

pub fn normalise_user(raw: &str) -> String {
    raw.to_lowercase().replace(['_', '.'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn username_precedence_and_normalisation() {
        let env = MapEnv::new([("NRL_K8S_USER", "Alice_B.C"), ("USER", "bob")]);
        assert_eq!(username(&env), "alice-b-c");
        let env = MapEnv::new([("NRL_USER", "Zed"), ("NRL_K8S_USER", "alice")]);
        assert_eq!(username(&env), "zed");
        let env = MapEnv::new([("NRL_USER", ""), ("USER", "carol")]);
        assert_eq!(username(&env), "carol");
    }

    #[test]
    fn passwd_lookup_by_uid() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\n# comment\nalice:x:1000:1000::/home/alice:/bin/sh\n";
        assert_eq!(passwd_name(passwd, 1000).as_deref(), Some("alice"));
        assert_eq!(passwd_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(passwd_name(passwd, 42), None);
    }

    #[cfg(unix)]
    #[test]
    fn process_env_finds_a_login_name_without_variables() {
        // Whatever the machine, the current uid has a passwd entry in CI containers and
        // on developer machines alike.
        assert!(ProcessEnv.login_name().is_some_and(|n| !n.is_empty()));
    }
}

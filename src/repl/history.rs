//! Where the REPL keeps its history: `$XDG_STATE_HOME/nrl/history`, else
//! `~/.local/state/nrl/history` (the XDG base directory rules: a relative
//! `XDG_STATE_HOME` is ignored).

use std::path::PathBuf;

use crate::config::env::Env;

/// The history file, or `None` when neither `XDG_STATE_HOME` nor a home directory is
/// known (the session then keeps its history in memory only).
pub fn history_path(env: &dyn Env) -> Option<PathBuf> {
    let state = env
        .var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.home().map(|h| h.join(".local/state")))?;
    Some(state.join("nrl").join("history"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;

    #[test]
    fn xdg_state_home_then_home() {
        let env = MapEnv::new([("XDG_STATE_HOME", "/state"), ("HOME", "/home/a")]);
        assert_eq!(
            history_path(&env),
            Some(PathBuf::from("/state/nrl/history"))
        );
        let env = MapEnv::new([("XDG_STATE_HOME", "relative"), ("HOME", "/home/a")]);
        assert_eq!(
            history_path(&env),
            Some(PathBuf::from("/home/a/.local/state/nrl/history"))
        );
        assert_eq!(history_path(&MapEnv::new([("USER", "a")])), None);
    }
}

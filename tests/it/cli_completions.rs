//! `nrl completions` and `nrl man`: the bash script completes commands, flags and enum
//! values when bash runs it (as `complete -F` would call it); zsh and fish scripts are
//! generated; man pages exist for every command.

use std::process::Command;

use crate::support::context::TestContext;

/// What bash's completion function offers for `words` (the last is being completed).
fn complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let cur = words.last().copied().unwrap_or("");
    let prev = if words.len() > 1 {
        words[words.len() - 2]
    } else {
        ""
    };
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; \
         COMP_POINT=${{#COMP_LINE}}; _nrl nrl '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1,
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    got.sort();
    got
}

#[test]
fn bash_completes_commands_flags_and_values() {
    let ctx = TestContext::new();
    let ran = ctx.nrl().args(["completions", "bash"]).output().unwrap();
    assert!(ran.status.success());
    let script = ctx.home().join("nrl.bash");
    std::fs::write(&script, &ran.stdout).unwrap();
    assert_eq!(complete(&script, &["nrl", "ru"]), ["run", "runs"]);
    assert_eq!(
        complete(&script, &["nrl", "runs", "--status", ""]),
        ["failed", "lost", "running", "stopped", "succeeded"]
    );
    assert!(
        complete(&script, &["nrl", "run", "--"])
            .iter()
            .any(|f| f == "--from"),
        "run's flags include --from"
    );
    let shells = complete(&script, &["nrl", "completions", ""]);
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        assert!(shells.iter().any(|s| s == shell), "{shell} in {shells:?}");
    }
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let ran = ctx.nrl().args(["completions", shell]).output().unwrap();
        assert!(ran.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&ran.stdout).contains("diagnose"),
            "{shell} knows the commands"
        );
    }
}

#[test]
fn man_pages_cover_every_command() {
    let ctx = TestContext::new();
    let ran = ctx.nrl().arg("man").output().unwrap();
    let page = String::from_utf8_lossy(&ran.stdout);
    assert!(page.contains(".TH nrl 1"), "{page}");
    let dir = ctx.home().join("man1");
    let ran = ctx.nrl().args(["man", "--dir"]).arg(&dir).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for want in [
        "nrl.1",
        "nrl-run.1",
        "nrl-cluster-up.1",
        "nrl-gym-submit.1",
        "nrl-diff.1",
    ] {
        assert!(pages.iter().any(|p| p == want), "{want} in {pages:?}");
    }
    let run = std::fs::read_to_string(dir.join("nrl-run.1")).unwrap();
    assert!(run.contains("\\-\\-from"), "the run page documents --from");
}

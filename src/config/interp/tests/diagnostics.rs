//! What users see: codes, labels at the right line, help that says how to fix it.

use super::super::{check_syntax, resolve};
use super::{env, failure, load};

#[test]
fn unescaped_shell_variable_gets_the_escape_help() {
    // ref §3.7: `${LOG_DIR}` is a key lookup
    let d = failure("cmd: mkdir -p ${LOG_DIR}\n");
    assert_eq!(d.code, "nrl::interp::missing_key");
    assert_eq!(d.message, "Interpolation key 'LOG_DIR' not found");
    let help = d.help.clone().unwrap_or_default();
    assert!(
        help.contains("shell variable, escape it as `\\${LOG_DIR}`"),
        "{help}"
    );
}

#[test]
fn shell_default_expansion_gets_the_escape_help() {
    // ref §3.7: `${VAR:-x}` parses as a call of resolver `VAR`
    let d = failure("cmd: echo ${VAR:-x}\n");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert_eq!(d.message, "Unsupported interpolation type VAR");
    let help = d.help.clone().unwrap_or_default();
    assert!(help.contains("escape it as `\\${VAR:-x}`"), "{help}");
    assert!(help.contains("known resolvers"), "{help}");
    let d = failure("cmd: echo ${tmp:-/x}\n");
    assert!(
        d.help
            .clone()
            .unwrap_or_default()
            .contains("`\\${tmp:-/x}`")
    );
}

#[test]
fn shell_expansion_that_is_not_grammar_gets_the_escape_help() {
    let root = load("sh.yaml", "cmd: echo ${CLUSTER_UUID:-<none>} done\n");
    let d = check_syntax(&root).expect_err("`<` is not allowed");
    assert_eq!(d.code, "nrl::interp::syntax");
    let help = d.help.clone().unwrap_or_default();
    assert!(
        help.contains("escape it as `\\${CLUSTER_UUID:-<none>}`"),
        "{help}"
    );
    assert_eq!(d.labels[0].span.text(), "${CLUSTER_UUID:-<none>}");
}

#[test]
fn key_that_names_a_resolver_suggests_calling_it() {
    let d = failure("a: ${user}\n");
    assert_eq!(d.code, "nrl::interp::missing_key");
    let help = d.help.clone().unwrap_or_default();
    assert!(
        help.contains("`user` is a resolver: call it as `${user:}`"),
        "{help}"
    );
}

#[test]
fn close_keys_get_a_suggestion() {
    let d = failure("kuberay:\n  training:\n    name: x\na: ${kuberay.trainig.name}\n");
    let help = d.help.clone().unwrap_or_default();
    assert!(help.contains("did you mean `kuberay.training`?"), "{help}");
}

#[test]
fn label_points_at_the_interpolation_inside_the_value() {
    let d = failure("a: 1\ncmd: \"x ${a} ${nope} y\"\n");
    assert_eq!(d.labels[0].span.text(), "${nope}");
    assert_eq!(d.location().as_deref(), Some("t.yaml:2:14"));
}

#[test]
fn block_string_error_renders_file_line_and_escape_help() {
    let text = concat!(
        "launch:\n",
        "  entrypoint: |\n",
        "    set -eu\n",
        "    LOG_DIR=/mnt/logs\n",
        "    LOG=\\${LOG_DIR}/run.log\n",
        "    mkdir -p \"${LOG_DIR}\"\n",
    );
    let root = load("entry.infra.yaml", text);
    let d = resolve(&root, &env()).expect_err("unescaped ${LOG_DIR}");
    let out = d.render(false, 80);
    assert!(out.contains("nrl::interp::missing_key"), "{out}");
    assert!(
        out.contains("entry.infra.yaml:6:15"),
        "line of the unescaped one:\n{out}"
    );
    assert!(out.contains("escape it as `\\${LOG_DIR}`"), "{out}");
    assert!(
        out.contains("Interpolation key 'LOG_DIR' not found"),
        "{out}"
    );
}

#[test]
fn errors_in_a_chain_say_which_value_needed_them() {
    let d = failure("a: ${b}\nb: ${oc.env:NRL_TEST_UNSET}\n");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert_eq!(d.location().as_deref(), Some("t.yaml:2:4"));
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("needed by `a` (t.yaml:1:4)")),
        "{:?}",
        d.notes
    );
}

#[test]
fn key_interpolation_must_give_a_string() {
    let d = failure("i: 0\nl: [5]\na: ${l[${i}]}\n");
    assert_eq!(d.code, "nrl::interp::type");
    assert!(d.message.contains("used as a config key"), "{}", d.message);
}

#[test]
fn shell_help_only_where_a_shell_variable_is_plausible() {
    let help = |t: &str| failure(t).help.clone().unwrap_or_default();
    assert!(!help("a: ${foo}\n").contains("shell"), "lower-case key");
    assert!(help("a: ${HOME}\n").contains("`\\${HOME}`"));
    let root = load("syn.yaml", "a: ${a..b}\nb: ${PATH:-/bin<x}\n");
    let d = check_syntax(&root).expect_err("two errors");
    assert!(!d.help.clone().unwrap_or_default().contains("shell"));
    assert!(
        d.related[0]
            .help
            .clone()
            .unwrap_or_default()
            .contains("`\\${PATH:-/bin<x}`")
    );
}

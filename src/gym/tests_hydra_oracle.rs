//! The `gym eval run|prepare` arguments read back by the real Hydra: every rendered word
//! goes through Python's `shlex.split`, hydra-core's `OverridesParser.parse_override` and
//! `ConfigLoaderImpl._apply_overrides_to_config` (what `+key=value` does to the config),
//! then `OmegaConf.to_container(resolve=True)`; the value at the key must equal the
//! configured one, type included. One Python process reads all cases as JSON lines.
//!
//! Python: `$NRL_PYTHON` (else `<repo>/.venv/bin/python`) with hydra-core and omegaconf
//! (`make venv`). Without it the test is skipped with a notice, except under `CI=true`,
//! where it fails. Seed: `$NRL_HYDRA_ORACLE_SEED` (printed, to reproduce a failure).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value as Json, json};

use super::script::run_words;
use crate::config::node::{Map, Node, Value, python_float_repr};

const ORACLE: &str = r#"
import json, shlex, sys
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from omegaconf import OmegaConf

def enc(v):
    if v is None:
        return ["n"]
    if isinstance(v, bool):
        return ["b", v]
    if isinstance(v, int):
        return ["i", str(v)]
    if isinstance(v, float):
        return ["f", repr(v)]
    if isinstance(v, str):
        return ["s", v]
    if isinstance(v, list):
        return ["l", [enc(x) for x in v]]
    if isinstance(v, dict):
        return ["d", [[enc(k), enc(x)] for k, x in v.items()]]
    return ["?", repr(v)]

parser = OverridesParser.create()
for line in sys.stdin:
    case = json.loads(line)
    try:
        words = shlex.split(case["token"])
        if len(words) != 1:
            raise ValueError(f"{len(words)} shell words")
        override = parser.parse_override(words[0])
        cfg = OmegaConf.create({})
        ConfigLoaderImpl._apply_overrides_to_config([override], cfg)
        got = OmegaConf.to_container(cfg, resolve=True)
        for part in case["key"].split("."):
            got = got[part]
        out = {"value": enc(got)}
    except Exception as e:
        out = {"error": f"{type(e).__name__}: {e}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"#;

/// The configured value in the oracle's tagged form.
fn enc(n: &Node) -> Json {
    match &n.value {
        Value::Null => json!(["n"]),
        Value::Bool(b) => json!(["b", b]),
        Value::Int(i) => json!(["i", i.to_string()]),
        Value::Float(f) => json!(["f", python_float_repr(*f)]),
        Value::Str(s) => json!(["s", s]),
        Value::List(items) => json!(["l", items.iter().map(enc).collect::<Vec<_>>()]),
        Value::Map(m) => json!([
            "d",
            m.iter()
                .map(|(k, v)| json!([["s", k], enc(v)]))
                .collect::<Vec<_>>()
        ]),
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A Python with hydra-core and omegaconf, or `None` (skip) outside CI.
fn python() -> Option<PathBuf> {
    let path = std::env::var_os("NRL_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    let ok = Command::new(&path)
        .args(["-c", "import hydra, omegaconf"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match ok {
        true => Some(path),
        false if in_ci() => panic!(
            "{} has no hydra-core/omegaconf; under CI=true the Hydra oracle is required \
             (`make venv`, or set NRL_PYTHON)",
            path.display()
        ),
        false => {
            let _ = writeln!(
                std::io::stderr(),
                "notice: no Python with hydra-core at {} (set NRL_PYTHON); skipping the Hydra oracle",
                path.display()
            );
            None
        }
    }
}

/// Run the oracle over `(key, token)` cases; its answers in order.
fn oracle(py: &PathBuf, cases: &[(String, String)]) -> Vec<Json> {
    let mut child = Command::new(py)
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = cases
        .iter()
        .map(|(key, token)| format!("{}\n", json!({"key": key, "token": token})))
        .collect();
    // Written from a thread: the answers fill the stdout pipe meanwhile.
    let writer = std::thread::spawn(move || {
        stdin.write_all(input.as_bytes()).expect("write cases");
    });
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let answers: Vec<Json> = stdout
        .lines()
        .map(|l| serde_json::from_str(&l.expect("read answer")).expect("answer is JSON"))
        .collect();
    writer.join().expect("writer");
    assert!(
        child.wait().expect("python exits").success(),
        "oracle failed"
    );
    assert_eq!(answers.len(), cases.len(), "one answer per case");
    answers
}

fn map(entries: Vec<(&str, Node)>) -> Node {
    let mut m = Map::new();
    for (k, v) in entries {
        m.insert(k.to_string(), v);
    }
    Node::from_map(m)
}

fn float(f: f64) -> Node {
    Node::new(Value::Float(f))
}

/// The cases of the issue, and the reference's table.
fn fixed_cases() -> Vec<Node> {
    vec![
        map(vec![(
            "tags",
            Node::list(vec![Node::str(""), Node::str("a")]),
        )]),
        map(vec![("title", Node::str("héllo"))]),
        map(vec![("lit", Node::str("${X}"))]),
        map(vec![("lit", Node::str(r"\${X} and \\${Y}"))]),
        map(vec![("split", Node::str("benchmark"))]),
        map(vec![("msg", Node::str("hello world"))]),
        map(vec![("q", Node::str("it's"))]),
        map(vec![("url", Node::str("http://localhost:8000/v1"))]),
        map(vec![("n", Node::str("4")), ("m", Node::int(4))]),
        map(vec![("x", Node::null()), ("t", Node::bool(true))]),
        map(vec![("k", Node::list(vec![])), ("e", map(vec![]))]),
        map(vec![(
            "k",
            Node::list(vec![map(vec![
                ("a", Node::int(1)),
                ("b c", Node::str("d:e")),
            ])]),
        )]),
        map(vec![
            ("inf", float(f64::INFINITY)),
            ("nan", float(f64::NAN)),
            ("neg", float(-0.0)),
            ("big", float(1e300)),
        ]),
    ]
}

const PIECES: &[&str] = &[
    "a", "Z", "_", "-", "0", "1", "42", ".", "/", ":", "+", "%", "*", "@", "?", "|", " ", "  ",
    "\t", "'", "\"", "\\", "\\\\", "$", "{", "}", "${X}", "${", "[", "]", "(", ")", ",", "=", "#",
    "é", "日本", "🙂", "true", "null", "inf", "nan", "1.5", "1e5", "-3", "???", "\n", "~", "!",
];

const DICT_KEYS: &[&str] = &[
    "a",
    "b c",
    "x:y",
    "k,v",
    "(p)",
    "[q]",
    "{r}",
    "e=f",
    "back\\slash",
    "$d",
    "${k}",
    "t\tab",
    "_u",
    "v-w",
    "1a",
    "a.b",
    "+x",
    "-",
    "?",
    "sp ace ",
];

const RUN_KEYS: &[&str] = &["a", "b_c", "$d", "e-f", "g1", "_h", "mode", "seed", "X"];

struct Gen {
    rng: fastrand::Rng,
}

impl Gen {
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.rng.usize(..from.len())]
    }

    fn string(&mut self) -> String {
        let n = self.rng.usize(0..5);
        (0..n).map(|_| self.pick(PIECES)).collect()
    }

    fn float(&mut self) -> f64 {
        match self.rng.u8(0..10) {
            0 => [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN][self.rng.usize(..5)],
            1 => [1e300, 1e-300, 1e16, 1e-5, 123456789.125][self.rng.usize(..5)],
            _ => {
                let mantissa = self.rng.f64() * 2000.0 - 1000.0;
                mantissa * 10f64.powi(self.rng.i32(-8..8))
            }
        }
    }

    fn value(&mut self, depth: u32) -> Node {
        let kinds = if depth >= 3 { 6 } else { 8 };
        match self.rng.u8(0..kinds) {
            0 | 1 => Node::str(self.string()),
            2 => Node::int(match self.rng.u8(0..6) {
                0 => [0, -1, i64::MAX, i64::MIN][self.rng.usize(..4)],
                _ => self.rng.i64(-100_000..100_000),
            }),
            3 => float(self.float()),
            4 => Node::bool(self.rng.bool()),
            5 => Node::null(),
            6 => Node::list(
                (0..self.rng.usize(0..4))
                    .map(|_| self.value(depth + 1))
                    .collect(),
            ),
            // Directly under a run key a mapping is flattened into keys: only `{}` there.
            _ if depth == 0 => map(vec![]),
            _ => {
                let mut m = Map::new();
                for _ in 0..self.rng.usize(0..4) {
                    let k = self.pick(DICT_KEYS).to_string();
                    m.insert(k, self.value(depth + 1));
                }
                Node::from_map(m)
            }
        }
    }

    /// A `run:`/`prepare:` mapping: valid keys, nested mappings, any values.
    fn run(&mut self, depth: u32) -> Node {
        let mut m = Map::new();
        for _ in 0..self.rng.usize(1..5) {
            let k = self.pick(RUN_KEYS).to_string();
            let v = if depth < 2 && self.rng.u8(0..4) == 0 {
                self.run(depth + 1)
            } else {
                self.value(0)
            };
            m.insert(k, v);
        }
        Node::from_map(m)
    }
}

#[test]
fn every_rendered_run_argument_reads_back_through_hydra_and_omegaconf() {
    let Some(py) = python() else { return };
    let seed = std::env::var("NRL_HYDRA_ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x5eed_0013);
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(seed),
    };
    let mut runs = fixed_cases();
    runs.extend((0..1500).map(|_| g.run(0)));
    let mut cases: Vec<(String, String)> = Vec::new();
    let mut expected: Vec<Json> = Vec::new();
    for run in &runs {
        let words =
            run_words(run).unwrap_or_else(|d| panic!("{run} does not render: {}", d.message));
        for w in words {
            cases.push((w.key, w.token));
            expected.push(enc(w.value));
        }
    }
    let answers = oracle(&py, &cases);
    let mut failures = Vec::new();
    for (((key, token), want), got) in cases.iter().zip(&expected).zip(&answers) {
        if got.get("value") != Some(want) {
            failures.push(format!(
                "  {token}  (key {key})\n    want {want}\n    got  {got}"
            ));
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "hydra oracle: {} words from {} run mappings, seed {seed}, {} mismatches",
        cases.len(),
        runs.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} words read back differently (seed {seed}):\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(cases.len() > 3000, "only {} cases", cases.len());
}

/// Keys Hydra cannot express are refused when the Job is rendered, at the key.
#[test]
fn run_keys_hydra_cannot_express_are_refused() {
    for (key, why) in [
        ("1st", "starts with a digit"),
        ("a b", "contains a space"),
        ("a.b", "contains a dot"),
        ("tít", "contains `í`"),
    ] {
        let run = map(vec![(key, Node::int(1))]);
        let err = run_words(&run)
            .err()
            .unwrap_or_else(|| panic!("{key} accepted"));
        assert_eq!(err.code, super::hydra_args::KEY_CODE);
        assert!(err.message.contains(why), "{key}: {}", err.message);
    }
    let nested = map(vec![("ok", map(vec![("2x", Node::int(1))]))]);
    let err = run_words(&nested).err().expect("refused");
    assert!(err.message.contains("+ok.2x="), "{}", err.message);
    let in_list = map(vec![(
        "d",
        Node::list(vec![map(vec![("1", Node::int(1))])]),
    )]);
    let err = run_words(&in_list).err().expect("refused");
    assert_eq!(err.code, super::hydra_args::VALUE_CODE);
}

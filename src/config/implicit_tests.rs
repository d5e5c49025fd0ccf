//! Each scanner against the regex it replaces: exhaustively over short strings of the
//! characters that matter, and with generated strings shaped like the real thing.

use proptest::prelude::*;
use regex::Regex;

use super::{is_float, is_int, is_pyyaml_implicit};

/// The loader's int regex (both resolvers type ints alike).
const INT: &str = r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$";

/// The loader's float regex: PyYAML's plus OmegaConf's `1e3`, exponent sign optional.
const FLOAT: &str = r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$";

/// PyYAML's `Resolver` regexes as one pattern.
fn pyyaml() -> String {
    let alternatives = [
        "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?",
        r"\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
        r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
        r"[-+]?\.(?:inf|Inf|INF)",
        r"\.(?:nan|NaN|NAN)",
        r"[-+]?0b[0-1_]+",
        r"[-+]?0[0-7_]+",
        r"[-+]?(?:0|[1-9][0-9_]*)",
        r"[-+]?0x[0-9a-fA-F_]+",
        r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        "<<|~|null|Null|NULL|",
        "=|!|&|\\*",
        "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
    ];
    format!("^(?:{})$", alternatives.join("|"))
}

struct Oracle {
    int: Regex,
    float: Regex,
    pyyaml: Regex,
}

impl Oracle {
    fn new() -> Oracle {
        Oracle {
            int: Regex::new(INT).expect("int regex"),
            float: Regex::new(FLOAT).expect("float regex"),
            pyyaml: Regex::new(&pyyaml()).expect("pyyaml regex"),
        }
    }

    fn agrees(&self, s: &str) -> std::result::Result<(), String> {
        let pairs = [
            ("int", is_int(s), self.int.is_match(s)),
            ("float", is_float(s), self.float.is_match(s)),
            ("pyyaml", is_pyyaml_implicit(s), self.pyyaml.is_match(s)),
        ];
        for (what, scanned, re) in pairs {
            if scanned != re {
                return Err(format!("{what} {s:?}: scanner {scanned}, regex {re}"));
            }
        }
        Ok(())
    }
}

#[test]
fn every_short_string_of_the_relevant_characters() {
    let oracle = Oracle::new();
    let alphabet: Vec<char> = "0157_.:-+eEbxZTa ".chars().collect();
    let mut strings = vec![String::new()];
    let mut frontier = strings.clone();
    for _ in 0..4 {
        frontier = frontier
            .iter()
            .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
            .collect();
        strings.extend(frontier.iter().cloned());
    }
    for s in &strings {
        if let Err(e) = oracle.agrees(s) {
            panic!("{e}");
        }
    }
}

#[test]
fn words_and_known_shapes() {
    let oracle = Oracle::new();
    for s in [
        "yes",
        "No",
        "ON",
        "off",
        "null",
        "~",
        "<<",
        "=",
        "!",
        "&",
        "*",
        "",
        ".inf",
        "-.Inf",
        "+.INF",
        ".nan",
        "-.nan",
        ".NaN",
        "0b1010",
        "-0b_1",
        "0o17",
        "017",
        "0x1F",
        "0X1F",
        "190:20:30",
        "1:60",
        "1:5:9",
        "1_000",
        "1e3",
        "1E+3",
        "1.0e-3",
        "1.5",
        "6.8523015e+5",
        "685.230_15e+03",
        "190:20:30.15",
        ".5",
        "._5",
        "1.",
        "1.e5",
        "5e",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2001-12-15T02:59:43.1Z",
        "2002-12-14",
        "2001-1-1 1:00:00",
        "2001-12-14\t21:59:43 Z",
        "2001-12-14 21:59:43.",
        "2001-12-14 21:59:43 +5:3",
        "2001-12-1",
        "64Gi",
        "500m",
        "1.5.0",
        "3.10",
        "v1",
        "-c",
        "0.0.0.0",
        "1_2:3",
        "+",
        "-",
        ".",
        "-.",
        "0x",
        "0b",
        "12:34:56:78",
    ] {
        if let Err(e) = oracle.agrees(s) {
            panic!("{e}");
        }
    }
}

fn shaped() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+]?[0-9_]{0,4}(\\.[0-9_]{0,3})?([eE][-+]?[0-9]{0,2})?",
        "[-+]?[0-9]{1,3}(:[0-9]{1,3}){0,3}(\\.[0-9_]{0,2})?",
        "[-+]?0[bxo]?[0-9a-fA-F_]{0,4}",
        "[-+]?\\.(inf|Inf|INF|nan|NaN|NAN|nAn|in)",
        "[0-9]{3,5}-[0-9]{1,3}-[0-9]{1,3}([Tt]|[ \t]{0,2})?([0-9]{1,3}:[0-9]{1,2}:[0-9]{1,3})?(\\.[0-9]{0,3})?[ \t]{0,2}(Z|[-+][0-9]{1,3}(:[0-9]{1,3})?)?",
        "[-+0-9_.:eE ]{0,10}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn scanners_match_their_regexes(s in shaped()) {
        let oracle = Oracle::new();
        if let Err(e) = oracle.agrees(&s) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// `resolve_plain` skips both scanners for text that cannot start a number.
#[test]
fn numbers_start_with_a_digit_a_sign_or_a_dot() {
    let oracle = Oracle::new();
    for c in (0u8..128).map(char::from) {
        let s = format!("{c}1");
        let numeric = matches!(c, '0'..='9' | '+' | '-' | '.');
        if !numeric {
            assert!(!is_int(&s) && !is_float(&s), "{s:?}");
            assert!(
                !oracle.int.is_match(&s) && !oracle.float.is_match(&s),
                "{s:?}"
            );
        }
    }
}

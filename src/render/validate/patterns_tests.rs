//! Each scanner against the regex it stands for: exhaustively over short strings of the
//! characters that matter, on known values, and with generated strings shaped like them.

use std::sync::LazyLock;

use proptest::prelude::*;
use regex::Regex;

use super::{CONDITION_REASON, QUALIFIED_NAME, QUANTITY, scanner};
use crate::render::validate::schema::{PATTERN_COUNT, pattern_source};

const ALL: [&str; 3] = [QUANTITY, CONDITION_REASON, QUALIFIED_NAME];

fn agree(source: &str, re: &Regex, s: &str) -> std::result::Result<(), String> {
    let scan = scanner(source).ok_or_else(|| format!("no scanner for {source}"))?;
    let (scanned, matched) = (scan(s), re.is_match(s));
    if scanned == matched {
        Ok(())
    } else {
        Err(format!(
            "{source} on {s:?}: scanner {scanned}, regex {matched}"
        ))
    }
}

/// Each pattern with its regex, compiled once for all the cases.
fn regexes() -> &'static [(&'static str, Regex)] {
    static REGEXES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
        ALL.iter()
            .map(|s| (*s, Regex::new(s).expect("pattern compiles")))
            .collect()
    });
    &REGEXES
}

#[test]
fn every_bundled_pattern_has_a_scanner() {
    for id in 0..PATTERN_COUNT {
        let source = pattern_source(id as u16).expect("bundled pattern");
        assert!(
            ALL.contains(&source) && scanner(source).is_some(),
            "bundled pattern {source} has no scanner: nrl check would compile a regex"
        );
    }
    assert!(scanner("^a+$").is_none());
}

/// Every string of `alphabet` up to `max_len` characters.
fn strings(alphabet: &str, max_len: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut frontier = all.clone();
    for _ in 0..max_len {
        frontier = frontier
            .iter()
            .flat_map(|s| alphabet.chars().map(move |c| format!("{s}{c}")))
            .collect();
        all.extend(frontier.iter().cloned());
    }
    all
}

#[test]
fn every_short_string_of_the_relevant_characters() {
    // Per pattern, the characters that matter to it plus one that never does.
    let cases = [
        (QUANTITY, "09.+-eEKimM~", 5),
        (CONDITION_REASON, "aZ0_,:-", 5),
        (QUALIFIED_NAME, "aA0-._/", 6),
    ];
    for (source, re) in regexes() {
        let (_, alphabet, max_len) = cases
            .iter()
            .find(|(s, _, _)| s == source)
            .expect("an alphabet per pattern");
        for s in strings(alphabet, *max_len) {
            if let Err(e) = agree(source, re, &s) {
                panic!("{e}");
            }
        }
    }
}

#[test]
fn known_values() {
    let values = [
        "4",
        "500m",
        "64Gi",
        "1.5",
        "+1",
        "-.5",
        "1e3",
        "1E",
        "1Ei",
        "1e",
        "1E+3",
        "1.e-2",
        "1.5.",
        "64 Gi",
        "0.5Ki",
        "Gi",
        "",
        ".",
        "1ki",
        "12Mi ",
        "\u{0661}",
        "Ready",
        "Ready:True",
        "a,b",
        "a,",
        "_a",
        "x_",
        "nvidia.com/gpu",
        "example.com/Ready",
        "a.b-c.d/x",
        "-a.com/x",
        "a-.com/x",
        "a..b/x",
        "A.com/x",
        "a/b/c",
        "/x",
        "x/",
        "x.",
        "x-y_z.w",
        "\u{e9}t\u{e9}",
    ];
    for (source, re) in regexes() {
        for s in values {
            if let Err(e) = agree(source, re, s) {
                panic!("{e}");
            }
        }
    }
}

fn shaped() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+]?[0-9]{0,3}(\\.[0-9]{0,2})?([KMGTPEkmnu]i?|[eE][-+]?[0-9.]{0,3})?",
        "[A-Za-z_,:0-9]{0,6}",
        "([a-zA-Z0-9._-]{0,8}/)?[-A-Za-z0-9_.]{0,8}",
        "[-+.0-9eEiKMGa-z/_,:]{0,10}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn scanners_match_their_regexes(s in shaped()) {
        for (source, re) in regexes() {
            if let Err(e) = agree(source, re, &s) {
                prop_assert!(false, "{}", e);
            }
        }
    }
}

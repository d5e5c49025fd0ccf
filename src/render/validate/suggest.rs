//! Did-you-mean suggestions over a set of allowed names.

/// The closest candidate to `given`, when one is close enough to be a likely typo: a
/// case-insensitive match, else the smallest edit distance within about a third of the
/// word (transpositions count once).
pub(super) fn did_you_mean<'c>(
    given: &str,
    candidates: impl Iterator<Item = &'c str>,
) -> Option<&'c str> {
    let lower = given.to_lowercase();
    let mut best: Option<(usize, &'c str)> = None;
    for c in candidates {
        if c.to_lowercase() == lower {
            return Some(c);
        }
        let d = strsim::damerau_levenshtein(&lower, &c.to_lowercase());
        let limit = (given.chars().count().max(c.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Up to `max` names, sorted, and how many more there are.
pub(super) fn list_some<'c>(names: impl Iterator<Item = &'c str>, max: usize) -> String {
    let mut all: Vec<&str> = names.collect();
    all.sort_unstable();
    let shown: Vec<String> = all.iter().take(max).map(|n| format!("`{n}`")).collect();
    let mut s = shown.join(", ");
    if all.len() > max {
        s.push_str(&format!(", ... ({} more)", all.len() - max));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["nodeSelector", "nodeName", "tolerations"];
        assert_eq!(
            did_you_mean("nodeSelecter", names.into_iter()),
            Some("nodeSelector")
        );
        assert_eq!(
            did_you_mean("NODENAME", names.into_iter()),
            Some("nodeName")
        );
        assert_eq!(
            did_you_mean("tolerationz", names.into_iter()),
            Some("tolerations")
        );
        assert_eq!(did_you_mean("image", names.into_iter()), None);
    }

    #[test]
    fn lists_a_few_names() {
        let s = list_some(["c", "a", "b"].into_iter(), 2);
        assert_eq!(s, "`a`, `b`, ... (1 more)");
    }
}

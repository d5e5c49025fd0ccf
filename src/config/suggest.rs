//! "Did you mean …?" suggestions for misspelt keys.

/// The closest candidate to `wanted`, if any is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let wanted_l = wanted.to_lowercase();
    let mut best: Option<(&str, f64)> = None;
    for c in candidates {
        let cl = c.to_lowercase();
        // Same letters ignoring case/underscores/dashes is the strongest signal
        // (`hfCache` vs `hf_cache`).
        let norm = |s: &str| {
            s.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        };
        let score = if norm(&cl) == norm(&wanted_l) {
            1.0
        } else {
            strsim::jaro_winkler(&wanted_l, &cl)
        };
        if score >= 0.8 && best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let keys = ["nodeSelector", "tolerations", "affinity", "hf_cache"];
        assert_eq!(did_you_mean("nodeSelecter", keys), Some("nodeSelector"));
        assert_eq!(did_you_mean("hfCache", keys), Some("hf_cache"));
        assert_eq!(did_you_mean("tolerashuns", keys), Some("tolerations"));
        assert_eq!(did_you_mean("zzz", keys), None);
    }
}

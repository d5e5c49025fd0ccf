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

/// The candidate `wanted` is most plausibly a slip of: one edit away (a character added,
/// dropped, replaced, or two neighbours swapped), or the same letters written in another
/// case or separator style (`maxNumSteps`, `max-num-steps`). Stricter than
/// [`did_you_mean`], for names that may be new on purpose: `max_num_epochs` next to
/// `max_num_steps` is not a slip. A digit for another digit (`stage1`, `stage2`) is not
/// one either, nor an edit of a name of three letters or fewer.
pub fn one_edit_away<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let w = wanted.to_lowercase();
    let w_norm = norm(&w);
    let w_len = w.chars().count();
    let mut edited = None;
    for c in candidates {
        if c == wanted {
            continue;
        }
        // Compared without allocating: most candidates fail both tests at once.
        let same_letters = c
            .chars()
            .filter(|ch| ch.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .eq(w_norm.chars());
        if same_letters {
            return Some(c);
        }
        let c_len = c.chars().count();
        if edited.is_some() || c_len.abs_diff(w_len) > 1 || c_len.min(w_len) <= 3 {
            continue;
        }
        let cl = c.to_lowercase();
        if strsim::osa_distance(&w, &cl) == 1 && !other_name(&w, &cl) {
            edited = Some(c);
        }
    }
    edited
}

/// Letters and digits only, lower-cased by the caller.
fn norm(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).collect()
}

/// One character replaced where that is how names differ on purpose: a digit for a digit
/// (`stage1`, `stage2`), or a word of one letter (`top_k`, `top_p`).
fn other_name(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() != b.len() {
        return false;
    }
    let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) else {
        return false;
    };
    let sep = |c: Option<&char>| c.is_none_or(|c| !c.is_alphanumeric());
    let one_letter_word = sep(i.checked_sub(1).and_then(|j| a.get(j))) && sep(a.get(i + 1));
    (a[i].is_ascii_digit() && b[i].is_ascii_digit()) || one_letter_word
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

    #[test]
    fn one_edit_is_a_slip_a_new_name_is_not() {
        let keys = ["max_num_steps", "val_period", "hf_cache", "stage1", "top_p"];
        let slip = |w: &str| one_edit_away(w, keys);
        assert_eq!(slip("max_num_step"), Some("max_num_steps"));
        assert_eq!(slip("max_num_stepss"), Some("max_num_steps"));
        assert_eq!(slip("max_nmu_steps"), Some("max_num_steps"));
        assert_eq!(slip("val_perios"), Some("val_period"));
        assert_eq!(slip("maxNumSteps"), Some("max_num_steps"));
        assert_eq!(slip("hfCache"), Some("hf_cache"));
        assert_eq!(one_edit_away("Grpo", ["grpo"]), Some("grpo"));
        // New on purpose: far from every key, a digit for a digit, short names.
        assert_eq!(slip("max_num_epochs"), None);
        assert_eq!(slip("val_at_start"), None);
        assert_eq!(slip("stage2"), None);
        assert_eq!(slip("top_k"), None);
        assert_eq!(one_edit_away("lr", ["l1"]), None);
        // The key itself is not a slip of itself.
        assert_eq!(slip("max_num_steps"), None);
    }
}

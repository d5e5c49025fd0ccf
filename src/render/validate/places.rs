//! Several generated places in one line. Segment expansion, per-role clusters and YAML
//! aliases copy one infra line into several rendered places; a problem of that line is
//! reported once, naming them all: `spec.workerGroupSpecs[0..3].minReplica`.

/// `places` in one line, in order, repeats dropped. Places that differ only in their
/// numbers (a list index, `segment-2`) are written once with the numbers compressed
/// (`[0..3]` for 0 to 3, `[0,2,5]`); other places are listed, comma-separated.
pub fn join_places<S: AsRef<str>>(places: &[S]) -> String {
    compress_places(places).join(", ")
}

/// [`join_places`] before the join: one entry for each set of places that compress into
/// one (`spec.workerGroupSpecs[0..3].minReplica`), in order.
pub fn compress_places<S: AsRef<str>>(places: &[S]) -> Vec<String> {
    let mut groups: Vec<Vec<Tokens<'_>>> = Vec::new();
    for p in places {
        let t = tokens(p.as_ref());
        match groups.iter_mut().find(|g| g[0].same_skeleton(&t)) {
            Some(g) => {
                if !g.contains(&t) {
                    g.push(t);
                }
            }
            None => groups.push(vec![t]),
        }
    }
    groups.iter().map(|g| compress(g)).collect()
}

/// A place split into text and the numbers between it: `a[12].b-3` is texts
/// `["a[", "].b-", ""]` and numbers `[12, 3]`.
#[derive(Debug, PartialEq)]
struct Tokens<'a> {
    texts: Vec<&'a str>,
    numbers: Vec<&'a str>,
}

impl Tokens<'_> {
    fn same_skeleton(&self, other: &Tokens<'_>) -> bool {
        self.texts == other.texts
    }
}

fn tokens(s: &str) -> Tokens<'_> {
    let mut texts = Vec::new();
    let mut numbers = Vec::new();
    let b = s.as_bytes();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        if b[i].is_ascii_digit() {
            texts.push(&s[start..i]);
            let from = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            numbers.push(&s[from..i]);
            start = i;
        } else {
            i += 1;
        }
    }
    texts.push(&s[start..]);
    Tokens { texts, numbers }
}

/// One group of places with the same text between their numbers.
fn compress(group: &[Tokens<'_>]) -> String {
    let first = &group[0];
    let varying: Vec<usize> = (0..first.numbers.len())
        .filter(|&k| group.iter().any(|t| t.numbers[k] != first.numbers[k]))
        .collect();
    let values = |k: usize| -> Option<Vec<u64>> {
        group
            .iter()
            // `007` would not survive a round trip through a number.
            .map(|t| {
                let n = t.numbers[k];
                (n.len() == 1 || !n.starts_with('0'))
                    .then(|| n.parse().ok())
                    .flatten()
            })
            .collect()
    };
    let columns: Option<Vec<Vec<u64>>> = varying.iter().map(|&k| values(k)).collect();
    // Several varying numbers compress only when they move together (the index of a
    // segment copy and its `-segment-<i>` suffix); otherwise `[0][1]` and `[1][0]` would
    // read as four places.
    let together = columns.as_ref().is_some_and(|cols| {
        cols.iter().all(|c| {
            c.iter()
                .zip(&cols[0])
                .all(|(a, b)| a.wrapping_sub(*b) == c[0].wrapping_sub(cols[0][0]))
        })
    });
    let (Some(columns), true) = (columns, together) else {
        return group
            .iter()
            .map(Tokens::to_string)
            .collect::<Vec<_>>()
            .join(", ");
    };
    let mut out = String::new();
    for (k, text) in first.texts.iter().enumerate() {
        out.push_str(text);
        if k < first.numbers.len() {
            match varying.iter().position(|&v| v == k) {
                Some(c) => out.push_str(&ranges(&columns[c])),
                None => out.push_str(first.numbers[k]),
            }
        }
    }
    out
}

impl std::fmt::Display for Tokens<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (k, text) in self.texts.iter().enumerate() {
            f.write_str(text)?;
            if let Some(n) = self.numbers.get(k) {
                f.write_str(n)?;
            }
        }
        Ok(())
    }
}

/// `0..3` for a run of three or more, else the numbers: `0..3,5,7`.
fn ranges(values: &[u64]) -> String {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if j - i >= 2 {
            parts.push(format!("{}..{}", v[i], v[j]));
        } else {
            parts.extend(v[i..=j].iter().map(u64::to_string));
        }
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::join_places;

    #[test]
    fn copies_differing_in_an_index_compress_to_a_range() {
        let p: Vec<String> = (0..4)
            .map(|i| format!("spec.workerGroupSpecs[{i}].minReplica"))
            .collect();
        assert_eq!(join_places(&p), "spec.workerGroupSpecs[0..3].minReplica");
        assert_eq!(
            join_places(&["a[0]", "a[2]", "a[3]", "a[4]", "a[7]"]),
            "a[0,2..4,7]"
        );
        assert_eq!(join_places(&["a[0]", "a[1]"]), "a[0,1]");
        assert_eq!(join_places(&["a[0]", "a[0]"]), "a[0]");
    }

    #[test]
    fn numbers_moving_together_compress_others_are_listed() {
        let p: Vec<String> = (0..3)
            .map(|i| format!("workerGroupSpecs[{}] (gpu-segment-{i})", i + 1))
            .collect();
        assert_eq!(join_places(&p), "workerGroupSpecs[1..3] (gpu-segment-0..2)");
        assert_eq!(join_places(&["a[0][1]", "a[1][0]"]), "a[0][1], a[1][0]");
        assert_eq!(
            join_places(&["RayCluster a: spec.x", "RayCluster b: spec.x"]),
            "RayCluster a: spec.x, RayCluster b: spec.x"
        );
        assert_eq!(join_places(&["x-007", "x-008"]), "x-007, x-008");
        assert_eq!(join_places::<&str>(&[]), "");
    }
}

//! JSON paths of rendered values (`spec.workerGroupSpecs[0].template.spec`), kept as a
//! stack of borrowed segments and formatted only when a problem is reported.

use std::fmt;

#[derive(Debug, Clone, Copy)]
pub(super) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

#[derive(Debug, Default)]
pub(super) struct JsonPath<'a> {
    segs: Vec<Seg<'a>>,
}

impl<'a> JsonPath<'a> {
    pub fn push(&mut self, seg: Seg<'a>) {
        self.segs.push(seg);
    }

    pub fn pop(&mut self) {
        self.segs.pop();
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// The innermost mapping key, when the path ends in one.
    pub fn last_key(&self) -> Option<&'a str> {
        match self.segs.last() {
            Some(Seg::Key(k)) => Some(k),
            _ => None,
        }
    }
}

/// Keys that can be written bare after a dot; others (label keys with `/` or `.`) are
/// written `["app.kubernetes.io/name"]`.
fn is_plain(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl fmt::Display for JsonPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.segs.iter().enumerate() {
            match seg {
                Seg::Key(k) if is_plain(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Seg::Key(k) => write!(f, "[{k:?}]")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_keys_indices_and_odd_keys() {
        let mut p = JsonPath::default();
        p.push(Seg::Key("spec"));
        p.push(Seg::Key("workerGroupSpecs"));
        p.push(Seg::Index(0));
        p.push(Seg::Key("template"));
        assert_eq!(p.to_string(), "spec.workerGroupSpecs[0].template");
        p.push(Seg::Key("app.kubernetes.io/name"));
        assert_eq!(
            p.to_string(),
            "spec.workerGroupSpecs[0].template[\"app.kubernetes.io/name\"]"
        );
        assert_eq!(p.last_key(), Some("app.kubernetes.io/name"));
    }
}

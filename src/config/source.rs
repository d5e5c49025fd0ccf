//! Source files and spans.
//!
//! Every configuration value remembers where it came from. A [`Span`] is a small `Copy`
//! handle (source id + byte range); the text itself lives in a process-wide, append-only
//! registry so that spans can travel anywhere (diagnostics, provenance, Rhai handles)
//! without lifetimes. Sources are never removed: a process loads a handful of files.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

/// What kind of input a source is; drives the wording of provenance (`--explain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// The defaults embedded in the binary.
    Shipped,
    /// `$NRL_DEFAULTS` / `~/.config/nrl/defaults.yaml` (or the nrl-k8s compatible paths).
    User,
    /// A `--infra` file or one of its `defaults:` parents.
    Infra,
    /// The recipe or one of its `defaults:` parents.
    Recipe,
    /// A Gym submit config or one of its `defaults:` parents.
    Gym,
    /// A command-line override (`key=value`).
    Override,
    /// Text passed by a script or test.
    Text,
}

impl SourceKind {
    pub fn describe(self) -> &'static str {
        match self {
            SourceKind::Shipped => "shipped defaults",
            SourceKind::User => "user defaults",
            SourceKind::Infra => "infra file",
            SourceKind::Recipe => "recipe",
            SourceKind::Gym => "Gym config",
            SourceKind::Override => "command-line override",
            SourceKind::Text => "text",
        }
    }
}

/// One loaded input text.
#[derive(Debug)]
pub struct SourceFile {
    /// Display name: a path for files, `<override #2>` for CLI arguments.
    pub name: String,
    /// Absolute path for files read from disk.
    pub path: Option<PathBuf>,
    pub text: Arc<str>,
    pub kind: SourceKind,
    /// Byte offset of the start of each line.
    line_starts: Vec<u32>,
}

impl SourceFile {
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts[line_idx] as usize;
        let end = (offset as usize).min(self.text.len());
        let col = self
            .text
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(0);
        (line_idx as u32 + 1, col as u32 + 1)
    }

    /// The full text of the 1-based line `line` (without the line break).
    pub fn line_text(&self, line: u32) -> &str {
        let idx = (line as usize).saturating_sub(1);
        let Some(&start) = self.line_starts.get(idx) else {
            return "";
        };
        let end = self
            .line_starts
            .get(idx + 1)
            .map(|&e| e as usize)
            .unwrap_or(self.text.len());
        self.text[start as usize..end].trim_end_matches(['\n', '\r'])
    }
}

/// Index of a source in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SrcId(pub u32);

/// A byte range in a registered source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    pub src: SrcId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(src: SrcId, start: usize, end: usize) -> Span {
        Span {
            src,
            start: start as u32,
            end: end.max(start) as u32,
        }
    }

    pub fn file(&self) -> Arc<SourceFile> {
        source(self.src)
    }

    /// 1-based (line, column) of the start.
    pub fn line_col(&self) -> (u32, u32) {
        self.file().line_col(self.start)
    }

    /// `path:line:col`, the form editors and terminals make clickable.
    pub fn location(&self) -> String {
        let f = self.file();
        let (l, c) = f.line_col(self.start);
        format!("{}:{}:{}", f.name, l, c)
    }

    /// The spanned text.
    pub fn text(&self) -> String {
        let f = self.file();
        f.text
            .get(self.start as usize..self.end as usize)
            .unwrap_or("")
            .to_string()
    }

    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    pub fn kind(&self) -> SourceKind {
        self.file().kind
    }
}

fn registry() -> &'static RwLock<Vec<Arc<SourceFile>>> {
    static REG: OnceLock<RwLock<Vec<Arc<SourceFile>>>> = OnceLock::new();
    REG.get_or_init(|| RwLock::new(Vec::new()))
}

/// Register a text and get its id.
pub fn add_source(
    name: impl Into<String>,
    path: Option<&Path>,
    text: impl Into<Arc<str>>,
    kind: SourceKind,
) -> SrcId {
    let text: Arc<str> = text.into();
    // `match_indices` on a char searches with memchr, not a byte at a time.
    let line_starts: Vec<u32> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i as u32 + 1))
        .collect();
    let file = Arc::new(SourceFile {
        name: name.into(),
        path: path.map(Path::to_path_buf),
        text,
        kind,
        line_starts,
    });
    // A poisoned lock only means another thread panicked while pushing; the Vec is intact.
    let mut reg = registry().write().unwrap_or_else(|e| e.into_inner());
    reg.push(file);
    SrcId(reg.len() as u32 - 1)
}

/// How many texts are registered: a mark for [`forget_sources_since`].
pub fn source_count() -> usize {
    registry().read().unwrap_or_else(|e| e.into_inner()).len()
}

/// Drop the texts registered since `mark` (a [`source_count`]), for a process that loads
/// many short-lived texts (a fuzz target runs millions), holds nothing that refers to
/// them any more and has no other thread loading texts meanwhile. Ids from before `mark`
/// stay valid; a forgotten id may later name another text, so keep none.
pub fn forget_sources_since(mark: usize) {
    registry()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .truncate(mark);
}

/// Look a source up. Ids only come from [`add_source`], so they are always valid.
pub fn source(id: SrcId) -> Arc<SourceFile> {
    let reg = registry().read().unwrap_or_else(|e| e.into_inner());
    reg.get(id.0 as usize).cloned().unwrap_or_else(|| {
        Arc::new(SourceFile {
            name: "<unknown>".into(),
            path: None,
            text: Arc::from(""),
            kind: SourceKind::Text,
            line_starts: vec![0],
        })
    })
}

/// Register a command-line override so values it sets can point back at it.
pub fn add_override_source(index: usize, text: &str) -> SrcId {
    add_source(
        format!("<override #{}>", index + 1),
        None,
        text,
        SourceKind::Override,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_is_one_based_and_counts_chars() {
        let id = add_source("t.yaml", None, "a: 1\nbé: 2\n", SourceKind::Text);
        let f = source(id);
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(5), (2, 1));
        // 'é' is two bytes; ':' is at byte 8 -> third character.
        assert_eq!(f.line_col(8), (2, 3));
        assert_eq!(f.line_text(2), "bé: 2");
        let sp = Span::new(id, 5, 8);
        assert_eq!(sp.text(), "bé");
        assert_eq!(sp.location(), "t.yaml:2:1");
    }
}

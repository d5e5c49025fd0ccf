//! working_dir packaging: which files go to Ray, under which content-addressed name.
//!
//! An [`UploadSet`] maps archive paths (files at the archive root, `/`-separated) to
//! their sources. It is built from include paths relative to a repo root (the
//! reference's `rayUploadPaths` or its default list), or from one whole directory
//! (`--working-dir`), plus in-memory files such as a staged recipe. The package name is
//! Ray's own SDK name for the same tree (notes §3.4), so `ray job submit` and nrl
//! de-duplicate each other's uploads; the zip is written by [`super::archive`].

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::diag::{Diag, Result};

/// The reference's default upload list (ref §6.2), relative to the repo root.
pub const DEFAULT_UPLOAD_PATHS: &[&str] = &[
    "nemo_rl",
    "examples",
    "infra/examples",
    "tests/check_metrics.py",
    "tests/json_dump_tb_logs.py",
    "3rdparty/Gym-workspace/Gym/nemo_gym",
    "3rdparty/Gym-workspace/Gym/resources_servers",
    "3rdparty/Gym-workspace/Gym/responses_api_models/vllm_model",
    "3rdparty/Gym-workspace/Gym/responses_api_agents/simple_agent",
    "3rdparty/Gym-workspace/Gym/pyproject.toml",
    "3rdparty/Gym-workspace/Gym/uv.lock",
    "3rdparty/Megatron-Bridge-workspace/Megatron-Bridge/3rdparty/Megatron-LM/megatron",
];

/// Ray's documented working_dir package limit (100 MiB).
pub const RAY_PACKAGE_LIMIT: u64 = 100 * 1024 * 1024;

/// Entry names left out at every level below an included directory. `.gitignore` goes
/// because Ray's packager would otherwise honour it and silently drop data files.
const IGNORED_NAMES: &[&str] = &[
    ".gitignore",
    "__pycache__",
    ".venv",
    ".git",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
];
const IGNORED_SUFFIXES: &[&str] = &[".pyc", ".pyo", ".egg-info"];

/// Error code for include paths that cannot be used.
pub const CODE_UPLOAD_PATH: &str = "nrl::ray::upload_path";
/// Error code for a package over the size limit.
pub const CODE_TOO_LARGE: &str = "nrl::ray::package_too_large";
/// Error code for files that cannot be read while packaging.
pub const CODE_PACKAGE: &str = "nrl::ray::package";
/// Error code for a set that cannot be written out into a directory.
pub const CODE_MATERIALIZE: &str = "nrl::ray::materialize";

/// Whether a directory entry is left out (basename match, case-sensitive).
pub fn is_ignored(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    IGNORED_NAMES.contains(&name) || IGNORED_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// One thing in the archive.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// A file read from disk when hashing and zipping.
    File {
        source: PathBuf,
        size: u64,
        mode: u32,
    },
    /// Contents given in memory (a staged recipe).
    Inline(Vec<u8>),
    /// A directory (listed so empty ones survive and the name matches Ray's).
    Dir,
}

/// The files that make up a working_dir package, keyed by archive path.
#[derive(Debug, Clone, Default)]
pub struct UploadSet {
    entries: BTreeMap<String, Entry>,
}

impl UploadSet {
    pub fn new() -> UploadSet {
        UploadSet::default()
    }

    /// `include` paths (relative to `repo_root`) in order; missing ones are skipped.
    /// Overlapping paths (`examples` and `examples/configs`) are fine.
    pub fn from_include_paths<S: AsRef<str>>(repo_root: &Path, include: &[S]) -> Result<UploadSet> {
        let mut set = UploadSet::new();
        for rel in include {
            set.add_include_path(repo_root, rel.as_ref())?;
        }
        Ok(set)
    }

    /// Everything under `dir` (ignore rules applied), at the archive root.
    pub fn from_directory(dir: &Path) -> Result<UploadSet> {
        let meta = fs::metadata(dir).map_err(|e| {
            Diag::new(
                "nrl::ray::working_dir",
                format!("working_dir `{}` cannot be read: {e}", dir.display()),
            )
            .help("pass an existing directory")
        })?;
        if !meta.is_dir() {
            return Err(Diag::new(
                "nrl::ray::working_dir",
                format!("working_dir `{}` is not a directory", dir.display()),
            )
            .help("pass the directory whose contents the job should run in"));
        }
        let mut set = UploadSet::new();
        set.walk_dir(dir, "", &mut Vec::new())?;
        Ok(set)
    }

    /// Add `repo_root/rel`. Returns `false` when it does not exist (skipped, as the
    /// reference does for optional paths). `..` and absolute paths are refused.
    pub fn add_include_path(&mut self, repo_root: &Path, rel: &str) -> Result<bool> {
        let key = archive_key(rel)?;
        let source = repo_root.join(&key);
        let meta = match fs::metadata(&source) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::debug!(path = %source.display(), "upload path missing; skipped");
                return Ok(false);
            }
            Err(e) => return Err(read_error(&source, &e)),
        };
        if meta.is_dir() {
            self.walk_dir(&source, &key, &mut Vec::new())?;
        } else {
            // An explicitly listed file is taken even if its name would be ignored.
            self.insert(key, file_entry(&source, &meta))?;
        }
        Ok(true)
    }

    /// Add a file from memory at `rel` (usually the archive root), replacing a file of
    /// the same name taken from disk.
    pub fn add_file_contents(&mut self, rel: &str, contents: impl Into<Vec<u8>>) -> Result<()> {
        let key = archive_key(rel)?;
        self.insert(key, Entry::Inline(contents.into()))
    }

    /// The set without the entry at `rel` (the staged recipe, to name the code alone).
    pub fn without(&self, rel: &str) -> UploadSet {
        let mut entries = self.entries.clone();
        entries.remove(rel);
        UploadSet { entries }
    }

    /// Files in the set: archive path and size.
    pub fn files(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries.iter().filter_map(|(k, e)| match e {
            Entry::File { size, .. } => Some((k.as_str(), *size)),
            Entry::Inline(bytes) => Some((k.as_str(), bytes.len() as u64)),
            Entry::Dir => None,
        })
    }

    pub fn file_count(&self) -> usize {
        self.files().count()
    }

    /// Sum of the file sizes (what an uncompressed archive holds).
    pub fn total_bytes(&self) -> u64 {
        self.files().map(|(_, size)| size).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn entries(&self) -> &BTreeMap<String, Entry> {
        &self.entries
    }

    /// Refuse a set whose files exceed `limit` bytes, naming the largest files. Checked
    /// on the uncompressed sizes (Ray's SDK stores files uncompressed), before any
    /// archive is written or anything is sent.
    pub fn check_size(&self, limit: u64) -> Result<()> {
        let total = self.total_bytes();
        if total <= limit {
            return Ok(());
        }
        let mut largest: Vec<(&str, u64)> = self.files().collect();
        largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut diag = Diag::new(
            CODE_TOO_LARGE,
            format!(
                "the working_dir package would be {} ({} files), over Ray's limit of {}",
                mib(total),
                self.file_count(),
                mib(limit)
            ),
        )
        .help(
            "leave the large files out (narrow infra.launch.rayUploadPaths or --working-dir), \
             or put data on shared storage and read it from there",
        );
        for (path, size) in largest.iter().take(5) {
            diag = diag.note(format!("{} {path}", mib(*size)));
        }
        Err(diag)
    }

    /// Ray's SDK name for this tree: `gcs://_ray_pkg_<16 hex>.zip`, where the hex is the
    /// XOR of the first 8 bytes of `sha1(relative path [+ file bytes])` over the root
    /// (`.`), every directory and every file, starting from ASCII `"00000000"`.
    /// Order-independent; reads every file once.
    pub fn package_uri(&self) -> Result<String> {
        let mut acc = *b"00000000";
        xor_into(&mut acc, &Sha1::digest(b"."));
        // The XOR does not depend on order, so entries are hashed on every core: each
        // worker takes the next entry and folds its digests into an accumulator of its own.
        let entries: Vec<(&String, &Entry)> = self.entries.iter().collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(entries.len().max(1));
        let hash_some = || -> Result<[u8; 8]> {
            let mut acc = [0u8; 8];
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((key, entry)) = entries.get(i) else {
                    return Ok(acc);
                };
                let mut hasher = Sha1::new();
                hasher.update(key.as_bytes());
                match entry {
                    Entry::Dir => {}
                    Entry::Inline(bytes) => hasher.update(bytes),
                    Entry::File { source, .. } => {
                        let mut file =
                            fs::File::open(source).map_err(|e| read_error(source, &e))?;
                        loop {
                            let n = file.read(&mut buf).map_err(|e| read_error(source, &e))?;
                            if n == 0 {
                                break;
                            }
                            hasher.update(&buf[..n]);
                        }
                    }
                }
                xor_into(&mut acc, &hasher.finalize());
            }
        };
        let parts: Vec<Result<[u8; 8]>> = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..workers).map(|_| scope.spawn(hash_some)).collect();
            let mut parts = vec![hash_some()];
            parts.extend(helpers.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Diag::new(CODE_PACKAGE, "a hashing thread panicked")))
            }));
            parts
        });
        for part in parts {
            xor_into(&mut acc, &part?);
        }
        let hex: String = acc.iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("gcs://_ray_pkg_{hex}.zip"))
    }

    /// Write the set into `dest` as Ray unpacks a working_dir: the archive root is
    /// `dest`, directories (empty ones too) are created, files keep their permission
    /// bits, in-memory files are written as given. `dest` is created if missing; files
    /// already there with the same names are replaced. Returns the bytes written.
    pub fn materialize(&self, dest: &Path) -> Result<u64> {
        let write_error = |path: &Path, e: &std::io::Error| {
            Diag::new(
                CODE_MATERIALIZE,
                format!("cannot write `{}`: {e}", path.display()),
            )
            .help("check free space and permissions of the run directory")
        };
        fs::create_dir_all(dest).map_err(|e| write_error(dest, &e))?;
        let mut written = 0u64;
        // BTreeMap order puts every directory before its contents.
        for (key, entry) in &self.entries {
            let target = dest.join(key);
            match entry {
                Entry::Dir => fs::create_dir_all(&target).map_err(|e| write_error(&target, &e))?,
                Entry::Inline(bytes) => {
                    fs::write(&target, bytes).map_err(|e| write_error(&target, &e))?;
                    written += bytes.len() as u64;
                }
                Entry::File { source, mode, .. } => {
                    // `fs::copy` uses copy_file_range (reflinks where the filesystem can).
                    written += fs::copy(source, &target).map_err(|e| read_error(source, &e))?;
                    set_mode(&target, *mode).map_err(|e| write_error(&target, &e))?;
                }
            }
        }
        Ok(written)
    }

    fn insert(&mut self, key: String, entry: Entry) -> Result<()> {
        // Every ancestor is a directory of the archive.
        let mut end = 0;
        while let Some(pos) = key[end..].find('/') {
            let dir = &key[..end + pos];
            if let Some(existing) = self.entries.get(dir)
                && *existing != Entry::Dir
            {
                return Err(conflict(dir));
            }
            self.entries.insert(dir.to_string(), Entry::Dir);
            end += pos + 1;
        }
        match (self.entries.get(&key), &entry) {
            (None, _) | (Some(Entry::Dir), Entry::Dir) => {}
            (Some(Entry::Dir), _) | (Some(_), Entry::Dir) => return Err(conflict(&key)),
            // Same file from overlapping include paths, or an in-memory file replacing
            // a file from disk.
            (Some(_), _) => {}
        }
        self.entries.insert(key, entry);
        Ok(())
    }

    /// Add `dir` as `key` and walk it. `stack` holds the canonical directories being
    /// walked, to stop at symlink loops.
    fn walk_dir(&mut self, dir: &Path, key: &str, stack: &mut Vec<PathBuf>) -> Result<()> {
        let canonical = fs::canonicalize(dir).map_err(|e| read_error(dir, &e))?;
        if stack.contains(&canonical) {
            return Err(Diag::new(
                CODE_UPLOAD_PATH,
                format!("symlink loop at `{}`", dir.display()),
            )
            .help("remove the link, or leave its directory out of the upload paths"));
        }
        if !key.is_empty() {
            self.insert(key.to_string(), Entry::Dir)?;
        }
        let mut children: Vec<fs::DirEntry> = fs::read_dir(dir)
            .map_err(|e| read_error(dir, &e))?
            .collect::<std::io::Result<_>>()
            .map_err(|e| read_error(dir, &e))?;
        children.sort_by_key(|c| c.file_name());
        stack.push(canonical);
        for child in children {
            let name = child.file_name();
            if is_ignored(&name) {
                continue;
            }
            let path = child.path();
            let Some(name) = name.to_str() else {
                return Err(Diag::new(
                    CODE_PACKAGE,
                    format!("`{}` has a name that is not UTF-8", path.display()),
                )
                .help("rename it, or leave it out of the upload"));
            };
            let child_key = if key.is_empty() {
                name.to_string()
            } else {
                format!("{key}/{name}")
            };
            // Follows symlinks, like the reference's copy and Ray's packager.
            let meta = match fs::metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tracing::warn!(path = %path.display(), "broken symlink left out of the upload");
                    continue;
                }
                Err(e) => return Err(read_error(&path, &e)),
            };
            if meta.is_dir() {
                self.walk_dir(&path, &child_key, stack)?;
            } else if meta.is_file() {
                self.insert(child_key, file_entry(&path, &meta))?;
            }
            // Sockets, FIFOs and devices are not files a job can use; skip them.
        }
        stack.pop();
        Ok(())
    }
}

/// `a/./b/` → `a/b`; refuses absolute paths, `..`, and paths naming the root itself.
fn archive_key(rel: &str) -> Result<String> {
    let bad = |why: &str| {
        Diag::new(
            CODE_UPLOAD_PATH,
            format!("upload path `{rel}` {why}"),
        )
        .help("upload paths are relative to the repo root and stay inside it, e.g. `nemo_rl` or `examples/configs`")
    };
    let mut parts = Vec::new();
    for component in Path::new(rel).components() {
        match component {
            Component::Normal(part) => match part.to_str() {
                Some(s) => parts.push(s),
                None => return Err(bad("is not UTF-8")),
            },
            Component::CurDir => {}
            Component::ParentDir => return Err(bad("leaves the repo root (`..`)")),
            Component::RootDir | Component::Prefix(_) => return Err(bad("is absolute")),
        }
    }
    if parts.is_empty() {
        return Err(bad(
            "names the repo root itself; use --working-dir to upload a whole directory",
        ));
    }
    Ok(parts.join("/"))
}

fn file_entry(source: &Path, meta: &fs::Metadata) -> Entry {
    #[cfg(unix)]
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777;
    #[cfg(not(unix))]
    let mode = 0o644;
    Entry::File {
        source: source.to_path_buf(),
        size: meta.len(),
        mode,
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

fn conflict(key: &str) -> Diag {
    Diag::new(
        CODE_UPLOAD_PATH,
        format!("`{key}` is both a file and a directory in the upload"),
    )
    .help("rename the in-memory file or the directory so the names do not clash")
}

pub(crate) fn read_error(path: &Path, e: &std::io::Error) -> Diag {
    Diag::new(
        CODE_PACKAGE,
        format!("cannot read `{}`: {e}", path.display()),
    )
    .help("check the file's permissions, or leave it out of the upload")
}

fn xor_into(acc: &mut [u8; 8], digest: &[u8]) {
    for (a, d) in acc.iter_mut().zip(digest) {
        *a ^= d;
    }
}

/// `12.34 MiB`.
pub fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
#[path = "package_tests.rs"]
mod tests;

//! Tests of working_dir packaging: the reference's staging cases (ref §7.5), the fixes to
//! it, the size limit, and Ray-compatible package names.

use std::fs;
use std::path::Path;

use super::*;

fn write(root: &Path, rel: &str, contents: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, contents).unwrap();
}

/// The reference's fake repo (ref §7 fixture conventions).
fn fake_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "nemo_rl/mod.py", "X = 1\n");
    write(root, "nemo_rl/.gitignore", "data.jsonl\n");
    write(root, "nemo_rl/data.jsonl", "data\n");
    write(root, "nemo_rl/__pycache__/mod.cpython.pyc", "bytecode");
    write(root, "examples/run.py", "print('run')\n");
    write(root, "tests/check_metrics.py", "check\n");
    dir
}

fn paths(set: &UploadSet) -> Vec<&str> {
    set.files().map(|(p, _)| p).collect()
}

// ref §7.5 #103
#[test]
fn respects_include_paths() {
    let repo = fake_repo();
    let set = UploadSet::from_include_paths(repo.path(), &["nemo_rl"]).unwrap();
    assert!(paths(&set).contains(&"nemo_rl/mod.py"));
    assert!(!paths(&set).iter().any(|p| p.starts_with("examples")));
}

// ref §7.5 #104
#[test]
fn skips_missing_optional_paths() {
    let repo = fake_repo();
    let mut set = UploadSet::new();
    assert!(set.add_include_path(repo.path(), "nemo_rl").unwrap());
    assert!(
        !set.add_include_path(repo.path(), "3rdparty/Gym-workspace/Gym/uv.lock")
            .unwrap()
    );
    assert!(paths(&set).contains(&"nemo_rl/mod.py"));
    assert!(!set.entries().keys().any(|k| k.starts_with("3rdparty")));
}

// ref §7.5 #105
#[test]
fn strips_gitignore_and_pycache() {
    let repo = fake_repo();
    let set = UploadSet::from_include_paths(repo.path(), &["nemo_rl"]).unwrap();
    let keys: Vec<&String> = set.entries().keys().collect();
    assert!(paths(&set).contains(&"nemo_rl/data.jsonl"));
    assert!(!keys.iter().any(|k| k.ends_with(".gitignore")), "{keys:?}");
    assert!(!keys.iter().any(|k| k.contains("__pycache__")), "{keys:?}");
}

// ref §7.5 #106
#[test]
fn writes_extra_files_at_the_root() {
    let repo = fake_repo();
    let mut set = UploadSet::from_include_paths(repo.path(), &["nemo_rl"]).unwrap();
    set.add_file_contents("nrl_k8s_run.yaml", "policy:\n  x: 1\n")
        .unwrap();
    match set.entries().get("nrl_k8s_run.yaml") {
        Some(Entry::Inline(bytes)) => {
            assert!(String::from_utf8_lossy(bytes).contains("policy:"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

// ref §7.5 #107
#[test]
fn single_file_include_copies_file() {
    let repo = fake_repo();
    let set = UploadSet::from_include_paths(repo.path(), &["tests/check_metrics.py"]).unwrap();
    assert_eq!(paths(&set), ["tests/check_metrics.py"]);
}

#[test]
fn ignore_rules_apply_at_every_level_but_not_to_explicit_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for rel in [
        "pkg/a.py",
        "pkg/a.pyc",
        "pkg/a.pyo",
        "pkg/.git/HEAD",
        "pkg/.venv/bin/python",
        "pkg/deep/.mypy_cache/x",
        "pkg/deep/.pytest_cache/x",
        "pkg/deep/.ruff_cache/x",
        "pkg/deep/nrl.egg-info/PKG-INFO",
        "pkg/deep/keep.txt",
        "pkg/.rayignore",
        "solo.pyc",
    ] {
        write(root, rel, "x");
    }
    let set = UploadSet::from_include_paths(root, &["pkg", "solo.pyc"]).unwrap();
    assert_eq!(
        paths(&set),
        [
            "pkg/.rayignore",
            "pkg/a.py",
            "pkg/deep/keep.txt",
            "solo.pyc"
        ]
    );
}

/// The reference crashed with "file exists" on these; nrl merges them.
#[test]
fn overlapping_include_paths_are_deduplicated() {
    let repo = fake_repo();
    write(repo.path(), "examples/configs/a.yaml", "a: 1\n");
    let set = UploadSet::from_include_paths(
        repo.path(),
        &[
            "examples",
            "examples/configs",
            "tests/check_metrics.py",
            "tests",
            "./examples/",
        ],
    )
    .unwrap();
    assert_eq!(
        paths(&set),
        [
            "examples/configs/a.yaml",
            "examples/run.py",
            "tests/check_metrics.py"
        ]
    );
}

#[test]
fn escaping_or_absolute_include_paths_are_refused() {
    let repo = fake_repo();
    for bad in ["../etc", "nemo_rl/../../x", "/etc/passwd", "", "."] {
        let err = UploadSet::from_include_paths(repo.path(), &[bad]).unwrap_err();
        assert_eq!(err.code, CODE_UPLOAD_PATH, "{bad}");
        assert!(err.message.contains(&format!("`{bad}`")), "{}", err.message);
        assert!(err.help.is_some());
    }
}

#[test]
fn extra_file_replaces_disk_file_and_clashes_are_errors() {
    let repo = fake_repo();
    let mut set = UploadSet::from_include_paths(repo.path(), &["examples"]).unwrap();
    set.add_file_contents("examples/run.py", "new").unwrap();
    assert_eq!(
        set.entries().get("examples/run.py"),
        Some(&Entry::Inline(b"new".to_vec()))
    );
    let err = set.add_file_contents("examples", "x").unwrap_err();
    assert_eq!(err.code, CODE_UPLOAD_PATH);
    let err = set
        .add_file_contents("examples/run.py/inner", "x")
        .unwrap_err();
    assert_eq!(err.code, CODE_UPLOAD_PATH);
}

#[cfg(unix)]
#[test]
fn symlinks_are_followed_and_loops_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "real/data.txt", "payload");
    std::os::unix::fs::symlink(root.join("real"), root.join("wd_link")).unwrap();
    std::os::unix::fs::symlink(root.join("nowhere"), root.join("real/broken")).unwrap();
    let set = UploadSet::from_include_paths(root, &["wd_link"]).unwrap();
    assert_eq!(paths(&set), ["wd_link/data.txt"]);

    std::os::unix::fs::symlink(root.join("real"), root.join("real/self")).unwrap();
    let err = UploadSet::from_directory(&root.join("real")).unwrap_err();
    assert_eq!(err.code, CODE_UPLOAD_PATH);
    assert!(err.message.contains("symlink loop"), "{}", err.message);
}

#[test]
fn working_dir_must_be_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "x");
    assert_eq!(
        UploadSet::from_directory(&dir.path().join("f.txt"))
            .unwrap_err()
            .code,
        "nrl::ray::working_dir"
    );
    assert_eq!(
        UploadSet::from_directory(&dir.path().join("missing"))
            .unwrap_err()
            .code,
        "nrl::ray::working_dir"
    );
}

#[test]
fn size_limit_names_the_largest_files() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "small.txt", "x");
    let big = fs::File::create(dir.path().join("model.bin")).unwrap();
    big.set_len(150 * 1024 * 1024).unwrap(); // sparse: no disk used
    let set = UploadSet::from_directory(dir.path()).unwrap();
    assert_eq!(set.total_bytes(), 150 * 1024 * 1024 + 1);
    let err = set.check_size(RAY_PACKAGE_LIMIT).unwrap_err();
    assert_eq!(err.code, CODE_TOO_LARGE);
    assert_eq!(err.exit, crate::diag::Exit::Input);
    assert!(err.message.contains("150.00 MiB"), "{}", err.message);
    assert!(err.message.contains("100.00 MiB"), "{}", err.message);
    assert_eq!(
        err.notes.first().map(String::as_str),
        Some("150.00 MiB model.bin")
    );
    assert!(set.check_size(200 * 1024 * 1024).is_ok());
}

#[test]
fn package_name_matches_rays_sdk() {
    // Expected names computed with Ray 2.60's
    // `ray._private.runtime_env.packaging.get_uri_for_directory` on the same trees.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "main.py", "print('hello from nrl')\n");
    write(root, "data/train.jsonl", "{\"x\": 1}\n");
    fs::create_dir_all(root.join("data/empty")).unwrap();
    write(root, "scripts/run.sh", "#!/bin/sh\necho run\n");
    // Left out by nrl's rules, so they must not change the name.
    write(root, "scripts/__pycache__/run.cpython-311.pyc", "junk");
    write(root, ".gitignore", "data/\n");
    let set = UploadSet::from_directory(root).unwrap();
    assert_eq!(
        set.package_uri().unwrap(),
        "gcs://_ray_pkg_26c8f66428e91fbe.zip"
    );
    let data = UploadSet::from_directory(&root.join("data")).unwrap();
    assert_eq!(
        data.package_uri().unwrap(),
        "gcs://_ray_pkg_430b4d4b2d7c1baf.zip"
    );
}

#[test]
fn include_paths_and_extra_files_hash_like_the_staged_directory() {
    // Ray's name for a directory holding exactly what nrl uploads for the fake repo.
    let repo = fake_repo();
    let mut set =
        UploadSet::from_include_paths(repo.path(), &["nemo_rl", "tests/check_metrics.py"]).unwrap();
    set.add_file_contents("nrl_k8s_run.yaml", "policy:\n  x: 1\n")
        .unwrap();
    assert_eq!(
        set.package_uri().unwrap(),
        "gcs://_ray_pkg_83fcfdba35ed25c1.zip"
    );
}

#[test]
fn package_names_are_content_addressed() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    // Same content written in a different order.
    for (rel, text) in [("x/1.txt", "one"), ("y.txt", "two"), ("x/2.txt", "three")] {
        write(a.path(), rel, text);
    }
    for (rel, text) in [("x/2.txt", "three"), ("y.txt", "two"), ("x/1.txt", "one")] {
        write(b.path(), rel, text);
    }
    let name_a = UploadSet::from_directory(a.path())
        .unwrap()
        .package_uri()
        .unwrap();
    let name_b = UploadSet::from_directory(b.path())
        .unwrap()
        .package_uri()
        .unwrap();
    assert_eq!(name_a, name_b);
    assert!(name_a.starts_with("gcs://_ray_pkg_") && name_a.ends_with(".zip"));
    assert_eq!(name_a.len(), "gcs://_ray_pkg_".len() + 16 + ".zip".len());
    // One changed byte.
    write(b.path(), "x/1.txt", "onE");
    let changed = UploadSet::from_directory(b.path())
        .unwrap()
        .package_uri()
        .unwrap();
    assert_ne!(name_a, changed);
    // A renamed file with the same bytes.
    fs::rename(b.path().join("x/1.txt"), b.path().join("x/3.txt")).unwrap();
    write(b.path(), "x/3.txt", "one");
    let renamed = UploadSet::from_directory(b.path())
        .unwrap()
        .package_uri()
        .unwrap();
    assert_ne!(name_a, renamed);
    // Stable across calls.
    assert_eq!(
        UploadSet::from_directory(a.path())
            .unwrap()
            .package_uri()
            .unwrap(),
        name_a
    );
}

#[test]
fn materialized_directory_has_the_archive_layout() {
    let repo = fake_repo();
    write(repo.path(), "examples/empty/.gitignore", "*\n");
    let script = repo.path().join("examples/run.py");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
    }
    let mut set = UploadSet::from_include_paths(repo.path(), &["nemo_rl", "examples"]).unwrap();
    set.add_file_contents("nrl_run.yaml", "grpo:\n  max_num_steps: 2\n")
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("run");
    let written = set.materialize(&dest).unwrap();
    assert_eq!(written, set.total_bytes());

    let mut found = Vec::new();
    for entry in walk(&dest) {
        found.push(entry);
    }
    found.sort();
    assert_eq!(
        found,
        [
            "examples/",
            "examples/empty/",
            "examples/run.py",
            "nemo_rl/",
            "nemo_rl/data.jsonl",
            "nemo_rl/mod.py",
            "nrl_run.yaml",
        ]
    );
    assert_eq!(
        fs::read_to_string(dest.join("nrl_run.yaml")).unwrap(),
        "grpo:\n  max_num_steps: 2\n"
    );
    assert_eq!(
        fs::read_to_string(dest.join("examples/run.py")).unwrap(),
        "print('run')\n"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dest.join("examples/run.py"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o750);
    }
}

#[test]
fn materialize_reports_unwritable_destinations() {
    let repo = fake_repo();
    let set = UploadSet::from_include_paths(repo.path(), &["nemo_rl"]).unwrap();
    // A file where the destination directory should be.
    let blocker = repo.path().join("tests/check_metrics.py");
    let err = set.materialize(&blocker.join("run")).unwrap_err();
    assert_eq!(err.code, CODE_MATERIALIZE);
}

/// Paths under `root`, `/`-separated, directories with a trailing `/`.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(path);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

//! Writing a command's output file (`check -o`, `gym render -o`): never onto one of the
//! files the output was made from, and only into a directory that exists.

use std::path::{Path, PathBuf};

use crate::diag::{Diag, Result};

/// Write `text` to `path`. Refused: a `path` that is (or links to) one of `inputs` (the
/// recipe, the infra file, any file of their `defaults:` chains), and a `path` whose
/// directory does not exist (it is named, not created).
pub fn write_output(path: &Path, text: &str, inputs: &[PathBuf]) -> Result<()> {
    if let Ok(real) = std::fs::canonicalize(path) {
        let is_input = inputs
            .iter()
            .any(|i| std::fs::canonicalize(i).is_ok_and(|i| i == real));
        if is_input {
            return Err(Diag::new(
                "nrl::io::output_is_input",
                format!(
                    "refusing to write to {}: it is one of the files this output is made from",
                    path.display()
                ),
            )
            .help("choose another -o path; writing there would replace the input"));
        }
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Diag::new(
            "nrl::io::no_directory",
            format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            ),
        )
        .help(format!("create it first (`mkdir -p {}`)", dir.display())));
    }
    std::fs::write(path, text).map_err(|e| {
        Diag::new(
            "nrl::io::write",
            format!("cannot write {}: {e}", path.display()),
        )
        .help("check the directory is writable")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_is_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let infra = d.path().join("infra.yaml");
        std::fs::write(&infra, "namespace: ns\n").unwrap();
        let e =
            write_output(&infra, "kind: RayCluster\n", std::slice::from_ref(&infra)).unwrap_err();
        assert_eq!(e.code, "nrl::io::output_is_input");
        assert_eq!(std::fs::read_to_string(&infra).unwrap(), "namespace: ns\n");
        // Through another spelling of the same path, too.
        let other = d.path().join("./sub/../infra.yaml");
        std::fs::create_dir_all(d.path().join("sub")).unwrap();
        assert!(write_output(&other, "x", std::slice::from_ref(&infra)).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_an_input_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let infra = d.path().join("infra.yaml");
        std::fs::write(&infra, "namespace: ns\n").unwrap();
        let link = d.path().join("out.yaml");
        std::os::unix::fs::symlink(&infra, &link).unwrap();
        assert!(write_output(&link, "x", std::slice::from_ref(&infra)).is_err());
        assert_eq!(std::fs::read_to_string(&infra).unwrap(), "namespace: ns\n");
    }

    #[test]
    fn a_missing_directory_is_named_not_created() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("missing/deeper/out.yaml");
        let e = write_output(&out, "x", &[]).unwrap_err();
        assert_eq!(e.code, "nrl::io::no_directory");
        assert!(!d.path().join("missing").exists());
        let ok = d.path().join("out.yaml");
        write_output(&ok, "x", &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&ok).unwrap(), "x");
    }
}

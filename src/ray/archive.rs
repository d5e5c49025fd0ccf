//! Writing an [`UploadSet`] as the zip Ray unpacks into the job's working directory:
//! files at the archive root, empty directories kept, streamed file by file.

use std::fs;
use std::io::{Read, Seek, Write};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::package::{CODE_PACKAGE, Entry, UploadSet, read_error};
use crate::diag::{Diag, Result};

/// zlib's default level: the best size for source trees at modest CPU, and incompressible
/// files fall back to stored blocks (zlib-rs level 1 never does: it grew random data 5%).
const DEFLATE_LEVEL: i64 = 6;

/// Write `set` as a zip into `out`, calling `on_progress` with the number of source
/// bytes consumed so far. Returns `out`.
pub fn write_zip<W: Write + Seek>(
    set: &UploadSet,
    out: W,
    on_progress: &mut dyn FnMut(u64),
) -> Result<W> {
    let mut zip = ZipWriter::new(out);
    let base = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(DEFLATE_LEVEL));
    let entries = set.entries();
    let mut done = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    for (key, entry) in entries {
        match entry {
            Entry::Dir => {
                let prefix = format!("{key}/");
                let has_children = entries
                    .range(prefix.clone()..)
                    .next()
                    .is_some_and(|(k, _)| k.starts_with(&prefix));
                if !has_children {
                    zip.add_directory(prefix, base.unix_permissions(0o755))
                        .map_err(zip_error)?;
                }
            }
            Entry::Inline(bytes) => {
                zip.start_file(key.as_str(), base.unix_permissions(0o644))
                    .map_err(zip_error)?;
                zip.write_all(bytes).map_err(|e| zip_error(e.into()))?;
                done += bytes.len() as u64;
                on_progress(done);
            }
            Entry::File { source, size, mode } => {
                let options = base
                    .unix_permissions(*mode)
                    .large_file(*size >= u64::from(u32::MAX));
                zip.start_file(key.as_str(), options).map_err(zip_error)?;
                let mut file = fs::File::open(source).map_err(|e| read_error(source, &e))?;
                loop {
                    let n = file.read(&mut buf).map_err(|e| read_error(source, &e))?;
                    if n == 0 {
                        break;
                    }
                    zip.write_all(&buf[..n]).map_err(|e| zip_error(e.into()))?;
                    done += n as u64;
                    on_progress(done);
                }
            }
        }
    }
    zip.finish().map_err(zip_error)
}

fn zip_error(e: zip::result::ZipError) -> Diag {
    let detail = match e {
        zip::result::ZipError::Io(io) => io.to_string(),
        other => other.to_string(),
    };
    Diag::new(
        CODE_PACKAGE,
        format!("cannot write the working_dir archive: {detail}"),
    )
    .help("check free space in the temporary directory (TMPDIR)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn names(bytes: Vec<u8>) -> Vec<String> {
        let zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut names: Vec<String> = zip.file_names().map(|n| n.unwrap().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn files_sit_at_the_root_and_empty_dirs_survive() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/empty")).unwrap();
        std::fs::create_dir_all(dir.path().join("sub-x")).unwrap();
        std::fs::write(dir.path().join("main.py"), "print(1)\n").unwrap();
        std::fs::write(dir.path().join("sub/x.txt"), "x").unwrap();
        std::fs::write(dir.path().join("sub-x/y.txt"), "y").unwrap();
        let mut set = UploadSet::from_directory(dir.path()).unwrap();
        set.add_file_contents("nrl_k8s_run.yaml", "policy:\n  x: 1\n")
            .unwrap();
        let mut last = 0;
        let out = write_zip(&set, Cursor::new(Vec::new()), &mut |n| last = n).unwrap();
        assert_eq!(last, set.total_bytes());
        assert_eq!(
            names(out.into_inner()),
            [
                "main.py",
                "nrl_k8s_run.yaml",
                "sub-x/y.txt",
                "sub/empty/",
                "sub/x.txt"
            ]
        );
    }

    #[test]
    fn incompressible_files_do_not_grow() {
        // Weights and tarballs are common in working dirs; deflate must fall back to
        // stored blocks instead of inflating them (zlib-rs level 1 grows them ~5%).
        let dir = tempfile::tempdir().unwrap();
        let mut rng = fastrand::Rng::with_seed(7);
        let noise: Vec<u8> = (0..512 * 1024).map(|_| rng.u8(..)).collect();
        std::fs::write(dir.path().join("noise.bin"), &noise).unwrap();
        std::fs::write(dir.path().join("code.py"), "print('x')\n".repeat(5000)).unwrap();
        let set = UploadSet::from_directory(dir.path()).unwrap();
        let out = write_zip(&set, Cursor::new(Vec::new()), &mut |_| {}).unwrap();
        let size = out.into_inner().len() as u64;
        assert!(size < noise.len() as u64 + 2048, "{size}");
    }

    #[test]
    fn contents_and_permissions_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let set = UploadSet::from_directory(dir.path()).unwrap();
        let out = write_zip(&set, Cursor::new(Vec::new()), &mut |_| {}).unwrap();
        let mut zip = zip::ZipArchive::new(Cursor::new(out.into_inner())).unwrap();
        let mut file = zip.by_name("run.sh").unwrap();
        #[cfg(unix)]
        assert_eq!(file.unix_mode().map(|m| m & 0o777), Some(0o755));
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "#!/bin/sh\necho hi\n");
    }
}

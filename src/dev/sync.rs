//! Copying local code into the dev pod (the script built-in `dev::sync_code`): the same
//! file selection as a Ray upload ([`UploadSet`]: include paths, `.git`, `__pycache__`,
//! `.venv` and friends left out), zipped in memory and unpacked in the pod by Python
//! through one exec, so nothing but `python3` is needed in the image (no rsync, no tar,
//! no kubectl cp).
//!
//! Files are added or replaced; files deleted locally stay in the pod.

use std::io::Cursor;

use super::lifecycle::{ConnectOptions, ensure_running};
use super::{DevPod, Report};
use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::ray::UploadSet;
use crate::ray::archive::write_zip;
use crate::ray::package::mib;

/// The most a sync copies at once (the archive is held in memory on both sides).
pub const SYNC_LIMIT: u64 = 512 * 1024 * 1024;

/// Unpacks the zip on stdin into `argv[1]`, keeping file modes; prints the file count.
const UNPACK: &str = r#"import io, os, sys, zipfile
dest = sys.argv[1]
z = zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read()))
n = 0
for info in z.infolist():
    path = z.extract(info, dest)
    mode = (info.external_attr >> 16) & 0o7777
    if not info.is_dir():
        n += 1
        if mode:
            os.chmod(path, mode)
print(n)
"#;

/// `sh -c` wrapper: a clear message when the image has no python3.
const RUN_UNPACK: &str = "command -v python3 >/dev/null 2>&1 || { echo 'python3 is not installed in the dev pod' >&2; exit 127; }; exec python3 -c \"$0\" \"$1\"";

/// What a sync copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncOutcome {
    pub files: usize,
    /// Bytes of the files (before compression).
    pub bytes: u64,
    /// The directory in the pod (as given: relative ones are under its working directory).
    pub dest: String,
}

/// Make sure the pod runs (as `connect` does), then copy `set` into `dest` in it.
pub async fn sync(
    k8s: &K8s,
    dev: &DevPod,
    opts: &ConnectOptions,
    set: &UploadSet,
    dest: &str,
    report: &mut dyn Report,
) -> Result<SyncOutcome> {
    if set.is_empty() {
        return Err(
            Diag::new("nrl::dev::sync_empty", "nothing to sync: no files")
                .help("name files or directories that exist under the repository root"),
        );
    }
    set.check_size(SYNC_LIMIT)?;
    let archive = {
        let set = set.clone();
        tokio::task::spawn_blocking(move || {
            write_zip(&set, Cursor::new(Vec::new()), &mut |_| {}).map(Cursor::into_inner)
        })
        .await
        .map_err(|e| Diag::new("nrl::runtime", format!("packaging failed: {e}")))??
    };
    ensure_running(k8s, dev, opts, report).await?;
    report.progress(&format!(
        "syncing {} files ({}) to {}:{dest}",
        set.file_count(),
        mib(set.total_bytes()),
        dev.name
    ));
    let out = k8s
        .exec(
            &dev.namespace,
            &dev.name,
            Some(&dev.container),
            &["sh", "-c", RUN_UNPACK, UNPACK, dest],
            Some(&archive),
        )
        .await?;
    if out.exit_code != 0 {
        let stderr = out.stderr_str();
        let last = stderr.trim().lines().last().unwrap_or("").to_string();
        return Err(Diag::api(
            "nrl::dev::sync_failed",
            format!(
                "unpacking into {}:{dest} failed (exit {}): {last}",
                dev.name, out.exit_code
            ),
        )
        .help("check that the destination is writable in the pod (`dev::connect_run([\"ls\", \"-ld\", DEST])`)"));
    }
    Ok(SyncOutcome {
        files: set.file_count(),
        bytes: set.total_bytes(),
        dest: dest.to_string(),
    })
}

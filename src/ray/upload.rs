//! Getting a working_dir onto the cluster: size check, content-addressed name, skip if
//! Ray already has it, otherwise zip to a temporary file and stream that file as the
//! PUT body (the archive is never held in memory).

use std::io::{IsTerminal, Seek, SeekFrom};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::io::ReaderStream;

use super::archive::write_zip;
use super::client::RayClient;
use super::package::{CODE_PACKAGE, RAY_PACKAGE_LIMIT, UploadSet, mib};
use crate::diag::{Diag, Result};

/// Packaging choices.
#[derive(Debug, Clone)]
pub struct PackageOptions {
    /// Largest package accepted, in bytes (Ray's documented 100 MiB by default).
    pub limit: u64,
    /// Show progress bars on stderr when it is a terminal.
    pub progress: bool,
}

impl Default for PackageOptions {
    fn default() -> Self {
        PackageOptions {
            limit: RAY_PACKAGE_LIMIT,
            progress: true,
        }
    }
}

/// What [`ensure_package`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageUpload {
    /// `gcs://_ray_pkg_<hex>.zip`, ready for `runtime_env.working_dir`.
    pub uri: String,
    /// `false` when the cluster already had this exact package.
    pub uploaded: bool,
    pub files: usize,
    /// Sum of the file sizes.
    pub content_bytes: u64,
    /// Size of the uploaded archive (when uploaded).
    pub archive_bytes: Option<u64>,
}

/// Make sure the cluster behind `client` holds `set` as a package; return its URI.
///
/// Order: size limit (no I/O beyond `stat`), name (reads the files), `GET` (which also
/// pins the package for Ray's temporary-reference window), and only on 404: zip to a
/// temporary file and `PUT` it.
pub async fn ensure_package(
    client: &RayClient,
    set: &UploadSet,
    options: &PackageOptions,
) -> Result<PackageUpload> {
    set.check_size(options.limit)?;
    let set = Arc::new(set.clone());
    let uri = {
        let set = Arc::clone(&set);
        blocking(move || set.package_uri()).await?
    };
    let mut outcome = PackageUpload {
        uri: uri.clone(),
        uploaded: false,
        files: set.file_count(),
        content_bytes: set.total_bytes(),
        archive_bytes: None,
    };
    if client.package_exists(&uri).await? {
        return Ok(outcome);
    }

    let show = options.progress && std::io::stderr().is_terminal();
    let pack_bar = bar(show, set.total_bytes(), "packing  ");
    let (file, size) = {
        let set = Arc::clone(&set);
        let pack_bar = pack_bar.clone();
        blocking(move || {
            let file = tempfile::tempfile().map_err(|e| {
                Diag::new(CODE_PACKAGE, format!("cannot create a temporary file: {e}"))
                    .help("check that TMPDIR exists and is writable")
            })?;
            let mut file = write_zip(&set, file, &mut |n| pack_bar.set_position(n))?;
            let size = file
                .seek(SeekFrom::End(0))
                .and_then(|size| file.seek(SeekFrom::Start(0)).map(|_| size))
                .map_err(|e| {
                    Diag::new(CODE_PACKAGE, format!("cannot read back the archive: {e}"))
                })?;
            Ok((file, size))
        })
        .await?
    };
    pack_bar.finish_and_clear();
    // Deflate can grow incompressible data slightly; the limit is on what is sent.
    if size > options.limit {
        return Err(Diag::new(
            super::package::CODE_TOO_LARGE,
            format!(
                "the working_dir archive is {}, over Ray's limit of {}",
                mib(size),
                mib(options.limit)
            ),
        )
        .help("leave large files out of the upload"));
    }

    let upload_bar = bar(show, size, "uploading");
    let progress = upload_bar.clone();
    let mut sent = 0u64;
    let stream = ReaderStream::with_capacity(tokio::fs::File::from_std(file), 256 * 1024).map(
        move |chunk| {
            if let Ok(bytes) = &chunk {
                sent += bytes.len() as u64;
                progress.set_position(sent);
                if sent == size {
                    // Ray reads the whole body, then stores it in the GCS: say so.
                    progress.set_message("sent, Ray is storing it");
                }
            }
            chunk
        },
    );
    let result = client
        .upload_package(&uri, reqwest::Body::wrap_stream(stream), Some(size))
        .await;
    upload_bar.finish_and_clear();
    result?;
    outcome.uploaded = true;
    outcome.archive_bytes = Some(size);
    Ok(outcome)
}

/// Run file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Diag::new(CODE_PACKAGE, format!("packaging stopped: {e}")))?
}

fn bar(show: bool, len: u64, label: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template = format!(
        "{label} {{bar:24.cyan/blue}} {{binary_bytes}}/{{binary_total_bytes}} {{binary_bytes_per_sec}} {{msg}}"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

//! Getting a working_dir onto the cluster: size check, content-addressed name, skip if
//! Ray already has it, otherwise zip it straight into the PUT body (compression on every
//! core, overlapping the transfer; the archive is never held in memory or on disk).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

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
/// pins the package for Ray's temporary-reference window), and only on 404: `PUT` the
/// zip as it is written.
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
    let upload_bar = bar(show, set.total_bytes(), "uploading");
    // The archive goes straight into the PUT body as it is written: no temporary file,
    // and compression overlaps the transfer. A few chunks of slack keep both sides busy.
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(8);
    let failed = tx.clone();
    let packer = {
        let set = Arc::clone(&set);
        let progress = upload_bar.clone();
        let limit = options.limit;
        blocking(move || {
            let state = Arc::new(BodyState::default());
            let sink = BodyWriter::new(tx, limit, Arc::clone(&state));
            match write_zip(&set, sink, &mut |n| progress.set_position(n)) {
                Ok(sink) => sink.finish(),
                Err(d) => Err(state.explain(d, limit)),
            }
        })
    };
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    let upload = client.upload_package(&uri, reqwest::Body::wrap_stream(body), None);
    let (packed, uploaded) = tokio::join!(
        async {
            let packed = packer.await;
            if let Err(d) = &packed {
                // Abort the request: the server must not store half an archive.
                let _ = failed
                    .send(Err(std::io::Error::other(d.message.clone())))
                    .await;
            }
            drop(failed);
            packed
        },
        upload
    );
    upload_bar.finish_and_clear();
    let size = match (packed, uploaded) {
        (Ok(size), Ok(())) => size,
        // Packaging failed (a file vanished, the archive outgrew the limit): that is the
        // cause, whatever the aborted request reports.
        (Err(d), _) if d.code != CODE_BODY_CLOSED => return Err(d),
        (_, Err(d)) => return Err(d),
        (Err(d), Ok(())) => return Err(d),
    };
    outcome.uploaded = true;
    outcome.archive_bytes = Some(size);
    Ok(outcome)
}

/// The request stopped reading the body (it failed; its error is the one to report).
const CODE_BODY_CLOSED: &str = "nrl::ray::package_body_closed";

/// What stopped the body, if something did: set by [`BodyWriter`], read once
/// packaging has failed, to say why.
#[derive(Default)]
struct BodyState {
    over_limit: std::sync::atomic::AtomicBool,
    closed: std::sync::atomic::AtomicBool,
}

impl BodyState {
    /// The packaging failure `d`, or the reason behind it when the body caused it.
    fn explain(&self, d: Diag, limit: u64) -> Diag {
        use std::sync::atomic::Ordering::Relaxed;
        if self.over_limit.load(Relaxed) {
            return Diag::new(
                super::package::CODE_TOO_LARGE,
                format!(
                    "the working_dir archive is over Ray's limit of {}",
                    mib(limit)
                ),
            )
            .help("leave large files out of the upload");
        }
        if self.closed.load(Relaxed) {
            return Diag::new(CODE_BODY_CLOSED, "the upload request stopped reading");
        }
        d
    }
}

/// The PUT body as a [`std::io::Write`]: bytes go to the request in chunks, counted
/// against the package limit (deflate can grow incompressible data slightly, and the
/// limit is on what is sent).
struct BodyWriter {
    tx: tokio::sync::mpsc::Sender<std::io::Result<bytes::Bytes>>,
    buf: Vec<u8>,
    sent: u64,
    limit: u64,
    state: Arc<BodyState>,
}

/// The size of the chunks handed to the request.
const BODY_CHUNK: usize = 256 * 1024;

impl BodyWriter {
    fn new(
        tx: tokio::sync::mpsc::Sender<std::io::Result<bytes::Bytes>>,
        limit: u64,
        state: Arc<BodyState>,
    ) -> Self {
        BodyWriter {
            tx,
            buf: Vec::with_capacity(BODY_CHUNK),
            sent: 0,
            limit,
            state,
        }
    }

    fn send_buffer(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(BODY_CHUNK));
        self.tx
            .blocking_send(Ok(bytes::Bytes::from(chunk)))
            .map_err(|_| {
                self.state
                    .closed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                std::io::Error::from(std::io::ErrorKind::BrokenPipe)
            })
    }

    /// The archive's size, once the last bytes are handed over.
    fn finish(mut self) -> Result<u64> {
        match self.send_buffer() {
            Ok(()) => Ok(self.sent),
            Err(_) => Err(Diag::new(
                CODE_BODY_CLOSED,
                "the upload request stopped reading",
            )),
        }
    }
}

impl std::io::Write for BodyWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.sent += data.len() as u64;
        if self.sent > self.limit {
            self.state
                .over_limit
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(std::io::Error::other("over the package limit"));
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= BODY_CHUNK {
            self.send_buffer()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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

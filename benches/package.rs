//! working_dir packaging: the 40 MiB case of issue 20 (20 MiB of random bytes, as weights
//! and archives are, plus 21 MiB of source-like text in 40 files), zipped as `nrl job
//! submit` zips it, into a sink, so the figure is packaging alone (hash, then the archive).
//! Before the measurements it prints one run: wall time, archive size, and the ratio to
//! the previous design's single-threaded zip (the `zip` crate, deflate level 6 on every
//! file), built in the same run for comparison.
//!
//! `cargo bench --bench package` (release: the dev profile leaves the deflate crates
//! optimised but not nrl's pipeline).

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use criterion::{Criterion, criterion_group};

#[path = "support/working_dir.rs"]
mod working_dir;
use nrl::ray::archive::write_zip;
use nrl::ray::package::UploadSet;
use working_dir::working_dir;

/// The previous design: the `zip` crate on one thread, deflate level 6 for every file.
fn single_threaded_zip(set: &UploadSet, dir: &Path) -> u64 {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6));
    let mut buf = vec![0u8; 256 * 1024];
    for (name, _) in set.files() {
        zip.start_file(name, options).expect("zip");
        let mut file = std::fs::File::open(dir.join(name)).expect("open");
        loop {
            let n = file.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            zip.write_all(&buf[..n]).expect("zip");
        }
    }
    zip.finish().expect("zip").into_inner().len() as u64
}

fn bench(c: &mut Criterion) {
    let full = std::env::args().any(|a| a == "--bench");
    let mib = if full { 40 } else { 4 };
    let dir = tempfile::tempdir().expect("tempdir");
    working_dir(dir.path(), mib);
    let set = UploadSet::from_directory(dir.path()).expect("set");

    let start = Instant::now();
    set.package_uri().expect("hash");
    let hash = start.elapsed();
    let start = Instant::now();
    let size = write_zip(&set, CountingSink(0), &mut |_| {})
        .expect("zip")
        .0;
    let zip = start.elapsed();
    let start = Instant::now();
    let old_size = single_threaded_zip(&set, dir.path());
    let old = start.elapsed();
    println!(
        "package {mib} MiB: hash {:.0} ms, archive {:.0} ms ({:.1} MiB); single-threaded zip {:.0} ms ({:.1} MiB): {:.1}x",
        hash.as_secs_f64() * 1e3,
        zip.as_secs_f64() * 1e3,
        size as f64 / 1048576.0,
        old.as_secs_f64() * 1e3,
        old_size as f64 / 1048576.0,
        old.as_secs_f64() / zip.as_secs_f64(),
    );
    c.bench_function(&format!("write_zip {mib} MiB working_dir"), |b| {
        b.iter(|| write_zip(&set, CountingSink(0), &mut |_| {}).expect("zip"))
    });
}

/// Counts what the archive would send.
struct CountingSink(u64);

impl Write for CountingSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0 += data.len() as u64;
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}

fn main() {
    benches();
    Criterion::default().final_summary();
}

//! Writing an [`UploadSet`] as the zip Ray unpacks into the job's working directory:
//! files at the archive root, empty directories kept, streamed front to back (so the
//! archive can go straight into the upload) with deflate spread over the cores.
//!
//! One reader thread cuts the files into blocks of [`BLOCK`] bytes, in archive order;
//! worker threads deflate blocks independently (each ends with a sync flush, so the
//! pieces of a file concatenate into one valid deflate stream, as pigz does) and take
//! their CRC-32 (combined per file); this thread writes the blocks back in order. At most
//! [`in_flight`] blocks exist at once, so memory stays bounded whatever the directory's
//! size. Files that would not shrink (known compressed formats, or a first block that
//! deflate at level 1 cannot shrink by a tenth) are stored, not deflated.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};

use flate2::Compression;
use flate2::write::DeflateEncoder;

use super::package::{CODE_PACKAGE, Entry, UploadSet, read_error};
use super::zip_stream::{Method, ZipStream};
use crate::diag::{Diag, Result};

/// deflate's fastest level. The archive goes to a dashboard on loopback or through a
/// port-forward, where compressing is the cost and bytes are cheap: on issue 20's
/// working_dir (21 MiB of source text, 20 MiB random and stored), level 6 took 3.6x the
/// CPU of level 1 for an archive 8% smaller (23.7 MiB instead of 25.9 MiB), and `job
/// submit` went from 2.9x to within 2x of the bare upload's time.
const DEFLATE_LEVEL: u32 = 1;
/// The unit of parallel work: big enough that restarting the deflate window costs
/// little ratio (under 1% on source text), small enough to spread a 20 MiB file.
const BLOCK: usize = 1 << 20;
/// How much of a file's first block is test-compressed to decide stored vs deflated.
const SAMPLE: usize = 64 * 1024;
/// Extensions of formats that are compressed already: stored without trying.
const COMPRESSED_EXTENSIONS: &[&str] = &[
    "zip",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "zst",
    "lz4",
    "7z",
    "whl",
    "jar",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "webp",
    "mp3",
    "mp4",
    "mkv",
    "webm",
    "parquet",
    "safetensors",
    "pt",
    "pth",
    "ckpt",
];

/// What one entry of the archive is, in archive order.
enum Item<'a> {
    Dir(String),
    Inline(&'a str, &'a [u8]),
    File {
        name: &'a str,
        source: &'a PathBuf,
        size: u64,
        mode: u32,
    },
}

/// A piece of one file's data, in archive order (`seq`).
struct Block {
    seq: u64,
    item: usize,
    data: Vec<u8>,
    method: Method,
    first: bool,
    last: bool,
}

/// A block encoded by a worker (or a reader failure, which stops the archive).
struct Encoded {
    seq: u64,
    item: usize,
    bytes: Vec<u8>,
    crc: crc32fast::Hasher,
    raw: u64,
    method: Method,
    first: bool,
    last: bool,
}

enum Done {
    Block(Encoded),
    Failed(Diag),
}

/// Worker threads: the machine's cores, at most 8 (deflate of a working_dir is done
/// long before more would help).
fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Blocks alive at once: one being read, one per worker and a few waiting to be written.
fn in_flight(workers: usize) -> usize {
    2 * workers + 2
}

/// Write `set` as a zip into `out`, calling `on_progress` with the number of source
/// bytes consumed so far. Returns `out`.
pub fn write_zip<W: Write>(set: &UploadSet, out: W, on_progress: &mut dyn FnMut(u64)) -> Result<W> {
    let items = items(set);
    let workers = workers();
    std::thread::scope(|s| {
        let (block_tx, block_rx) = sync_channel::<Block>(workers);
        let block_rx = Arc::new(Mutex::new(block_rx));
        let (done_tx, done_rx) = channel::<Done>();
        // Tickets bound the blocks in flight: the reader takes one per block, the writer
        // gives it back once the block is written.
        let tickets = in_flight(workers);
        let (ticket_tx, ticket_rx) = sync_channel::<()>(tickets);
        for _ in 0..tickets {
            let _ = ticket_tx.send(());
        }
        let reader_done = done_tx.clone();
        let items_ref = &items;
        s.spawn(move || read_blocks(items_ref, &block_tx, &ticket_rx, &reader_done));
        for _ in 0..workers {
            let rx = Arc::clone(&block_rx);
            let tx = done_tx.clone();
            s.spawn(move || encode_blocks(&rx, &tx));
        }
        drop(done_tx);
        write_in_order(&items, out, &done_rx, &ticket_tx, on_progress)
    })
}

fn items(set: &UploadSet) -> Vec<Item<'_>> {
    let entries = set.entries();
    entries
        .iter()
        .filter_map(|(key, entry)| match entry {
            Entry::Dir => {
                let prefix = format!("{key}/");
                let has_children = entries
                    .range(prefix.clone()..)
                    .next()
                    .is_some_and(|(k, _)| k.starts_with(&prefix));
                (!has_children).then_some(Item::Dir(prefix))
            }
            Entry::Inline(bytes) => Some(Item::Inline(key, bytes)),
            Entry::File { source, size, mode } => Some(Item::File {
                name: key,
                source,
                size: *size,
                mode: *mode,
            }),
        })
        .collect()
}

/// The reader: every file cut into blocks, in order. Stops at the first read error, or
/// when the writer has gone (its tickets channel closed).
fn read_blocks(
    items: &[Item],
    blocks: &SyncSender<Block>,
    tickets: &Receiver<()>,
    done: &std::sync::mpsc::Sender<Done>,
) {
    let mut seq = 0u64;
    let mut send = |item: usize, data: Vec<u8>, method: Method, first: bool, last: bool| {
        if tickets.recv().is_err() {
            return false;
        }
        let block = Block {
            seq,
            item,
            data,
            method,
            first,
            last,
        };
        seq += 1;
        blocks.send(block).is_ok()
    };
    for (i, item) in items.iter().enumerate() {
        let going = match item {
            Item::Dir(_) => send(i, Vec::new(), Method::Stored, true, true),
            Item::Inline(name, bytes) => {
                let method = method_for(name, bytes);
                send(i, bytes.to_vec(), method, true, true)
            }
            Item::File { name, source, .. } => match read_file(i, name, source, &mut send) {
                Ok(going) => going,
                Err(d) => {
                    let _ = done.send(Done::Failed(d));
                    return;
                }
            },
        };
        if !going {
            return;
        }
    }
}

/// One file's blocks; `Ok(false)` when the writer stopped listening.
fn read_file(
    item: usize,
    name: &str,
    source: &Path,
    send: &mut dyn FnMut(usize, Vec<u8>, Method, bool, bool) -> bool,
) -> Result<bool> {
    let mut file = fs::File::open(source).map_err(|e| read_error(source, &e))?;
    let mut method = None;
    let mut first = true;
    let mut next = read_block(&mut file, source)?;
    loop {
        let data = next;
        // A full block may be followed by more; read ahead to know which block is last.
        next = if data.len() == BLOCK {
            read_block(&mut file, source)?
        } else {
            Vec::new()
        };
        let last = next.is_empty();
        let m = *method.get_or_insert_with(|| method_for(name, &data));
        if !send(item, data, m, first, last) {
            return Ok(false);
        }
        if last {
            return Ok(true);
        }
        first = false;
    }
}

fn read_block(file: &mut fs::File, source: &Path) -> Result<Vec<u8>> {
    let mut data = Vec::with_capacity(BLOCK);
    Read::by_ref(file)
        .take(BLOCK as u64)
        .read_to_end(&mut data)
        .map_err(|e| read_error(source, &e))?;
    Ok(data)
}

/// Stored for empty files, known compressed formats and data whose sample deflate
/// cannot shrink by a tenth; deflated otherwise.
fn method_for(name: &str, first_block: &[u8]) -> Method {
    if first_block.is_empty() {
        return Method::Stored;
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if ext.is_some_and(|e| COMPRESSED_EXTENSIONS.contains(&e.as_str())) {
        return Method::Stored;
    }
    let sample = &first_block[..first_block.len().min(SAMPLE)];
    if sample.len() < 4096 {
        return Method::Deflated;
    }
    let mut enc = DeflateEncoder::new(Vec::with_capacity(sample.len()), Compression::fast());
    let size = enc
        .write_all(sample)
        .and_then(|()| enc.finish())
        .map_or(usize::MAX, |v| v.len());
    if size.saturating_mul(10) > sample.len().saturating_mul(9) {
        Method::Stored
    } else {
        Method::Deflated
    }
}

/// A worker: take blocks until the reader is done; encode each.
fn encode_blocks(blocks: &Mutex<Receiver<Block>>, done: &std::sync::mpsc::Sender<Done>) {
    loop {
        let block = match blocks.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(block) = block else { return };
        let encoded = match encode(block) {
            Ok(e) => Done::Block(e),
            Err(d) => Done::Failed(d),
        };
        if done.send(encoded).is_err() {
            return;
        }
    }
}

fn encode(block: Block) -> Result<Encoded> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&block.data);
    let raw = block.data.len() as u64;
    let bytes = match block.method {
        Method::Stored => block.data,
        Method::Deflated => deflate(&block.data, block.last).map_err(|e| {
            Diag::new(
                CODE_PACKAGE,
                format!("cannot compress the working_dir: {e}"),
            )
        })?,
    };
    Ok(Encoded {
        seq: block.seq,
        item: block.item,
        bytes,
        crc,
        raw,
        method: block.method,
        first: block.first,
        last: block.last,
    })
}

/// One block as raw deflate: the last block of a file ends the stream; the others end
/// with a sync flush (byte-aligned, no final bit), so the blocks concatenate.
fn deflate(data: &[u8], last: bool) -> std::io::Result<Vec<u8>> {
    let mut enc = DeflateEncoder::new(
        Vec::with_capacity(data.len() / 3 + 64),
        Compression::new(DEFLATE_LEVEL),
    );
    enc.write_all(data)?;
    if last {
        return enc.finish();
    }
    enc.flush()?;
    // Dropping the encoder would finish the stream into this vector: take it first.
    Ok(std::mem::take(enc.get_mut()))
}

/// The writer: blocks back in archive order, each file framed by its header and data
/// descriptor; then the central directory.
fn write_in_order<W: Write>(
    items: &[Item],
    out: W,
    done: &Receiver<Done>,
    tickets: &SyncSender<()>,
    on_progress: &mut dyn FnMut(u64),
) -> Result<W> {
    let mut zip = ZipStream::new(out);
    let mut waiting: BTreeMap<u64, Encoded> = BTreeMap::new();
    let mut next = 0u64;
    let mut consumed = 0u64;
    let mut file_crc = crc32fast::Hasher::new();
    let mut file_size = 0u64;
    loop {
        while let Some(block) = waiting.remove(&next) {
            next += 1;
            match &items[block.item] {
                Item::Dir(name) => zip.add_directory(name, 0o755).map_err(write_error)?,
                Item::Inline(name, _) | Item::File { name, .. } => {
                    if block.first {
                        let (mode, size) = match &items[block.item] {
                            Item::File { size, mode, .. } => (*mode, *size),
                            _ => (0o644, block.raw),
                        };
                        zip.start_file(name, block.method, mode, size)
                            .map_err(write_error)?;
                        file_crc = crc32fast::Hasher::new();
                        file_size = 0;
                    }
                    zip.write_data(&block.bytes).map_err(write_error)?;
                    file_crc.combine(&block.crc);
                    file_size += block.raw;
                    consumed += block.raw;
                    on_progress(consumed);
                    if block.last {
                        let crc = std::mem::replace(&mut file_crc, crc32fast::Hasher::new());
                        zip.finish_file(crc.finalize(), file_size)
                            .map_err(write_error)?;
                    }
                }
            }
            // The reader may have stopped already; a ticket nobody takes is fine.
            let _ = tickets.try_send(());
        }
        match done.recv() {
            Ok(Done::Block(block)) => {
                waiting.insert(block.seq, block);
            }
            Ok(Done::Failed(d)) => return Err(d),
            // Every sender is gone: all blocks arrived (or the reader stopped early,
            // which it only does after sending a failure).
            Err(_) => break,
        }
    }
    if !waiting.is_empty() {
        return Err(Diag::new(
            CODE_PACKAGE,
            "packaging stopped before every file was written",
        ));
    }
    zip.finish().map_err(write_error)
}

fn write_error(e: std::io::Error) -> Diag {
    Diag::new(
        CODE_PACKAGE,
        format!("cannot write the working_dir archive: {e}"),
    )
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
    fn incompressible_files_are_stored_and_text_is_deflated() {
        // Weights and tarballs are common in working dirs: storing them costs no CPU and
        // does not grow them.
        let dir = tempfile::tempdir().unwrap();
        let mut rng = fastrand::Rng::with_seed(7);
        let noise: Vec<u8> = (0..512 * 1024).map(|_| rng.u8(..)).collect();
        std::fs::write(dir.path().join("noise.bin"), &noise).unwrap();
        std::fs::write(dir.path().join("model.safetensors"), "a".repeat(10_000)).unwrap();
        std::fs::write(dir.path().join("code.py"), "print('x')\n".repeat(5000)).unwrap();
        let set = UploadSet::from_directory(dir.path()).unwrap();
        let out = write_zip(&set, Cursor::new(Vec::new()), &mut |_| {}).unwrap();
        let bytes = out.into_inner();
        assert!(bytes.len() < noise.len() + 10_000 + 4096, "{}", bytes.len());
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let method = |zip: &mut zip::ZipArchive<Cursor<Vec<u8>>>, n: &str| {
            zip.by_name(n).unwrap().compression()
        };
        assert_eq!(
            method(&mut zip, "noise.bin"),
            zip::CompressionMethod::Stored
        );
        assert_eq!(
            method(&mut zip, "model.safetensors"),
            zip::CompressionMethod::Stored
        );
        assert_eq!(
            method(&mut zip, "code.py"),
            zip::CompressionMethod::Deflated
        );
    }

    #[test]
    fn files_of_many_blocks_round_trip() {
        // Blocks are deflated apart and joined: a file spanning several (and one ending
        // exactly on a block boundary) must come back byte for byte, CRC checked.
        let dir = tempfile::tempdir().unwrap();
        let mut rng = fastrand::Rng::with_seed(3);
        let words = ["alpha ", "beta ", "gamma\n", "delta ", "x = 1\n"];
        let text: String = (0..900_000)
            .map(|_| words[rng.usize(..words.len())])
            .collect();
        std::fs::write(dir.path().join("big.txt"), &text).unwrap();
        let exact: Vec<u8> = (0..2 * BLOCK).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("exact.dat"), &exact).unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let set = UploadSet::from_directory(dir.path()).unwrap();
        let out = write_zip(&set, Cursor::new(Vec::new()), &mut |_| {}).unwrap();
        let mut zip = zip::ZipArchive::new(Cursor::new(out.into_inner())).unwrap();
        let mut read = |n: &str| {
            let mut v = Vec::new();
            zip.by_name(n).unwrap().read_to_end(&mut v).unwrap();
            v
        };
        assert_eq!(read("big.txt"), text.as_bytes());
        assert_eq!(read("exact.dat"), exact);
        assert_eq!(read("empty.txt"), b"");
    }

    #[test]
    fn a_file_that_cannot_be_read_fails_the_archive() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let set = UploadSet::from_directory(dir.path()).unwrap();
        std::fs::remove_file(dir.path().join("a.txt")).unwrap();
        let e = write_zip(&set, Cursor::new(Vec::new()), &mut |_| {}).unwrap_err();
        assert_eq!(e.code, CODE_PACKAGE);
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

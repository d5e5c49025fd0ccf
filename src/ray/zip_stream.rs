//! A zip archive written front to back into any [`Write`] (a socket, a pipe), never
//! seeking: each entry is a local header, its data, then a data descriptor with the CRC
//! and sizes (APPNOTE 4.3.9, flag bit 3), and the central directory comes last. Zip64
//! records are used where a size or an offset needs them (APPNOTE 4.5.3, 4.3.14).
//!
//! Python's `zipfile` (what Ray's `unzip_package` uses) reads sizes from the central
//! directory, so stored entries with data descriptors are fine for it.

use std::io::{self, Write};

/// How an entry's data is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Stored,
    Deflated,
}

impl Method {
    fn code(self) -> u16 {
        match self {
            Method::Stored => 0,
            Method::Deflated => 8,
        }
    }
}

const LOCAL_HEADER: u32 = 0x0403_4b50;
const DATA_DESCRIPTOR: u32 = 0x0807_4b50;
const CENTRAL_HEADER: u32 = 0x0201_4b50;
const END_OF_CENTRAL_DIR: u32 = 0x0605_4b50;
const ZIP64_END: u32 = 0x0606_4b50;
const ZIP64_LOCATOR: u32 = 0x0706_4b50;
const ZIP64_EXTRA: u16 = 0x0001;
/// Bit 3 (sizes follow the data) and bit 11 (names are UTF-8).
const FLAGS: u16 = 0x0008 | 0x0800;
/// Made by Unix (3), spec 6.3, so `external_attributes` carry a Unix mode.
const MADE_BY: u16 = (3 << 8) | 63;
/// 1980-01-01 00:00, the earliest DOS time: the archive depends on contents only.
const DOS_DATE: u16 = (1 << 5) | 1;
const DOS_TIME: u16 = 0;
/// Sizes and offsets at or above this go into zip64 fields.
const ZIP32_MAX: u64 = 0xFFFF_FFFF;
const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;

/// One entry of the central directory, recorded while its local copy is written.
struct Record {
    name: String,
    method: Method,
    crc: u32,
    compressed: u64,
    size: u64,
    offset: u64,
    external: u32,
}

/// Writes entries in order; [`ZipStream::finish`] writes the central directory.
pub struct ZipStream<W: Write> {
    out: W,
    offset: u64,
    records: Vec<Record>,
    /// The entry being written: its record, and whether its local header has zip64 sizes.
    open: Option<(Record, bool)>,
}

impl<W: Write> ZipStream<W> {
    pub fn new(out: W) -> ZipStream<W> {
        ZipStream {
            out,
            offset: 0,
            records: Vec::new(),
            open: None,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// An empty directory (`name` ends in `/`).
    pub fn add_directory(&mut self, name: &str, mode: u32) -> io::Result<()> {
        let mut record =
            self.local_header(name, Method::Stored, S_IFDIR | (mode & 0o7777), false)?;
        // MS-DOS directory attribute, for readers that look only at it.
        record.external |= 0x10;
        self.records.push(record);
        Ok(())
    }

    /// Start a file entry. `size_hint` is the file's size as listed; a file that may
    /// reach 4 GiB gets zip64 sizes in its data descriptor.
    pub fn start_file(
        &mut self,
        name: &str,
        method: Method,
        mode: u32,
        size_hint: u64,
    ) -> io::Result<()> {
        let zip64 = size_hint >= ZIP32_MAX - (1 << 20);
        let record = self.local_header(name, method, S_IFREG | (mode & 0o7777), zip64)?;
        self.open = Some((record, zip64));
        Ok(())
    }

    /// Write an entry's local header; its record, to complete and keep.
    fn local_header(
        &mut self,
        name: &str,
        method: Method,
        mode: u32,
        zip64: bool,
    ) -> io::Result<Record> {
        let mut header = Vec::with_capacity(30 + name.len() + 20);
        header.extend_from_slice(&LOCAL_HEADER.to_le_bytes());
        header.extend_from_slice(&(if zip64 { 45u16 } else { 20u16 }).to_le_bytes());
        header.extend_from_slice(&FLAGS.to_le_bytes());
        header.extend_from_slice(&method.code().to_le_bytes());
        header.extend_from_slice(&DOS_TIME.to_le_bytes());
        header.extend_from_slice(&DOS_DATE.to_le_bytes());
        // CRC and sizes follow in the data descriptor.
        header.extend_from_slice(&0u32.to_le_bytes());
        let sizes = if zip64 { u32::MAX } else { 0 };
        header.extend_from_slice(&sizes.to_le_bytes());
        header.extend_from_slice(&sizes.to_le_bytes());
        header.extend_from_slice(&name_len(name)?.to_le_bytes());
        header.extend_from_slice(&(if zip64 { 20u16 } else { 0u16 }).to_le_bytes());
        header.extend_from_slice(name.as_bytes());
        if zip64 {
            header.extend_from_slice(&ZIP64_EXTRA.to_le_bytes());
            header.extend_from_slice(&16u16.to_le_bytes());
            header.extend_from_slice(&[0u8; 16]);
        }
        let offset = self.offset;
        self.put(&header)?;
        Ok(Record {
            name: name.to_string(),
            method,
            crc: 0,
            compressed: 0,
            size: 0,
            offset,
            external: mode << 16,
        })
    }

    /// Data of the open file, already encoded by its method.
    pub fn write_data(&mut self, encoded: &[u8]) -> io::Result<()> {
        self.put(encoded)?;
        if let Some((record, _)) = &mut self.open {
            record.compressed += encoded.len() as u64;
        }
        Ok(())
    }

    /// Close the open file: its CRC-32 and uncompressed size.
    pub fn finish_file(&mut self, crc: u32, size: u64) -> io::Result<()> {
        let Some((mut record, zip64)) = self.open.take() else {
            return Err(io::Error::other("no zip entry is open"));
        };
        if !zip64 && (size >= ZIP32_MAX || record.compressed >= ZIP32_MAX) {
            return Err(io::Error::other(format!(
                "{} grew past 4 GiB while it was being packaged",
                record.name
            )));
        }
        record.crc = crc;
        record.size = size;
        let mut descriptor = Vec::with_capacity(24);
        descriptor.extend_from_slice(&DATA_DESCRIPTOR.to_le_bytes());
        descriptor.extend_from_slice(&crc.to_le_bytes());
        if zip64 {
            descriptor.extend_from_slice(&record.compressed.to_le_bytes());
            descriptor.extend_from_slice(&size.to_le_bytes());
        } else {
            descriptor.extend_from_slice(&(record.compressed as u32).to_le_bytes());
            descriptor.extend_from_slice(&(size as u32).to_le_bytes());
        }
        self.put(&descriptor)?;
        self.records.push(record);
        Ok(())
    }

    /// Write the central directory and return the writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.open.is_some() {
            return Err(io::Error::other("a zip entry is still open"));
        }
        let start = self.offset;
        let records = std::mem::take(&mut self.records);
        for r in &records {
            let mut extra = Vec::new();
            let mut field = |v: u64| -> u32 {
                if v >= ZIP32_MAX {
                    extra.extend_from_slice(&v.to_le_bytes());
                    u32::MAX
                } else {
                    v as u32
                }
            };
            // APPNOTE 4.5.3: the zip64 extra holds, in this order, only the fields whose
            // 32-bit slot is 0xFFFFFFFF.
            let size = field(r.size);
            let compressed = field(r.compressed);
            let offset = field(r.offset);
            let zip64 = !extra.is_empty();
            let mut header = Vec::with_capacity(46 + r.name.len() + 28);
            header.extend_from_slice(&CENTRAL_HEADER.to_le_bytes());
            header.extend_from_slice(&MADE_BY.to_le_bytes());
            header.extend_from_slice(&(if zip64 { 45u16 } else { 20u16 }).to_le_bytes());
            header.extend_from_slice(&FLAGS.to_le_bytes());
            header.extend_from_slice(&r.method.code().to_le_bytes());
            header.extend_from_slice(&DOS_TIME.to_le_bytes());
            header.extend_from_slice(&DOS_DATE.to_le_bytes());
            header.extend_from_slice(&r.crc.to_le_bytes());
            header.extend_from_slice(&compressed.to_le_bytes());
            header.extend_from_slice(&size.to_le_bytes());
            header.extend_from_slice(&name_len(&r.name)?.to_le_bytes());
            let extra_len = if zip64 { 4 + extra.len() } else { 0 };
            header.extend_from_slice(&(extra_len as u16).to_le_bytes());
            header.extend_from_slice(&0u16.to_le_bytes()); // comment
            header.extend_from_slice(&0u16.to_le_bytes()); // disk
            header.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
            header.extend_from_slice(&r.external.to_le_bytes());
            header.extend_from_slice(&offset.to_le_bytes());
            header.extend_from_slice(r.name.as_bytes());
            if zip64 {
                header.extend_from_slice(&ZIP64_EXTRA.to_le_bytes());
                header.extend_from_slice(&(extra.len() as u16).to_le_bytes());
                header.extend_from_slice(&extra);
            }
            self.put(&header)?;
        }
        let size = self.offset - start;
        let count = records.len() as u64;
        if count >= 0xFFFF || size >= ZIP32_MAX || start >= ZIP32_MAX {
            let end64 = self.offset;
            let mut record = Vec::with_capacity(76);
            record.extend_from_slice(&ZIP64_END.to_le_bytes());
            record.extend_from_slice(&44u64.to_le_bytes());
            record.extend_from_slice(&MADE_BY.to_le_bytes());
            record.extend_from_slice(&45u16.to_le_bytes());
            record.extend_from_slice(&0u32.to_le_bytes());
            record.extend_from_slice(&0u32.to_le_bytes());
            record.extend_from_slice(&count.to_le_bytes());
            record.extend_from_slice(&count.to_le_bytes());
            record.extend_from_slice(&size.to_le_bytes());
            record.extend_from_slice(&start.to_le_bytes());
            record.extend_from_slice(&ZIP64_LOCATOR.to_le_bytes());
            record.extend_from_slice(&0u32.to_le_bytes());
            record.extend_from_slice(&end64.to_le_bytes());
            record.extend_from_slice(&1u32.to_le_bytes());
            self.put(&record)?;
        }
        let mut end = Vec::with_capacity(22);
        end.extend_from_slice(&END_OF_CENTRAL_DIR.to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        let count16 = count.min(0xFFFF) as u16;
        end.extend_from_slice(&count16.to_le_bytes());
        end.extend_from_slice(&count16.to_le_bytes());
        end.extend_from_slice(&(size.min(ZIP32_MAX) as u32).to_le_bytes());
        end.extend_from_slice(&(start.min(ZIP32_MAX) as u32).to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        self.put(&end)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

fn name_len(name: &str) -> io::Result<u16> {
    u16::try_from(name.len())
        .map_err(|_| io::Error::other(format!("a path in the archive is too long: {name}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Read};

    #[test]
    fn entries_read_back_with_an_independent_reader() {
        let mut z = ZipStream::new(Vec::new());
        z.add_directory("empty/", 0o755).unwrap();
        z.start_file("a.txt", Method::Stored, 0o644, 5).unwrap();
        z.write_data(b"hello").unwrap();
        z.finish_file(crc32fast::hash(b"hello"), 5).unwrap();
        z.start_file("run.sh", Method::Stored, 0o755, 0).unwrap();
        z.finish_file(crc32fast::hash(b""), 0).unwrap();
        let bytes = z.finish().unwrap();
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        assert_eq!(zip.len(), 3);
        let mut text = String::new();
        zip.by_name("a.txt")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hello");
        assert_eq!(zip.by_name("run.sh").unwrap().unix_mode(), Some(0o100_755));
        assert!(zip.by_name("empty/").unwrap().is_dir());
    }

    #[test]
    fn a_file_over_its_announced_size_class_is_an_error_not_a_corrupt_archive() {
        let mut z = ZipStream::new(std::io::sink());
        z.start_file("grew.bin", Method::Stored, 0o644, 10).unwrap();
        let e = z.finish_file(0, ZIP32_MAX + 1).unwrap_err();
        assert!(e.to_string().contains("grew past 4 GiB"), "{e}");
    }

    #[test]
    fn zip64_sizes_are_written_for_files_announced_near_4_gib() {
        // The data is small, but the announced size selects zip64 records: the reader
        // must still find the entry and its contents.
        let mut z = ZipStream::new(Vec::new());
        z.start_file("big.bin", Method::Stored, 0o644, ZIP32_MAX)
            .unwrap();
        z.write_data(b"abc").unwrap();
        z.finish_file(crc32fast::hash(b"abc"), 3).unwrap();
        let bytes = z.finish().unwrap();
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut got = Vec::new();
        zip.by_name("big.bin")
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, b"abc");
    }
}

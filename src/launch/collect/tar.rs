//! A gzip-compressed tar (POSIX ustar, with a pax `path` record for names ustar cannot
//! hold) of regular files: all `nrl logs --collect --tar` needs, so no tar crate. gzip
//! is flate2, already built for zip.

use std::io::{self, Read, Write};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

const BLOCK: usize = 512;

/// Write `files` (archive name, file on disk) to `out` as `.tar.gz`, streaming each file.
pub fn write_tar_gz(
    out: &Path,
    files: &[(String, std::path::PathBuf)],
    mtime: u64,
) -> io::Result<()> {
    let file = std::fs::File::create(out)?;
    let mut gz = GzEncoder::new(io::BufWriter::new(file), Compression::default());
    for (name, path) in files {
        let mut src = std::fs::File::open(path)?;
        let size = src.metadata()?.len();
        append_header(&mut gz, name, size, mtime)?;
        let copied = io::copy(&mut (&mut src).take(size), &mut gz)?;
        if copied != size {
            return Err(io::Error::other(format!(
                "{} changed while archiving",
                path.display()
            )));
        }
        pad(&mut gz, size)?;
    }
    // Two zero blocks end the archive.
    gz.write_all(&[0u8; BLOCK * 2])?;
    gz.finish()?.flush()
}

fn pad(w: &mut impl Write, size: u64) -> io::Result<()> {
    let rem = (size % BLOCK as u64) as usize;
    if rem != 0 {
        w.write_all(&vec![0u8; BLOCK - rem])?;
    }
    Ok(())
}

/// The ustar header of one regular file, preceded by a pax header when the name does not
/// fit ustar's 100-byte name + 155-byte prefix.
fn append_header(w: &mut impl Write, name: &str, size: u64, mtime: u64) -> io::Result<()> {
    let (prefix, short) = match split_name(name) {
        Some(split) => split,
        None => {
            let record = pax_record("path", name);
            let pax_name = format!("PaxHeaders/{}", tail_bytes(name, 80));
            w.write_all(&header("", &pax_name, record.len() as u64, mtime, b'x'))?;
            w.write_all(record.as_bytes())?;
            pad(w, record.len() as u64)?;
            ("", tail_bytes(name, 100))
        }
    };
    w.write_all(&header(prefix, short, size, mtime, b'0'))
}

/// The last at most `n` bytes of `s`, on a char boundary.
fn tail_bytes(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// `name` as ustar's (prefix, name), split at a `/`, if it fits.
fn split_name(name: &str) -> Option<(&str, &str)> {
    if name.len() <= 100 {
        return Some(("", name));
    }
    name.char_indices()
        .filter(|(_, c)| *c == '/')
        .map(|(i, _)| (&name[..i], &name[i + 1..]))
        .find(|(p, n)| p.len() <= 155 && n.len() <= 100 && !n.is_empty())
}

/// `"<len> key=value\n"`, where `len` counts the whole record including itself.
fn pax_record(key: &str, value: &str) -> String {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while len.to_string().len() + body.len() != len {
        len += 1;
    }
    format!("{len}{body}")
}

fn header(prefix: &str, name: &str, size: u64, mtime: u64, kind: u8) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let put = |h: &mut [u8; BLOCK], at: usize, len: usize, bytes: &[u8]| {
        let n = bytes.len().min(len);
        h[at..at + n].copy_from_slice(&bytes[..n]);
    };
    let octal = |h: &mut [u8; BLOCK], at: usize, len: usize, v: u64| {
        let text = format!("{v:0width$o}", width = len - 1);
        put(h, at, len - 1, text.as_bytes());
    };
    put(&mut h, 0, 100, name.as_bytes());
    octal(&mut h, 100, 8, 0o644);
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, size);
    octal(&mut h, 136, 12, mtime);
    h[148..156].copy_from_slice(b"        ");
    h[156] = kind;
    put(&mut h, 257, 6, b"ustar\0");
    put(&mut h, 263, 2, b"00");
    put(&mut h, 345, 155, prefix.as_bytes());
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    let text = format!("{sum:06o}\0 ");
    put(&mut h, 148, 8, text.as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_lengths_count_themselves() {
        assert_eq!(pax_record("path", "a"), "9 path=a\n");
        let long = "x".repeat(95);
        let r = pax_record("path", &long);
        assert_eq!(r.len().to_string(), r.split(' ').next().unwrap());
    }

    #[test]
    fn long_names_split_at_a_slash_or_need_pax() {
        let dir = "d".repeat(120);
        let name = format!("{dir}/file.log");
        assert_eq!(split_name(&name), Some((dir.as_str(), "file.log")));
        assert_eq!(split_name(&"f".repeat(130)), None);
        assert_eq!(split_name("short"), Some(("", "short")));
    }

    #[test]
    fn headers_carry_a_valid_checksum() {
        let h = header("", "a.txt", 5, 0, b'0');
        let stored = std::str::from_utf8(&h[148..154]).unwrap();
        let mut blank = h;
        blank[148..156].copy_from_slice(b"        ");
        let sum: u32 = blank.iter().map(|b| u32::from(*b)).sum();
        assert_eq!(u32::from_str_radix(stored, 8).unwrap(), sum);
    }
}

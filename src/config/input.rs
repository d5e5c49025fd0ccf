//! Reading the files a user names (recipes, `defaults:` entries, infra and Gym configs,
//! scripts, secrets): regular files only, up to [`MAX_INPUT_BYTES`]. A FIFO would block
//! the read forever and `/dev/zero` would never end, so both are refused before reading.

use std::io::{self, Read};
use std::path::Path;

/// The largest input file read (64 MiB): recipes are kilobytes, so anything near this is
/// a mistake (a log, a checkpoint, a device).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// The bytes of the regular file at `path` (symlinks followed). Errors are `io::Error`s
/// whose text says what is wrong (`not a regular file: a FIFO`, `larger than 64 MiB`).
pub fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    // Checked before opening: opening a FIFO for reading blocks until a writer comes.
    refuse_special(&std::fs::metadata(path)?)?;
    let mut file = open_nonblocking(path)?;
    // And again on what was opened, in case the path changed in between.
    let meta = file.metadata()?;
    refuse_special(&meta)?;
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_INPUT_BYTES) as usize);
    (&mut file)
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("larger than {} MiB", MAX_INPUT_BYTES >> 20),
        ));
    }
    Ok(bytes)
}

/// [`read_bytes`], as UTF-8 text.
pub fn read_text(path: &Path) -> io::Result<String> {
    String::from_utf8(read_bytes(path)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn refuse_special(meta: &std::fs::Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    let what = kind_of(&meta.file_type());
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file: {what}"),
    ))
}

#[cfg(unix)]
fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.yaml");
        std::fs::write(&p, "a: 1\n").unwrap();
        assert_eq!(read_text(&p).unwrap(), "a: 1\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pipe.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read_text(&p).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file: a FIFO");
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_directories_are_refused() {
        let e = read_bytes(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file: a character device");
        let d = tempfile::tempdir().unwrap();
        let e = read_bytes(d.path()).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file: a directory");
    }

    #[test]
    fn files_over_the_limit_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.yaml");
        let f = std::fs::File::create(&p).unwrap();
        // Sparse: no 64 MiB written to disk.
        f.set_len(MAX_INPUT_BYTES + 1).unwrap();
        let e = read_bytes(&p).unwrap_err();
        assert_eq!(e.to_string(), "larger than 64 MiB");
    }

    #[test]
    fn binary_files_are_not_text() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bin");
        std::fs::write(&p, b"ok\xff").unwrap();
        assert!(
            read_text(&p)
                .unwrap_err()
                .to_string()
                .starts_with("not UTF-8 text")
        );
    }
}

//! What differs between operating systems, in one place, each with a working fallback: files
//! private to the user, a file's identity, positional reads and writes, and whether a process
//! still runs. Unix (Linux and macOS) gets the real thing; elsewhere (Windows) a file is as
//! private as its directory's ACL makes it, and a file is identified by its size and time alone.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// `options`, made to create a file only its owner can read and write (mode 0600 on Unix).
pub fn private_file_options(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// Makes `path` private to its owner: 0700 for a directory, 0600 for a file (Unix; elsewhere
/// nothing changes).
pub fn make_private(path: &Path, is_dir: bool) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if is_dir { 0o700 } else { 0o600 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, is_dir);
        Ok(())
    }
}

/// What tells one file from another that replaced it at the same path: the inode on Unix, 0
/// elsewhere (where size and modification time must tell).
pub fn file_identity(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    return std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, without moving a cursor other readers share
/// (Unix: pread).
#[cfg(unix)]
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Reads exactly `buf.len()` bytes at `offset` (Windows: reads at an offset, in a loop).
#[cfg(windows)]
pub fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill whole buffer")),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` at `offset` (Unix: pwrite).
#[cfg(unix)]
pub fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

/// Writes all of `buf` at `offset` (Windows: writes at an offset, in a loop).
#[cfg(windows)]
pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_write(file, buf, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "failed to write whole buffer")),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes a directory's entries durable (Unix: fsync of the directory). Elsewhere a directory
/// cannot be opened to sync; the filesystem's journal must do.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    return File::open(dir).and_then(|f| f.sync_all());
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Whether the process `pid` may still run. Unix asks the kernel (signal 0); elsewhere the
/// answer is always yes, so nothing of a live process is ever taken for stale.
pub fn process_may_run(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill(2) with signal 0 sends nothing; it only checks that the process exists.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_reads_and_writes_meet_and_a_short_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = private_file_options(OpenOptions::new().create(true).truncate(true).read(true).write(true))
            .open(&path)
            .unwrap();
        write_all_at(&file, b"world", 6).unwrap();
        write_all_at(&file, b"hello ", 0).unwrap();
        let mut buf = [0u8; 5];
        read_exact_at(&file, &mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        assert_eq!(read_exact_at(&file, &mut buf, 9).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }

    #[test]
    fn this_process_runs_and_a_pid_past_the_kernels_limit_does_not() {
        assert!(process_may_run(std::process::id()));
        #[cfg(unix)]
        assert!(!process_may_run(i32::MAX as u32));
    }
}

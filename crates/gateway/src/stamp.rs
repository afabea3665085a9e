//! What tells the gateway a file it watches changed (its config, the pins file, a shared
//! index's `meta.bin`): the file's identity, size and modification time, compared with what
//! they were when it was last read.

use std::path::Path;

/// What identifies a file's content for the watch: its inode, size and modification time.
pub(crate) type FileStamp = (u64, u64, std::time::SystemTime);

/// The stamp of the file at `path` now (`None`: there is none, or it cannot be read).
pub(crate) fn file_stamp(path: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((toolsearch_catalog::platform::file_identity(&m), m.len(), m.modified().ok()?))
}

/// How long a changed file must hold still before it is read.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

/// The stamp of the file at `path` once it has held still for [`SETTLE`] (at most 20 looks):
/// an editor that truncates the file and then writes it is not read in between, as an empty
/// config.
pub(crate) async fn settled_stamp(path: &Path) -> Option<FileStamp> {
    let mut last = file_stamp(path);
    for _ in 0..20 {
        tokio::time::sleep(SETTLE).await;
        let now = file_stamp(path);
        if now == last {
            break;
        }
        last = now;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_being_written_is_read_once_it_holds_still() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.json");
        std::fs::write(&path, "").unwrap();
        // Written again every 20 ms for 0.3 s, as a slow editor might.
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                for i in 0..15 {
                    std::fs::write(&path, "x".repeat(i + 1)).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            })
        };
        let started = std::time::Instant::now();
        let stamp = settled_stamp(&path).await;
        writer.join().unwrap();
        assert!(started.elapsed() >= std::time::Duration::from_millis(280), "{:?}", started.elapsed());
        assert_eq!(stamp, file_stamp(&path), "the stamp of the file as last written");
        assert_eq!(stamp.map(|s| s.1), Some(15));
    }
}

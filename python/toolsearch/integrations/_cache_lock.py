"""A lock per index of a cache directory, taken across processes: `DIR/NAME.lock` beside the
index `DIR/NAME`, locked with `flock` while a process opens, builds or removes that index.

A lock file is removed only by the holder of its lock (a pruner removing the index too); one
who locked a lock file that was removed meanwhile sees that its inode is no longer the path's
and takes the new one, so two processes never both think they hold one index's lock. Where
`fcntl` is missing (Windows), or on a file system without locks (some network ones), nothing is
locked: processes there do not share a cache directory safely.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms the wheels are built for
    fcntl = None  # type: ignore[assignment]


# What `flock` fails with on a file system that has no locks.
_NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


def lock_file(index: Path) -> Path:
    """The lock file of the index at `index`."""
    return index.with_name(index.name + ".lock")


@contextlib.contextmanager
def entry_lock(index: Path, *, wait: bool, drop: bool = False) -> Iterator[bool]:
    """Holds the lock of the index at `index` for the block, yielding `True`; with
    `wait=False`, yields `False` at once when another process (or another lock in this one)
    holds it. With `drop`, the lock file is removed at the end of the block, lock still held:
    for a pruner that removed the index."""
    if fcntl is None:
        yield True
        return
    path = lock_file(index)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            yield False
            return
        except OSError as e:
            os.close(fd)
            if e.errno not in _NO_LOCKS:
                raise
            yield True  # a file system without locks (some network ones): as where fcntl is missing
            return
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # removed by a pruner while this waited: lock the one there now
    try:
        yield True
        if drop:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(fd)

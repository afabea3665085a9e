"""`toolsearch.open(path, watch=SECS)`: an `Index` (and the tool sets made from it) that picks up
what another process did to the index on disk (built it again, `calibrate`, `learn`) by itself,
as `toolsearch serve --watch` does, instead of only when `reload()` is called.

No thread watches: a call looks at the index's metadata file (a build or an update replaces it
atomically) when `SECS` have passed since the last look, and reloads if its bytes changed. An
index that does not open is named in a `RuntimeWarning` and not tried again until it changes
again; the one before goes on answering. Threads sharing an `Index` never wait for each other's
look: one looks, the others answer from what is loaded."""

import math
import threading
import time
import warnings
from pathlib import Path
from typing import Callable, Optional


def metadata(path: str) -> Optional[bytes]:
    """The index's metadata file as it is now (a build or a metadata update replaces it
    atomically, so other bytes mean a changed index); `None` while it cannot be read."""
    try:
        return (Path(path) / "meta.bin").read_bytes()
    except OSError:
        return None


def interval(watch: Optional[float]) -> Optional[float]:
    """`watch` checked: `None` (never look by itself) or a number of seconds, over 0."""
    if watch is None:
        return None
    if isinstance(watch, bool) or not isinstance(watch, (int, float)) or not math.isfinite(watch) or watch <= 0:
        raise ValueError(f"watch: {watch!r}: give the seconds between looks at the index (a number over 0), or None")
    return float(watch)


class Watch:
    """When the index at `path` is looked at next, and what it looked like when it last failed
    to open."""

    def __init__(self, path: str, every: float):
        self._path, self._every = path, every
        self._next = time.monotonic() + every
        self._lock = threading.Lock()
        self._failed: Optional[bytes] = None

    def look(self, seen: Optional[bytes], metadata: Callable[[], Optional[bytes]], reload: Callable[[], bool]) -> None:
        """If it is time, reads the metadata and, if it is neither `seen` (what is loaded) nor
        what last failed, calls `reload`; an `OSError` from it becomes a warning."""
        if time.monotonic() < self._next or not self._lock.acquire(blocking=False):
            return
        try:
            now = metadata()
            if now is None or now == seen or now == self._failed:
                return
            try:
                reload()
            except OSError as e:
                self._failed = now
                warnings.warn(
                    f"toolsearch: the index at {self._path} changed on disk but does not open ({e}); "
                    "still answering from the one before",
                    RuntimeWarning,
                    stacklevel=4,
                )
        finally:
            self._next = time.monotonic() + self._every
            self._lock.release()

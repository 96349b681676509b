"""Bytes placed so that their last byte is the last readable one: anonymous pages mapped with ctypes, the page
after them made PROT_NONE, the data copied to the very end. A read one byte past the data faults (SIGSEGV) with
or without AddressSanitizer, which does not see an overread that stays within a ``bytes`` object's own
allocation (its trailing NUL, the allocator's rounding)."""

from __future__ import annotations

import ctypes
import mmap
import sys

_PROT_READ, _PROT_WRITE, _PROT_NONE = 1, 2, 0
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20

available = sys.platform.startswith("linux")


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


class GuardedArena:
    """``size`` bytes (rounded up to pages) followed by a PROT_NONE page; ``place(data)`` copies data to the end
    and returns a memoryview of exactly those bytes. Mapped once, never unmapped (views may outlive a test);
    reuse one arena rather than making one an input."""

    def __init__(self, size: int = 1 << 16) -> None:
        self._libc = _libc()
        page = mmap.PAGESIZE
        self.size = -(-max(size, 1) // page) * page
        addr = self._libc.mmap(None, self.size + page, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS,
                               -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        if self._libc.mprotect(addr + self.size, page, _PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        self._addr = addr
        self._region = (ctypes.c_ubyte * self.size).from_address(addr)

    def place(self, data: bytes) -> memoryview:
        """A view of ``data`` copied so that its last byte is the byte just before the guard page."""
        n = len(data)
        if n > self.size:
            raise ValueError(f"{n} bytes do not fit in an arena of {self.size}")
        at = self.size - n
        ctypes.memmove(self._addr + at, bytes(data), n)
        return memoryview(self._region).cast("B")[at:].toreadonly()


_ARENA: "GuardedArena | None" = None


def at_guard(data: bytes) -> memoryview:
    """``data`` at the end of a shared arena (64 KiB), just before its guard page (see GuardedArena.place)."""
    global _ARENA
    if _ARENA is None:
        _ARENA = GuardedArena()
    return _ARENA.place(data)

"""kcodec's exceptions: every failure of the codec is one of these, never a bare IndexError."""

from __future__ import annotations

from typing import Optional


class KcodecError(Exception):
    """Base of kcodec's errors."""


class DecodeError(KcodecError, ValueError):
    """Bytes that do not decode: what was expected, at which byte offset, in which field."""

    def __init__(self, reason: str, offset: int = 0, path: str = "", message: Optional[str] = None,
                 version: Optional[int] = None) -> None:
        self.reason = reason
        self.offset = offset
        self.path = path
        self.message = message
        self.version = version
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"{self.message} v{self.version}" if self.message is not None else "input"
        field = f" field {self.path}" if self.path else ""
        return f"{self.reason} at byte {self.offset} of {where}{field}"

    def __reduce__(self):  # keep the fields through pickling (Spark ships errors between processes)
        return (type(self), (self.reason, self.offset, self.path, self.message, self.version))


class EncodeError(KcodecError, ValueError):
    """A value that cannot be written at this version: the field path and why."""

    def __init__(self, reason: str, path: str = "", message: Optional[str] = None,
                 version: Optional[int] = None) -> None:
        self.reason = reason
        self.path = path
        self.message = message
        self.version = version
        where = f"{message} v{version}" if message is not None else "message"
        field = f" field {path}" if path else ""
        super().__init__(f"{reason} in {where}{field}")

    def __reduce__(self):
        return (type(self), (self.reason, self.path, self.message, self.version))


class UnsupportedVersionError(KcodecError, ValueError):
    """A version outside a message's valid versions, or an api key kcodec does not know."""


class TrailingBytesWarning(UserWarning):
    """A body was followed by bytes its schema does not read (tolerated with strict=False)."""

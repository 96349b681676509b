"""ApiVersions negotiation: for each API, the highest version both the broker and kcodec speak."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .errors import UnsupportedApiError


class Versions:
    """What one broker advertised (api key -> (min, max)) and what we use with it."""

    def __init__(self, broker: Mapping[int, tuple[int, int]], caps: Optional[Mapping[int, int]] = None,
                 api_version: int = 0) -> None:
        self.broker = dict(broker)
        self.caps = dict(caps or {})  # api key -> highest version the user lets us use
        self.api_version = api_version  # the ApiVersions version that got the answer

    def supports(self, api_key: int) -> bool:
        return api_key in self.broker

    def pick(self, cls: Any, api_key: Optional[int] = None) -> Optional[int]:
        """The highest common version of ``cls``'s API, or None when there is none."""
        key = cls.API_KEY if api_key is None else api_key
        theirs = self.broker.get(key)
        if theirs is None:
            return None
        lo, hi = cls.VALID_VERSIONS
        hi = min(hi, theirs[1], self.caps.get(key, hi))
        lo = max(lo, theirs[0])
        return hi if hi >= lo else None

    def require(self, cls: Any, api_key: Optional[int] = None) -> int:
        version = self.pick(cls, api_key)
        if version is None:
            key = cls.API_KEY if api_key is None else api_key
            theirs = self.broker.get(key)
            said = f"v{theirs[0]}-v{theirs[1]}" if theirs else "no version"
            ours = f"v{cls.VALID_VERSIONS[0]}-v{cls.VALID_VERSIONS[1]}"
            raise UnsupportedApiError(f"{cls.__name__[:-7]} (api key {key}): broker speaks {said}, "
                                      f"kcodec {ours}" + (f", capped at v{self.caps[key]}" if key in self.caps else ""))
        return version

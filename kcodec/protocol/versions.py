"""ApiVersions negotiation: for each API, the highest version both the broker and kcodec speak.

``Versions`` holds what one broker advertised and picks versions from it; ``Negotiation`` is the
exchange that gets it, driven by the caller like any exchange of this package (``start()`` gives the
first request, ``receive(event)`` the next one or None when done). It asks at the highest ApiVersions
version kcodec speaks (KIP-511's client name and version from v3); a broker that lacks that version
answers UNSUPPORTED_VERSION in the v0 layout with its own ApiVersions range when it has one, and the
negotiation asks again at the broker's highest, else at v0, as Kafka's NetworkClient does. When a
v0 answer then shows a higher common version, it asks once more at that one (what librdkafka's mock
cluster needs). Negotiating again on a live connection (a broker upgraded under it) is another
Negotiation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

from kcodec.errors import ErrorCode, name_of
from kcodec.messages import ApiVersionsRequest

from .errors import RemoteProtocolError, ResponseError, UnsupportedApiError
from .events import Request, Response, ResponseFailed

if TYPE_CHECKING:
    from .client import ClientConnection

API_VERSIONS_KEY = 18


class Versions:
    """What one broker advertised (api key -> (min, max)) and what we use with it."""

    def __init__(self, broker: Mapping[int, tuple[int, int]], caps: Optional[Mapping[int, int]] = None,
                 api_version: int = 0) -> None:
        self.broker = dict(broker)
        self.caps = dict(caps or {})  # api key -> highest version the user lets us use
        self.api_version = api_version  # the ApiVersions version that got the answer

    def answered(self, broker: Mapping[int, tuple[int, int]], api_version: int) -> Versions:
        """The same caps with a broker's answer (of the same class: a subclass's errors stay)."""
        return type(self)(broker, self.caps, api_version)

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
        """pick, or UnsupportedApiError naming both ranges."""
        version = self.pick(cls, api_key)
        if version is None:
            key = cls.API_KEY if api_key is None else api_key
            theirs = self.broker.get(key)
            said = f"v{theirs[0]}-v{theirs[1]}" if theirs else "no version"
            ours = f"v{cls.VALID_VERSIONS[0]}-v{cls.VALID_VERSIONS[1]}"
            raise UnsupportedApiError(f"{cls.__name__[:-7]} (api key {key}): broker speaks {said}, "
                                      f"kcodec {ours}" + (f", capped at v{self.caps[key]}" if key in self.caps else ""))
        return version


class Negotiation:
    """The ApiVersions exchange on a connection; when done, ``versions`` (also set on the connection)."""

    def __init__(self, conn: ClientConnection, *, software_name: str = "kcodec",
                 software_version: Optional[str] = None) -> None:
        import kcodec

        self.conn = conn
        self.software = (software_name, software_version or kcodec.__version__)
        self.ours = min(ApiVersionsRequest.VALID_VERSIONS[1], conn.versions.caps.get(API_VERSIONS_KEY, 99))
        self.tried: list[int] = []
        self.versions: Optional[Versions] = None

    def start(self) -> Request:
        return self._ask(self.ours)

    def _ask(self, version: int) -> Request:
        self.tried.append(version)
        req = ApiVersionsRequest()
        if version >= 3:  # KIP-511: who we are, for the broker's metrics
            req.client_software_name, req.client_software_version = self.software
        return self.conn.send(req, version)

    def receive(self, event: Any) -> Optional[Request]:
        """The answer to the last request: the next request to send, or None (negotiated)."""
        if isinstance(event, ResponseFailed):
            raise RemoteProtocolError(f"ApiVersions v{event.request.version} response: {event.error}")
        if not isinstance(event, Response) or event.request.api_key != API_VERSIONS_KEY:
            raise TypeError(f"expected the ApiVersions response, got {event!r}")
        resp, version = event.message, event.version
        theirs = {a.api_key: a.max_version for a in resp.api_keys}.get(API_VERSIONS_KEY)
        common = min(self.ours, theirs) if theirs is not None else None
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
            # The broker answered in the v0 layout, with its own ApiVersions range if it could.
            retry = common if common is not None and common < version else 0
            if retry in self.tried:
                raise ResponseError(f"ApiVersions v{version} refused as UNSUPPORTED_VERSION", "ApiVersions",
                                    resp.error_code)
            return self._ask(retry)
        if resp.error_code:
            raise ResponseError(f"ApiVersions failed: {name_of(resp.error_code)}", "ApiVersions",
                                resp.error_code)
        if common is not None and version < common and common not in self.tried:
            return self._ask(common)  # a v0 answer revealed a better common version: use it
        self.versions = self.conn.versions.answered(
            {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}, version)
        self.conn.versions = self.versions
        return None

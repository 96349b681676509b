"""A certificate's subject as an RFC 2253 string, the way Java's ``X500Principal.getName()`` writes it:
what Kafka's default ``ssl.principal.mapping.rules`` turn into a TLS client's principal.

Reads just enough DER (no ``cryptography`` needed at run time): the subject Name of an X.509
certificate. The RDNs come most specific first (the reverse of their DER order); the RFC 2253
keywords (CN, L, ST, O, OU, C, STREET, DC, UID) give ``KEY=value`` with Java's escapes; any other
attribute is its dotted OID and ``#`` + the hex of its DER value, as Java does (``emailAddress``
becomes ``1.2.840.113549.1.9.1=#16...``).
"""

from __future__ import annotations

KEYWORDS = {"2.5.4.3": "CN", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.6": "C",
            "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID"}
# The value types Java shows as text (UTF8String, PrintableString, IA5String, T61String, GeneralString,
# BMPString); any other is hex. Java reads every one's bytes as UTF-8 (a BMPString's NULs show as \00).
_STRINGS = {0x0C, 0x13, 0x16, 0x14, 0x1B, 0x1E}
_ESCAPED = ',=+<>#;"\\'
_SEQUENCE, _SET, _OID, _CONTEXT_0 = 0x30, 0x31, 0x06, 0xA0


class DerError(ValueError):
    """The bytes are not the DER certificate this module reads."""


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the element at ``pos``."""
    if pos + 2 > len(data):
        raise DerError(f"truncated element at byte {pos}")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        if not 0 < n <= 4 or pos + n > len(data):
            raise DerError(f"bad length at byte {pos - 1}")
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    if pos + length > len(data):
        raise DerError(f"element at byte {pos} runs past the end")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, element start, value start, value end) of each element between ``start`` and ``end``."""
    out = []
    while start < end:
        tag, vstart, vend = _tlv(data, start)
        out.append((tag, start, vstart, vend))
        start = vend
    return out


def _oid(body: bytes) -> str:
    if not body or body[-1] & 0x80:
        raise DerError("empty or truncated OID")
    arcs, value = [], 0
    for b in body:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(value)
            value = 0
    first = min(arcs[0] // 40, 2)
    return ".".join(map(str, [first, arcs[0] - 40 * first, *arcs[1:]]))


def escape(value: str) -> str:
    """Java's RFC 2253 escapes: ``,=+<>#;"\\`` anywhere, NUL as ``\\00``, and every leading and trailing
    space (or CR)."""
    out = "".join("\\" + c if c in _ESCAPED else "\\00" if c == "\0" else c for c in value)
    body = out.strip(" \r")
    if body == out:
        return out
    lead = out[:len(out) - len(out.lstrip(" \r"))]
    trail = out[len(lead) + len(body):]
    return "".join("\\" + c for c in lead) + body + "".join("\\" + c for c in trail)


def _attribute(data: bytes, start: int, end: int) -> str:
    parts = _children(data, start, end)
    if len(parts) != 2 or parts[0][0] != _OID:
        raise DerError(f"attribute at byte {start} is not (OID, value)")
    (_, _, ostart, oend), (vtag, whole, vstart, vend) = parts
    oid = _oid(data[ostart:oend])
    keyword = KEYWORDS.get(oid)
    if keyword is None or vtag not in _STRINGS:
        return f"{keyword or oid}=#{data[whole:vend].hex()}"
    return f"{keyword}={escape(data[vstart:vend].decode('utf-8', 'replace'))}"


def subject_rfc2253(der: bytes) -> str:
    """The subject of a DER certificate in RFC 2253 form ("" for an empty subject); DerError if the
    bytes are not a certificate."""
    tag, start, end = _tlv(der, 0)
    if tag != _SEQUENCE:
        raise DerError("a certificate is a SEQUENCE")
    tbs = _children(der, start, end)
    if not tbs or tbs[0][0] != _SEQUENCE:
        raise DerError("no tbsCertificate")
    fields = _children(der, tbs[0][2], tbs[0][3])
    if fields and fields[0][0] == _CONTEXT_0:  # the explicit version
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject
    if len(fields) < 5 or fields[4][0] != _SEQUENCE:
        raise DerError("no subject Name in the certificate")
    rdns = []
    for rtag, _, rstart, rend in _children(der, fields[4][2], fields[4][3]):
        if rtag != _SET:
            raise DerError(f"RDN at byte {rstart} is not a SET")
        rdns.append("+".join(_attribute(der, s, e) for t, _, s, e in _children(der, rstart, rend)))
    return ",".join(reversed(rdns))

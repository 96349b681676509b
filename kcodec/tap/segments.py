"""The TCP segment in a captured packet: addresses, ports, sequence number, flags, payload.

The common layouts (Ethernet with or without VLAN tags, Linux cooked v1/v2, BSD loopback, raw IP;
IPv4, IPv6 without extension headers) are read here with struct, as dpkt reads them (an IP payload is
cut at the IP length, or runs to the packet's end when that length is 0, as with TCP segmentation
offload); anything else goes through dpkt. A capture of Kafka traffic is mostly such packets, and
reading them without dpkt's objects is several times faster.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, NamedTuple, Optional

_ETHER_IP4, _ETHER_IP6, _VLANS = 0x0800, 0x86DD, frozenset({0x8100, 0x88A8, 0x9100})
_TCP = 6
_H = struct.Struct(">H")
_TCP_HEAD = struct.Struct(">HHIIBB")  # ports, seq, ack, data offset, flags
_ETHER_IP4_HEAD = struct.Struct(">12xHBxH2xHxB2x4s4s")  # type, version and length, total, fragment, protocol, addresses
_RAW = frozenset({12, 14, 101, 228, 229})
SYN, ACK = 0x02, 0x10


class Segment(NamedTuple):
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    flags: int
    payload: bytes


class NotTcp(Exception):
    """An IP packet that carries no TCP segment, or a packet that is not IP."""


_ADDRS: dict[bytes, str] = {}  # an address's text by its bytes: a capture has few hosts and a packet two of them
_ADDRS_MAX = 4096  # bound: cleared when full (a scan of many hosts gains nothing and holds little)


def _addr(raw: bytes) -> str:
    try:
        text = _ADDRS.get(raw)
    except TypeError:  # a bytearray's slice (unhashable)
        text, raw = None, bytes(raw)
    if text is None:
        if len(_ADDRS) >= _ADDRS_MAX:
            _ADDRS.clear()
        text = _ADDRS[raw] = socket.inet_ntop(socket.AF_INET6 if len(raw) == 16 else socket.AF_INET, raw)
    return text


def _ip_offset(linktype: int, buf: bytes) -> Optional[int]:
    """Where the IP header starts, for the layouts read here; None for anything else (dpkt's turn)."""
    if linktype == 1:  # Ethernet
        pos = 12
        while len(buf) >= pos + 2:
            etype = _H.unpack_from(buf, pos)[0]
            if etype in (_ETHER_IP4, _ETHER_IP6):
                return pos + 2
            if etype not in _VLANS:
                return None
            pos += 4
        return None
    if linktype in (0, 108):  # BSD loopback: the family, in host or network order
        return 4 if len(buf) >= 5 else None
    if linktype == 113:  # Linux cooked v1
        return 16 if len(buf) >= 16 and _H.unpack_from(buf, 14)[0] in (_ETHER_IP4, _ETHER_IP6) else None
    if linktype == 276:  # Linux cooked v2
        return 20 if len(buf) >= 20 and _H.unpack_from(buf, 0)[0] in (_ETHER_IP4, _ETHER_IP6) else None
    if linktype in _RAW:
        return 0
    return None


def segment(linktype: int, buf: bytes) -> Segment:
    """The TCP segment of one packet; NotTcp when it carries none, ValueError when it does not parse."""
    at = locate(linktype, buf)
    if at is None:
        return _dpkt_segment(linktype, buf)
    src, sport, dst, dport, seq, flags, start, end = at
    return Segment(src, sport, dst, dport, seq, flags, buf[start:end])


def locate(linktype: int, buf: bytes, size: Optional[int] = None) -> Optional[tuple[str, int, str, int, int, int, int, int]]:
    """(src, sport, dst, dport, seq, flags, start, end) of the TCP segment of one packet of a common layout,
    its payload being ``buf[start:end]`` (left where it is: a reader that knows where the packet lies in
    its file can point at the payload there); None for a layout only dpkt reads (``segment`` does).
    NotTcp when it carries none, ValueError when it does not parse. ``size``: the packet's captured length
    when ``buf`` holds only its first bytes (a reader that leaves the payload in the file); None also when
    those bytes do not hold its headers (then ask again with the whole packet)."""
    n = len(buf) if size is None else size
    if linktype == 1 and len(buf) >= 54:  # Ethernet, IPv4 of 20 bytes, TCP: the general path's reads at once
        etype, vihl, total, frag, proto, src, dst = _ETHER_IP4_HEAD.unpack_from(buf)
        if etype == _ETHER_IP4 and vihl == 0x45:
            if proto != _TCP or frag & 0x1FFF:
                raise NotTcp()
            return _tcp(buf, n, src, dst, 34, 14 + total if total else n)
    ip = _ip_offset(linktype, buf)
    if ip is None or len(buf) < ip + 1:
        return None
    version = buf[ip] >> 4
    if version == 4:
        if n < ip + 20:
            raise ValueError("IPv4 header cut short")
        if len(buf) < ip + 20:
            return None
        hl = (buf[ip] & 0x0F) * 4
        if hl < 20:
            raise ValueError("invalid IPv4 header length")
        total = _H.unpack_from(buf, ip + 2)[0]
        if buf[ip + 9] != _TCP or _H.unpack_from(buf, ip + 6)[0] & 0x1FFF:  # not TCP, or a later fragment
            raise NotTcp()
        src, dst = buf[ip + 12:ip + 16], buf[ip + 16:ip + 20]
        start, end = ip + hl, (ip + total if total else n)
    elif version == 6:
        if n < ip + 40:
            raise ValueError("IPv6 header cut short")
        if len(buf) < ip + 40:
            return None
        if buf[ip + 6] != _TCP:  # extension headers, or not TCP: dpkt's turn
            return None
        plen = _H.unpack_from(buf, ip + 4)[0]
        src, dst = buf[ip + 8:ip + 24], buf[ip + 24:ip + 40]
        start, end = ip + 40, (ip + 40 + plen if plen else n)
    else:
        return None
    return _tcp(buf, n, src, dst, start, end)


def _tcp(buf: bytes, n: int, src: bytes, dst: bytes, start: int,
         end: int) -> Optional[tuple[str, int, str, int, int, int, int, int]]:
    """``locate``'s answer from the TCP header at ``start`` (the IP payload ``[start, end)``)."""
    if end - start < 20 or n < start + 20:
        raise ValueError("TCP header cut short")
    if len(buf) < start + 20:
        return None
    sport, dport, seq, _ack, off, flags = _TCP_HEAD.unpack_from(buf, start)
    doff = (off >> 4) * 4
    if doff < 20:
        raise ValueError("invalid TCP header length")
    return _addr(src), sport, _addr(dst), dport, seq, flags, min(start + doff, n), min(end, n)


def _dpkt_segment(linktype: int, buf: bytes) -> Segment:
    import dpkt

    try:
        ip = _ip_layer(linktype, buf)
    except (dpkt.UnpackError, IndexError, struct.error) as e:
        raise ValueError(str(e)) from None
    tcp = getattr(ip, "data", None)
    if not isinstance(tcp, dpkt.tcp.TCP):
        raise NotTcp()
    return Segment(_addr(ip.src), tcp.sport, _addr(ip.dst), tcp.dport, tcp.seq, tcp.flags, bytes(tcp.data))


def _ip_layer(linktype: int, buf: bytes) -> Any:
    import dpkt

    if linktype == dpkt.pcap.DLT_EN10MB:
        return dpkt.ethernet.Ethernet(buf).data
    if linktype in (dpkt.pcap.DLT_NULL, dpkt.pcap.DLT_LOOP):
        return dpkt.loopback.Loopback(buf).data
    if linktype == dpkt.pcap.DLT_LINUX_SLL:
        return dpkt.sll.SLL(buf).data
    if linktype == 276:  # LINUX_SLL2
        return dpkt.sll2.SLL2(buf).data
    if linktype in (dpkt.pcap.DLT_RAW, 101, 228, 229):
        return dpkt.ip6.IP6(buf) if buf[:1] and buf[0] >> 4 == 6 else dpkt.ip.IP(buf)
    raise ValueError(f"link type {linktype} is not supported")

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: binding=False, embedsignature=True, embedsignature.format=clinic
"""Pass 1's walk of a local pcap file in C: ``pcapsplit._pcap_heads`` (one ``pread`` of each record's header
and first bytes) and ``segments.locate`` (the TCP segment in them) as one loop, without a Python object per
packet. Its answers are those of the Python pair, which stays the reference (kcodec/tap/scan.py picks, and
tests/test_tap_scan.py holds the two equal): where the Python pair would return None (a layout only dpkt
reads, headers past the bytes read) or stop (a record cut short, the file's end), the walk stops at that
packet and leaves it to Python, which reads it as before and hands the walk back the next one.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uint16_t, uint32_t

cdef extern from *:
    """
    #ifdef _WIN32
    /* no pread: the walk hands every packet to Python (whose reader needs os.pread too) */
    static Py_ssize_t kc_pread(int fd, void* buf, size_t n, long long at) { return -2; }
    #else
    #include <unistd.h>
    static Py_ssize_t kc_pread(int fd, void* buf, size_t n, long long at) {
        return (Py_ssize_t)pread(fd, buf, n, (off_t)at);
    }
    #endif
    """
    Py_ssize_t kc_pread(int fd, void* buf, size_t n, long long at) nogil

cdef enum:
    TCP = 6
    SYN = 0x02
    # what locate() made of a packet
    FOUND = 0
    NOT_TCP = 1  # NotTcp
    INVALID = 2  # ValueError
    PYTHON = 3  # None: dpkt's layout, or headers past the bytes read


cdef inline uint32_t u32(const unsigned char* p, bint big) noexcept nogil:
    if big:
        return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]
    return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | p[0]


cdef inline uint16_t be16(const unsigned char* p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]


cdef inline bint is_ip(uint16_t etype) noexcept nogil:
    return etype == 0x0800 or etype == 0x86DD


cdef Py_ssize_t ip_offset(int linktype, const unsigned char* b, Py_ssize_t blen) noexcept nogil:
    """segments._ip_offset: where the IP header starts, or -1."""
    cdef Py_ssize_t pos
    cdef uint16_t etype
    if linktype == 1:  # Ethernet, VLAN tags skipped
        pos = 12
        while blen >= pos + 2:
            etype = be16(b + pos)
            if is_ip(etype):
                return pos + 2
            if etype != 0x8100 and etype != 0x88A8 and etype != 0x9100:
                return -1
            pos += 4
        return -1
    if linktype == 0 or linktype == 108:  # BSD loopback
        return 4 if blen >= 5 else -1
    if linktype == 113:  # Linux cooked v1
        return 16 if blen >= 16 and is_ip(be16(b + 14)) else -1
    if linktype == 276:  # Linux cooked v2
        return 20 if blen >= 20 and is_ip(be16(b)) else -1
    if linktype == 12 or linktype == 14 or linktype == 101 or linktype == 228 or linktype == 229:
        return 0
    return -1


cdef int locate(int linktype, const unsigned char* b, Py_ssize_t blen, Py_ssize_t n, Py_ssize_t* addr,
                int* alen, uint16_t* sport, uint16_t* dport, uint32_t* seq, int* flags, Py_ssize_t* start,
                Py_ssize_t* end) noexcept nogil:
    """segments.locate of a packet's first ``blen`` bytes (``n`` captured): FOUND (the source address at
    ``addr``, the destination right after it, ``alen`` bytes each), NOT_TCP, INVALID or PYTHON."""
    cdef Py_ssize_t ip = ip_offset(linktype, b, blen), hl, s, e, doff
    cdef int version
    cdef uint16_t total
    if ip < 0 or blen < ip + 1:
        return PYTHON
    version = b[ip] >> 4
    if version == 4:
        if n < ip + 20:
            return INVALID
        if blen < ip + 20:
            return PYTHON
        hl = (b[ip] & 0x0F) * 4
        if hl < 20:
            return INVALID
        total = be16(b + ip + 2)
        if b[ip + 9] != TCP or be16(b + ip + 6) & 0x1FFF:  # not TCP, or a later fragment
            return NOT_TCP
        addr[0], alen[0] = ip + 12, 4
        s, e = ip + hl, (ip + total if total else n)
    elif version == 6:
        if n < ip + 40:
            return INVALID
        if blen < ip + 40:
            return PYTHON
        if b[ip + 6] != TCP:  # extension headers, or not TCP: dpkt's turn
            return PYTHON
        total = be16(b + ip + 4)
        addr[0], alen[0] = ip + 8, 16
        s, e = ip + 40, (ip + 40 + total if total else n)
    else:
        return PYTHON
    # segments._tcp
    if e - s < 20 or n < s + 20:
        return INVALID
    if blen < s + 20:
        return PYTHON
    doff = (b[s + 12] >> 4) * 4
    if doff < 20:
        return INVALID
    sport[0], dport[0] = be16(b + s), be16(b + s + 2)
    seq[0] = (<uint32_t>b[s + 4] << 24) | (<uint32_t>b[s + 5] << 16) | (<uint32_t>b[s + 6] << 8) | b[s + 7]
    flags[0] = b[s + 13]
    start[0], end[0] = min(s + doff, n), min(e, n)
    return FOUND


cdef object address(const unsigned char* raw, int alen, dict addrs, object addr_of):
    """The address's text, through ``addrs`` (segments._ADDRS), made by ``addr_of`` (segments._addr) when new."""
    key = PyBytes_FromStringAndSize(<const char*>raw, alen)
    text = addrs.get(key)
    return addr_of(key) if text is None else text


def walk(int fd, long long pos, long long end, long long size, bint big, long long unit_ns, int linktype,
         Py_ssize_t head, Py_ssize_t most, dict addrs, object addr_of):
    """The pcap records of ``fd`` from ``pos`` (a record's start) while before ``end``, each read as
    ``_pcap_heads`` reads it (``size``: the file's; ``big``: its byte order; ``unit_ns``: its time unit;
    ``head``: the bytes read of each packet) and located as ``locate`` locates it. Returns (pos, packets,
    tcp, not_tcp, undecodable, rows, left): where it stopped, the records walked there, those that carried
    TCP, no TCP or undecodable headers, and a row for each TCP segment with bytes or a SYN: (offset, ts_ns,
    src, sport, dst, dport, seq, flags, None, at, length), its payload ``length`` bytes at ``at`` in the file. It
    stops after ``most`` rows, at ``end``, or at a record Python must read (``left`` True): one the file
    cuts, or whose segment ``locate`` would leave to dpkt or read again whole."""
    cdef unsigned char* buf = <unsigned char*>PyMem_Malloc(16 + head)
    cdef Py_ssize_t got, blen, addr = 0, start = 0, stop = 0
    cdef uint32_t caplen, seq = 0
    cdef uint16_t sport = 0, dport = 0
    cdef int alen = 0, flags = 0, what
    cdef int64_t ts
    cdef Py_ssize_t packets = 0, tcp = 0, not_tcp = 0, undecodable = 0
    cdef bint left = False
    cdef list rows = []
    if buf == NULL:
        raise MemoryError()
    try:
        while pos < end and len(rows) < most:
            if pos + 1 > size:
                left = True
                break
            got = kc_pread(fd, buf, 16 + head, pos)
            if got < 16:  # an error, a header cut short (or no pread): Python's reader says which
                left = True
                break
            caplen = u32(buf + 8, big)
            if pos + 16 + <long long>caplen > size:
                left = True
                break
            blen = min(got - 16, <Py_ssize_t>caplen)
            what = locate(linktype, buf + 16, blen, caplen, &addr, &alen, &sport, &dport, &seq, &flags, &start,
                          &stop)
            if what == PYTHON:
                left = True
                break
            packets += 1
            if what == NOT_TCP:
                not_tcp += 1
            elif what == INVALID:
                undecodable += 1
            else:
                tcp += 1
                if stop > start or flags & SYN:  # a bare ACK, FIN or RST carries nothing for reassembly
                    ts = <int64_t>u32(buf, big) * 1_000_000_000 + <int64_t>u32(buf + 4, big) * unit_ns
                    rows.append((pos, ts, address(buf + 16 + addr, alen, addrs, addr_of), sport,
                                 address(buf + 16 + addr + alen, alen, addrs, addr_of), dport, seq, flags, None,
                                 pos + 16 + start, stop - start if stop > start else 0))
            pos += 16 + caplen
    finally:
        PyMem_Free(buf)
    return pos, packets, tcp, not_tcp, undecodable, rows, left

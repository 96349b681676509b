# Typed signatures of kcodec/tap/_cscan.pyx, pass 1's C walk of a local pcap (kept in step with it by
# tests/test_typing.py); its reference is pcapsplit._pcap_heads with segments.locate (kcodec/tap/scan.py).

from typing import Callable, Optional

def walk(fd: int, pos: int, end: int, size: int, big: bool, unit_ns: int, linktype: int, head: int, most: int,
         addrs: dict[bytes, str], addr_of: Callable[[bytes], str]
         ) -> tuple[int, int, int, int, int, list[tuple[int, int, str, int, str, int, int, int, Optional[bytes], int, int]],
                    bool]: ...

"""`kcodec tap` records TLS-free traffic only: a TLS client or a TLS upstream ends the connection with a
reason that says so (recorded in the capture), instead of garbage frames."""

from __future__ import annotations

import asyncio

import pytest

from kcodec_broker import Cluster
from kcodec.client import Client, ClientError
from kcodec.tap import capture
from kcodec.tap.proxy import Tap


def _reasons(out) -> list[str]:
    return [r.payload.decode() for path in sorted(out.glob("*.kcap")) for r in capture.read_capture(path)[1]
            if r.kind == capture.CLOSED]


async def _through_tap(upstream: tuple[str, int], out, **client_options) -> str:
    tap = Tap(("127.0.0.1", 0), upstream, out)
    await tap.start()
    try:
        with pytest.raises(ClientError) as e:
            async with Client(f"127.0.0.1:{tap.port}", connect_timeout=5, request_timeout=5, **client_options):
                pass
        await asyncio.sleep(0.05)  # the tap records the close
        return str(e.value)
    finally:
        await tap.close()


def test_a_tls_upstream_is_named_as_the_likely_cause(test_certs, tmp_path):
    with Cluster(tls=(test_certs.cert, test_certs.key), system_topic_partitions=1) as c:
        error = asyncio.run(_through_tap(c.addresses[0], tmp_path))
    assert "closed the connection" in error
    assert _reasons(tmp_path) == ["upstream closed before answering (a TLS listener? kcodec tap forwards "
                                  "TLS-free traffic only)"]


def test_a_tls_client_is_refused(test_certs, tmp_path):
    with Cluster(system_topic_partitions=1) as c:
        error = asyncio.run(_through_tap(c.addresses[0], tmp_path, tls=test_certs.ca))
    assert "TLS handshake failed" in error
    [reason] = _reasons(tmp_path)
    assert reason.startswith("ConnectionError: the client speaks TLS; kcodec tap forwards TLS-free traffic only")

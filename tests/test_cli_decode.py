"""`kcodec decode`: a frame (file, standard input, hex text) as JSON; unreadable input and bad frames
are one-line errors with an exit status, never a traceback."""

from __future__ import annotations

import io
import json
import sys

import pytest

import kcodec
from kcodec.cli import main
from kcodec.messages import ApiVersionsResponse, SaslAuthenticateRequest


def request_frame() -> bytes:
    return kcodec.encode_request(SaslAuthenticateRequest(auth_bytes=b"\x00user\x00pw"), 2, correlation_id=7,
                                 client_id="cli")


def test_a_request_file_as_json(tmp_path, capsys):
    path = tmp_path / "frame.bin"
    path.write_bytes(request_frame())
    assert main(["decode", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["type"] == "SaslAuthenticateRequest" and out["header"]["correlation_id"] == 7
    assert out["body"] == {"auth_bytes": "AHVzZXIAcHc="}  # bytes as base64


def test_standard_input_and_hex_text(monkeypatch, capsys):
    spaced = " ".join(request_frame()[i:i + 8].hex() for i in range(0, len(request_frame()), 8)) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(spaced.encode())))
    assert main(["decode", "-", "--hex"]) == 0
    assert json.loads(capsys.readouterr().out)["header"]["client_id"] == "cli"


def test_a_response_needs_its_api_key_and_version(tmp_path, capsys):
    body = kcodec.encode(ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, max_version=3)]), 0)
    path = tmp_path / "response.bin"
    path.write_bytes(len(body + b"\x00\x00\x00\x05").to_bytes(4, "big") + b"\x00\x00\x00\x05" + body)
    assert main(["decode", str(path), "--response"]) == 2
    assert "needs --api-key and --api-version" in capsys.readouterr().err
    assert main(["decode", str(path), "--response", "--api-key", "18", "--api-version", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["type"] == "ApiVersionsResponse" and out["body"]["api_keys"][0]["max_version"] == 3


@pytest.mark.parametrize("content, hex_text, expected", [
    (None, False, "cannot read"),          # no such file
    (b"zz 00", True, "is not hex text"),
    (b"\x00\x00\x00\x02\x00", False, "error:"),  # a frame that ends early: kcodec's DecodeError, one line
])
def test_bad_input_is_one_line_and_a_status(tmp_path, capsys, content, hex_text, expected):
    path = tmp_path / "input"
    if content is not None:
        path.write_bytes(content)
    status = main(["decode", str(path)] + (["--hex"] if hex_text else []))
    err = capsys.readouterr().err
    assert status in (1, 2) and expected in err and "Traceback" not in err and err.count("\n") == 1

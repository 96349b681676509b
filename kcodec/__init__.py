"""kcodec: the Kafka wire protocol for Python, every API and version, a Cython hot path over any buffer.

    import kcodec
    from kcodec.messages import MetadataResponse
    data = kcodec.encode(msg, version=12)
    msg = kcodec.decode(MetadataResponse, data, version=12)

Importing kcodec is cheap: definitions load, message classes import and programs compile on first use.
"""

from __future__ import annotations

from .core.api import decode, decode_from, encode, encode_buffers, encode_into, encoded_size, message_class
from .core.backend import BACKEND
from .buffers import Buffers
from .convert import from_dict, to_dict
from .exceptions import DecodeError, EncodeError, KcodecError, TrailingBytesWarning, UnsupportedVersionError
from .framing import (FrameSplitter, RequestHeaderFields, ResponseHeaderFields, decode_request, decode_request_header,
                      decode_response, encode_request, encode_request_buffers, encode_response,
                      encode_response_buffers, peek_request_header, peek_response_header, request_header_version,
                      response_header_version)

__version__ = "0.1.0"

__all__ = [
    "BACKEND", "Buffers", "DecodeError", "EncodeError", "FrameSplitter", "KcodecError", "RequestHeaderFields",
    "ResponseHeaderFields", "TrailingBytesWarning", "UnsupportedVersionError", "decode", "decode_from", "decode_request", "decode_request_header",
    "decode_response", "encode", "encode_buffers", "encode_into", "encode_request", "encode_request_buffers",
    "encode_response", "encode_response_buffers", "encoded_size", "from_dict", "message_class",
    "peek_request_header", "peek_response_header", "request_header_version", "response_header_version", "to_dict",
]

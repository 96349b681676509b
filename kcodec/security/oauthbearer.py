"""OAUTHBEARER lives in kcodec.protocol.sasl.oauthbearer (the sans-I/O protocol layer); this module re-exports
it for kcodec broker, which moves onto kcodec.protocol next (issue 29). New code imports
kcodec.protocol.sasl.oauthbearer."""

from __future__ import annotations

from kcodec.protocol.sasl.oauthbearer import (CLIENT_ABORT, DEFAULT_CLOCK_SKEW, KVSEP, TokenClaims, client_message,
                                              error_challenge, parse_client_message, unsecured_token,
                                              validate_unsecured_token)

__all__ = ["CLIENT_ABORT", "DEFAULT_CLOCK_SKEW", "KVSEP", "TokenClaims", "client_message", "error_challenge",
           "parse_client_message", "unsecured_token", "validate_unsecured_token"]

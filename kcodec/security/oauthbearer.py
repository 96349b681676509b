"""Deprecated: OAUTHBEARER lives in kcodec.protocol.sasl.oauthbearer (the sans-I/O protocol layer). This module
re-exports it, warns when imported, and goes in kcodec 0.3.0."""

from __future__ import annotations

import warnings

from kcodec.protocol.sasl.oauthbearer import (CLIENT_ABORT, DEFAULT_CLOCK_SKEW, KVSEP, TokenClaims, client_message,
                                              error_challenge, parse_client_message, unsecured_token,
                                              validate_unsecured_token)

warnings.warn("kcodec.security.oauthbearer is deprecated and goes in kcodec 0.3.0: import "
              "kcodec.protocol.sasl.oauthbearer", DeprecationWarning, stacklevel=2)

__all__ = ["CLIENT_ABORT", "DEFAULT_CLOCK_SKEW", "KVSEP", "TokenClaims", "client_message", "error_challenge",
           "parse_client_message", "unsecured_token", "validate_unsecured_token"]

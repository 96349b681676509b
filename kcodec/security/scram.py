"""Deprecated: SCRAM lives in kcodec.protocol.sasl.scram (the sans-I/O protocol layer). This module re-exports
it, warns when imported, and goes in kcodec 0.3.0."""

from __future__ import annotations

import warnings

from kcodec.protocol.sasl.scram import (DEFAULT_ITERATIONS, HASHES, MAX_CLIENT_ITERATIONS, MAX_ITERATIONS,
                                        MECHANISM_IDS, MECHANISM_NAMES, MIN_ITERATIONS, ScramClient, ScramCredential,
                                        ScramServer, hash_name, salted_password)

warnings.warn("kcodec.security.scram is deprecated and goes in kcodec 0.3.0: import kcodec.protocol.sasl.scram",
              DeprecationWarning, stacklevel=2)

__all__ = ["DEFAULT_ITERATIONS", "HASHES", "MAX_CLIENT_ITERATIONS", "MAX_ITERATIONS", "MECHANISM_IDS",
           "MECHANISM_NAMES", "MIN_ITERATIONS", "ScramClient", "ScramCredential", "ScramServer", "hash_name",
           "salted_password"]

"""SCRAM lives in kcodec.protocol.sasl.scram (the sans-I/O protocol layer); this module re-exports it for
kcodec broker, which moves onto kcodec.protocol next (issue 29). New code imports kcodec.protocol.sasl.scram."""

from __future__ import annotations

from kcodec.protocol.sasl.scram import (DEFAULT_ITERATIONS, HASHES, MAX_CLIENT_ITERATIONS, MAX_ITERATIONS,
                                        MECHANISM_IDS, MECHANISM_NAMES, MIN_ITERATIONS, ScramClient, ScramCredential,
                                        ScramServer, hash_name, salted_password)

__all__ = ["DEFAULT_ITERATIONS", "HASHES", "MAX_CLIENT_ITERATIONS", "MAX_ITERATIONS", "MECHANISM_IDS",
           "MECHANISM_NAMES", "MIN_ITERATIONS", "ScramClient", "ScramCredential", "ScramServer", "hash_name",
           "salted_password"]

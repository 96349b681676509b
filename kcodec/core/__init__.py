"""The codec's core, internal: the IR compiled from the definitions (``ir``), the two backends that run it
(the reference ``pure`` and the Cython ``_fast``), which of them runs (``backend``, ``extension``) and the
API's implementation (``api``). kcodec's public modules (``kcodec``, ``kcodec.messages``, ``kcodec.framing``,
``kcodec.protocol`` ...) stand on it; nothing outside the codec imports it (tests/test_layers.py)."""

"""The old SASL names in kcodec.security still work and warn, naming their replacement (docs/versioning.md)."""

from __future__ import annotations

import importlib
import sys

import pytest

import kcodec.protocol
import kcodec.protocol.sasl.oauthbearer
import kcodec.protocol.sasl.scram


@pytest.mark.parametrize("old, new, name", [
    ("kcodec.security.scram", kcodec.protocol.sasl.scram, "ScramClient"),
    ("kcodec.security.oauthbearer", kcodec.protocol.sasl.oauthbearer, "unsecured_token"),
])
def test_the_old_sasl_modules_warn_and_re_export(monkeypatch, old, new, name):
    monkeypatch.delitem(sys.modules, old, raising=False)  # imported afresh: the warning comes at import
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated and goes in kcodec 0\.3\.0: import {new.__name__}"):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(new, name)


def test_the_old_sasl_error_warns_and_is_the_protocols():
    import kcodec.security
    with pytest.warns(DeprecationWarning, match="use kcodec.protocol.SaslError"):
        assert kcodec.security.SaslError is kcodec.protocol.SaslError
    with pytest.raises(AttributeError):
        kcodec.security.nothing_here  # noqa: B018

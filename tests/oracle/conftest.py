"""The Java oracle's session fixture: Maven builds tests/oracle once (when a source changed), then one JVM
per Kafka line (4.4, and 3.9 for the versions Kafka 4.0 removed) serves every oracle test; both are
stopped by pid at the end. Without java or mvn the tests skip (fail in CI: tests/needs.py)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Iterator, Optional

import pytest
from needs import need_tool
from oracle_jvm import OracleJVM, build, started

import tally


class Oracle:
    """The running JVMs by line, what each line's classes support, and which line serves a version."""

    def __init__(self, jvms: dict[str, OracleJVM], catalogs: dict[str, dict[str, Any]]) -> None:
        self.jvms = jvms
        self.catalogs = catalogs

    def versions(self, line: str, kafka_class: str) -> Optional[range]:
        """The versions of one of Kafka's classes in a line (None when the line lacks it)."""
        found = self.catalogs[line]["classes"].get(kafka_class)
        return None if found is None else range(found["lowest"], found["highest"] + 1)

    def line_for(self, kafka_class: str, version: int) -> Optional[str]:
        """4.4 when its class has the version, else 3.9 when its class has it, else None."""
        for line in self.jvms:
            vs = self.versions(line, kafka_class)
            if vs is not None and version in vs:
                return line
        return None


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    from kafka_json import kafka_class

    from kcodec import definitions

    java = need_tool("java", "Java 17+; Debian: apt-get install openjdk-17-jdk-headless")
    mvn = need_tool("mvn", "Apache Maven; Debian: apt-get install maven")
    classpaths = build(mvn)
    logs = tmp_path_factory.mktemp("oracle")
    classes = sorted({kafka_class(n) for n in definitions.names()})
    with ExitStack() as stack:
        jvms = {line: stack.enter_context(started(line, java, cp, logs / f"kafka-{line}.log"))
                for line, cp in classpaths.items()}
        catalogs = {line: jvm.call("catalog", classes=classes) for line, jvm in jvms.items()}
        yield Oracle(jvms, catalogs)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if tally.COUNTS:
        terminalreporter.write_line("Java oracle: " + tally.summary())

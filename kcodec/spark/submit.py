"""spark-submit's entry point for `kcodec analyze` (a script with absolute imports only, so that Spark can
run it as a file):

    spark-submit --master spark://HOST:7077 --conf spark.pyspark.python=/opt/kcodec/bin/python \\
      --driver-java-options "-Dlog4j2.configurationFile=$(python -m kcodec.spark.submit --log4j)" \\
      "$(python -m kcodec.spark.submit --path)" 'hdfs:///kafka/captures/*.pcap' --out ./report

Arguments are `kcodec analyze`'s (``--master`` left out: spark-submit's is used). ``--path`` prints this
script's path, ``--log4j`` the URI of kcodec's quiet log4j2 configuration (errors only): spark-submit
starts the driver's JVM before this script runs, so that is the way to keep Spark's log lines off the
console from the start; without it the job still sets ``spark.log.level=ERROR`` as it starts (unless
``-v``), and only Spark's first lines show.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["--path"]:
        print(__file__)
        return 0
    if argv[:1] == ["--log4j"]:
        from kcodec.spark.pipeline import QUIET_LOG4J2

        print(QUIET_LOG4J2.as_uri())
        return 0
    from kcodec.spark import analyze

    return analyze.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``python -m kcodec_broker``: the ``kcodec-broker`` command."""

import sys

from .cli import main

sys.exit(main())

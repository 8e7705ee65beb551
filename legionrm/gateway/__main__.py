"""``python -m legionrm.gateway``: the gateway process (see :mod:`legionrm.gateway.process`)."""

import sys

from legionrm.gateway.process import main

sys.exit(main())

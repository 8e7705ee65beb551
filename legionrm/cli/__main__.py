"""``python -m legionrm.cli``: the same as the ``legionrm`` command."""

import sys

from legionrm.cli import main

sys.exit(main())

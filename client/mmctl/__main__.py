"""``python -m mmctl``: the same as the ``mmctl`` console script."""

import sys

from mmctl.cli.main import main

sys.exit(main())

"""``python -m ember train`` is the ``ember`` command."""
import sys

from .cli import main

sys.exit(main())

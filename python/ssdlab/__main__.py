"""``python -m ssdlab``: the ``ssdlab`` command, through its entry point (stop handlers first,
then the imports: :mod:`ssdlab.entry`)."""
import sys

from ssdlab.entry import main

sys.exit(main())

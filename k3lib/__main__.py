import sys

from k3lib.cli import main

sys.exit(main())

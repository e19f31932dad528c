import sys

from qareport.cli import main

sys.exit(main())

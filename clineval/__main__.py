import sys

from clineval.cli import main

sys.exit(main())

import sys

from clineval.entry import main

sys.exit(main())

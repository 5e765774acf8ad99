import sys

from thoughtvec.cli import main

sys.exit(main())

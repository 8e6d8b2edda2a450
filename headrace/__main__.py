import sys

from headrace.cli import main

sys.exit(main())

"""Subcommands of ``thoughtvec``. Each module registers an argparse parser and imports its heavy
dependencies only inside the handler, so ``thoughtvec --help`` and ``thoughtvec serve`` need no torch."""

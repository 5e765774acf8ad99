"""The parsers of the training subcommands of ``thoughtvec``. Each module registers an argparse parser and names
its handler in ``training/handlers/`` by string, so ``thoughtvec --help`` and ``thoughtvec serve`` need no torch."""

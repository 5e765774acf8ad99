"""The ``thoughtvec`` command: the one place that knows both halves of the project.

``training/`` builds bundles and ``service/`` serves them; neither imports the other's commands.
This package only composes their subcommands into one entry point.
"""

"""The handlers of the training subcommands (their parsers: ``training/commands/``), imported by
``thoughtvec.service.cli.dispatch`` when their command runs; they import what they need at their top."""

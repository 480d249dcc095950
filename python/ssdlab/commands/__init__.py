"""CLI subcommand modules. Each has ``register(subparsers, add_target_args)`` and is listed, with
the commands it adds, in ``ssdlab.cli.COMMAND_MODULES``."""

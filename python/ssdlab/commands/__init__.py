"""CLI subcommand modules. Each has ``register(subparsers, add_target_args)`` and is listed in
``ssdlab.cli.COMMAND_MODULES``."""

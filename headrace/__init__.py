"""headrace: the `headrace` command, which joins each package's subcommands."""

"""The ``routeplan`` command line: one module per subcommand, ``main`` dispatches."""

"""Simulation: replay a message stream through online key-routing schemes and measure them.

``events`` reads or synthesises the stream, ``online`` holds the schemes (one message at a time,
as sources route), ``replay`` runs them and collects metrics (``routeplan.plots.compare_png``
draws them, a layer up); ``generate`` writes synthetic stream logs for the pipeline.
"""

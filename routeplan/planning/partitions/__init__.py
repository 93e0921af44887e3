"""Partition assignment: partitions onto consumers by bin packing with migration cost (paper 002).

``packing`` runs one algorithm on arrays; ``heuristics`` and ``exact`` are the algorithms;
``scores`` (Rscore, CBS, lower bound), ``latency``, ``measurements`` (Eq. 15) and ``replay`` are
the paper's evaluation; ``strategies`` wraps each algorithm as a registered strategy.
"""

"""Planning: strategies turn loads into a new routing table under a budget.

``contract`` is the one interface every strategy implements, ``registry`` selects them by name.
Strategies are grouped by what they plan:

* ``keyrouting/`` — key groups (and hot keys) onto workers: kg, sg, pkg, dchoices, potc, porc,
  cg, ring, chbl (papers 000, 001, 003);
* ``reassign/`` — moving whole key groups between workers under a move budget: flux, milp,
  albic (paper 004);
* ``partitions/`` — partitions onto consumers by bin packing: the Any Fit family, Algorithm 1,
  Kafka's assignors and the exact MILP (paper 002).

``metrics`` scores a table against loads; ``solver`` runs the MILP solvers.
"""

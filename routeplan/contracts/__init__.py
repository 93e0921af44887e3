"""The documents routeplan exchanges, read one way: their JSON Schemas (``schemas.py``, the
contract with users in ``schemas/``) and the bounded JSON reader every reader parses with
(``documents.py``). The bottom of the library: the model, the files reader, the routing store,
the HTTP API, the client and the Spark jobs all read through it, and it imports only
``routeplan.settings`` (where ``schemas/`` is) and ``routeplan.storage``."""

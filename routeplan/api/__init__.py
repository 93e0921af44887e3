"""routeplan's HTTP API (``routeplan serve``, the Airflow plugin): ``app.py`` builds the FastAPI
app (``create_app``) and serves it (``serve``). Its own top-level package, above everything it
answers from — the routing store and diffs (``routeplan.publishing``), the plots, the streams —
and below only the CLI."""

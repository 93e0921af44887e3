"""Planning a stream: the use case the nightly job, the CLI and the HTTP API share.

``policy`` reads the deployment's per-stream planning policies (``config/streams.yaml``);
``auto`` chooses among candidate plans by a policy's goals; ``service.plan_stream`` plans one
stream by its policy — every candidate, the winner and why, the baseline of its kind, the rule
that a rerun on the same loads keeps LATEST — from plain values, and returns a ``StreamPlan``.
Callers adapt their data to it: ``jobs/plan.py`` (Delta rows), ``routeplan plan --policies``
(files) and the HTTP API's dry run (a request body).

The closed loop lives here too: ``attribution`` says which version was in force on a day,
``outcomes`` what it did against its prediction, and ``loop_state`` keeps each stream's state
across nights with the regression guard's rules as functions of it (``jobs/guard.py`` acts).
"""

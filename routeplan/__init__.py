"""routeplan: plan how keyed streams are spread over workers.

The domain library. It knows nothing of Spark or Airflow: jobs adapt data to it.
"""

__version__ = "0.1.0"

"""routeplan's client: route keys and read partition assignments by published routing tables.

    import os
    from routeplan_client import Router

    with Router.open("https://routeplan.example", "clicks",
                     token=os.environ["ROUTEPLAN_API_TOKEN"], reload_interval=30) as router:
        worker = router.route("user-42")       # the worker the table sends user-42 to
        version = router.version               # stamp it on the record: routing_version

``Router`` (key_routing tables), ``Assignment`` (partition_assignment tables), the tables
themselves (``RoutingTable``, ``PartitionAssignment``, ``table_from_document``), the hash
(``key_group``); Kafka adapters in ``routeplan_client.kafka`` (partitioners for kafka-python and
confluent-kafka, the ``routing_version`` header, and the consumer group ``assignor``).
Dependencies: mmh3 and httpx; fsspec for object stores (extra ``fsspec``), kafka-python for
``routeplan_client.kafka``'s assignor (extra ``kafka``); numpy, when installed, speeds up
``route_many``. Every client (Python, Java, Go) implements the same routing specification,
whose version is ``ROUTING_SPEC_VERSION``.
"""

from routeplan_client.hashing import key_group, key_hash
from routeplan_client.names import InvalidNameError
from routeplan_client.router import Assignment, Router
from routeplan_client.tables import (
    PartitionAssignment,
    RoutingTable,
    Worker,
    table_from_document,
)

__version__ = "0.2.0"  # the version of all three clients (clients/VERSION)
ROUTING_SPEC_VERSION = "1"  # the routing specification's version this client implements

__all__ = [
    "ROUTING_SPEC_VERSION",
    "Assignment",
    "InvalidNameError",
    "PartitionAssignment",
    "Router",
    "RoutingTable",
    "Worker",
    "__version__",
    "key_group",
    "key_hash",
    "table_from_document",
]

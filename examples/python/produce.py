"""Send keyed records to Kafka, each to the partition its stream's routing table names, stamped
with the version of the table that routed it (the ``routing_version`` header, by which the next
night's outcomes judge each version).

    pip install 'routeplan-client[kafka]'
    export ROUTEPLAN_API_TOKEN=…      # the HTTP API's bearer token (unused for a directory)
    printf 'user-1\\nuser-2\\n' | \\
        python produce.py http://localhost:8080/routeplan clicks localhost:9092

Arguments: where the tables are (the HTTP API's base URL, a routing store directory or an
``s3://`` URL), the stream (also the topic), Kafka's bootstrap servers. One key per stdin line.
"""

from __future__ import annotations

import os
import sys

from kafka import KafkaProducer

from routeplan_client import Router
from routeplan_client.kafka import KafkaPythonPartitioner, version_header


def main(tables: str, stream: str, bootstrap: str) -> int:
    token = os.environ.get("ROUTEPLAN_API_TOKEN")  # sent to the HTTP API as a bearer token
    with Router.open(tables, stream, token=token, reload_interval=30) as router:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            key_serializer=str.encode,
            value_serializer=str.encode,
            partitioner=KafkaPythonPartitioner(router),  # the partition of router.route(key)
        )
        sent = 0
        for line in sys.stdin:
            key = line.rstrip("\n")
            stamp = [version_header(router)]  # ("routing_version", b"<version>")
            producer.send(stream, key=key, value=f"event of {key}", headers=stamp)
            sent += 1
        producer.flush()
        producer.close()
    print(f"sent {sent} records to {stream} by v{router.version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))

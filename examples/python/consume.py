"""Read a topic as one member of a consumer group whose partitions its stream's
``partition_assignment`` table assigns, following each new version; prints one line per record,
``<consumer> <partition> <key>``, and each assignment as ``<consumer> assigned [<partitions>]``.

    pip install 'routeplan-client[kafka]'
    export ROUTEPLAN_API_TOKEN=…      # the HTTP API's bearer token (unused for a directory)
    python consume.py http://localhost:8080/routeplan orders localhost:9092 orders-readers c3

Arguments: where the tables are, the stream (also the topic), Kafka's bootstrap servers, the
group, this member's consumer name in the plan. Runs until interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import os
import signal
import sys

from kafka import KafkaConsumer

from routeplan_client.kafka import Rebalancer, assignor


def main(tables: str, stream: str, bootstrap: str, group: str, name: str) -> int:
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    token = os.environ.get("ROUTEPLAN_API_TOKEN")  # sent to the HTTP API as a bearer token
    Assignor = assignor(tables, stream, token=token, consumer=name)  # noqa: N806 (a class)
    rebalancer = Rebalancer(Assignor, reload_interval=30)  # before subscribe
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[Assignor],
        key_deserializer=bytes.decode,
        auto_offset_reset="earliest",
    )
    consumer.subscribe([stream])
    held = None
    try:
        while not stop:
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    print(name, record.partition, record.key, flush=True)
            rebalancer.maybe_rebalance(consumer)  # in the thread that polls
            mine = sorted(tp.partition for tp in consumer.assignment())
            if mine != held:
                print(name, "assigned", mine, flush=True)
                held = mine
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))

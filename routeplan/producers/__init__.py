"""Producers: the client that routes messages by a published table, and the Kafka adapters."""

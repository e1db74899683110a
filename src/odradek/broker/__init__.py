"""The broker: Kafka-protocol server, router and one handler per API, partitions and purgatory,
topic and replica managers, the group coordinator, assembled by ``app.BrokerApp``."""

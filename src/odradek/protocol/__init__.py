"""Sans-I/O Kafka wire protocol (issue 3)."""

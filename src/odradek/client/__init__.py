"""Python Kafka clients (later issue)."""

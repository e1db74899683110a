"""One module per Kafka API: each exposes ``API_KEY`` and ``handle(ctx, request)``."""

"""odradek's producer: a facade over a record accumulator and a sender thread.

Modules, one concern each: ``record`` (ProducerRecord, RecordMetadata), ``future`` (per-batch
results, per-record futures), ``serializers``, ``partitioners``, ``interceptors``, ``batch``
(one partition's batch), ``buffer_pool`` (``buffer.memory``), ``accumulator`` (the queues of
batches per partition).
"""

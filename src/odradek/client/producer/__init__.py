"""odradek's producer: a facade over a record accumulator and a sender thread.

Modules, one concern each: ``producer`` (the ``Producer`` facade: configuration, the send
path, flush, close), ``sender`` (the background thread: Produce requests, responses, retries,
expiry), ``accumulator`` (the queues of batches per partition), ``batch`` (one partition's
batch), ``buffer_pool`` (``buffer.memory``), ``future`` (per-batch results, per-record
futures), ``record`` (ProducerRecord, RecordMetadata), ``serializers``, ``partitioners``,
``interceptors``, ``config`` (the producer's keys), ``produce_codec`` (the hand-written
Produce request/response codec).
"""

from odradek.client.producer.future import RecordFuture
from odradek.client.producer.producer import Callback, Producer
from odradek.client.producer.record import ProducerRecord, RecordMetadata

__all__ = ["Callback", "Producer", "ProducerRecord", "RecordFuture", "RecordMetadata"]

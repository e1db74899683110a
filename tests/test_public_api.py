"""The public API of ``odradek``: exactly the names below, each importable from the package
root. A change to this list is a change to the public API: make it on purpose (and say so in
the changelog), never as a side effect of moving code."""

from __future__ import annotations

import odradek

PUBLIC_API = [
    "AdminClient",
    "Blacklist",
    "Broker",
    "Consumer",
    "ConsumerConnector",
    "ConsumerRecord",
    "ConsumerTimeoutError",
    "MessageAndMetadata",
    "MessageStream",
    "NewTopic",
    "OffsetAndMetadata",
    "Producer",
    "ProducerRecord",
    "RecordMetadata",
    "SimpleConsumer",
    "TopicFilter",
    "TopicPartition",
    "Whitelist",
    "__version__",
]


def test_all_lists_exactly_the_public_api() -> None:
    assert sorted(odradek.__all__) == sorted(PUBLIC_API)
    assert len(set(odradek.__all__)) == len(odradek.__all__)


def test_every_public_name_is_defined() -> None:
    missing = [name for name in PUBLIC_API if not hasattr(odradek, name)]
    assert missing == []


def test_no_other_public_names_leak_from_the_package_root() -> None:
    # Submodules (odradek.client, odradek.broker, ...) appear as attributes once imported;
    # anything else without a leading underscore must be listed.
    leaked = [
        name
        for name, value in vars(odradek).items()
        if not name.startswith("_") and name not in PUBLIC_API and type(value).__name__ != "module"
    ]
    assert leaked == []


def test_version_is_a_string() -> None:
    assert isinstance(odradek.__version__, str)
    assert odradek.__version__

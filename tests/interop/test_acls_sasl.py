"""ACLs for a principal that logged in with SASL (confluent-kafka over SASL_PLAINTEXT): the
SCRAM user ``alice`` and the PLAIN user ``alice`` are both ``User:alice``. Without an ACL she
may not produce (TOPIC_AUTHORIZATION_FAILED); a prefixed ALLOW WRITE on ``alice-`` lets her
produce to ``alice-x`` but not to ``bob-x``, and Metadata shows her only the topics she may
describe (WRITE implies DESCRIBE); the super user ``admin`` (PLAIN) sees and writes
everything."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker
from odradek.broker.auth import acls
from odradek.protocol.sasl import ScramCredential, ScramMechanism
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import PLAIN_PASSWORD, PLAIN_USER, SecureBroker, broker_settings

pytestmark = pytest.mark.interop

TIMEOUT_S = 10.0
ALICE, ALICE_SCRAM_PASSWORD = "alice", "alice-scram-secret"
#: PLAIN's users in ``broker_settings``: ``alice`` (PLAIN_USER) and the super user ``admin``.
ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
assert PLAIN_USER == ALICE
#: Both logins of alice: (mechanism, password).
ALICE_LOGINS = [("SCRAM-SHA-256", ALICE_SCRAM_PASSWORD), ("PLAIN", PLAIN_PASSWORD)]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """The secured broker with the authorizer on, ``User:admin`` as super user, nothing
    allowed without an ACL, and alice's SCRAM-SHA-256 credential; ``alice-x`` and ``bob-x``
    exist (made by admin)."""
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    config = {
        **broker_settings(certificates),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": f"User:{ADMIN}",
        "num.partitions": "1",
    }
    with Broker(config=config) as running:
        ctx = running.app.ctx
        assert ctx is not None
        assert ctx.scram_credentials is not None
        mechanism = ScramMechanism.SCRAM_SHA_256
        ctx.scram_credentials.alter(
            ALICE,
            {mechanism: ScramCredential.from_password(mechanism, ALICE_SCRAM_PASSWORD, 4096)},
        )
        secure = SecureBroker(running, certificates)
        admin = AdminClient(_config(secure, "PLAIN", ADMIN, ADMIN_PASSWORD))
        for topic in ("alice-x", "bob-x"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
        yield secure


def _config(secure: SecureBroker, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": secure.address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "message.timeout.ms": 5000,
    }


@pytest.fixture
def alice_writes_alice_topics(secure: SecureBroker) -> Iterator[None]:
    """ALLOW User:alice WRITE on topics prefixed ``alice-``, for one test."""
    store = secure.broker.app.ctx.acl_store if secure.broker.app.ctx is not None else None
    assert store is not None
    binding = acls.AclBinding(
        acls.ResourcePattern(acls.ResourceType.TOPIC, "alice-", acls.PatternType.PREFIXED),
        acls.AccessControlEntry(
            f"User:{ALICE}", "*", acls.AclOperation.WRITE, acls.AclPermissionType.ALLOW
        ),
    )
    assert store.create([binding]) == [None]
    yield
    assert store.delete([acls.AclBindingFilter(principal=f"User:{ALICE}")]) == [[binding]]


def _produce(conf: dict[str, Any], *topics: str) -> dict[str, int | None]:
    """Produces one record to each topic: the error code of each delivery (None: stored)."""
    results: dict[str, int | None] = {}

    def delivered(error: KafkaError | None, message: Any) -> None:
        results[message.topic()] = None if error is None else error.code()

    producer = Producer(conf)
    for topic in topics:
        producer.produce(topic, uuid.uuid4().bytes, on_delivery=delivered)
    producer.flush(TIMEOUT_S)
    return results


def _visible(conf: dict[str, Any]) -> set[str]:
    return set(AdminClient(conf).list_topics(timeout=TIMEOUT_S).topics)


@pytest.mark.parametrize(("mechanism", "password"), ALICE_LOGINS)
def test_without_an_acl_alice_may_not_write(
    secure: SecureBroker, mechanism: str, password: str
) -> None:
    conf = _config(secure, mechanism, ALICE, password)
    assert _produce(conf, "alice-x") == {"alice-x": KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert not {"alice-x", "bob-x"} & _visible(conf)


@pytest.mark.parametrize(("mechanism", "password"), ALICE_LOGINS)
@pytest.mark.usefixtures("alice_writes_alice_topics")
def test_a_prefixed_write_acl_lets_alice_write_her_topics_only(
    secure: SecureBroker, mechanism: str, password: str
) -> None:
    conf = _config(secure, mechanism, ALICE, password)
    assert _produce(conf, "alice-x", "bob-x") == {
        "alice-x": None,
        "bob-x": KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
    visible = _visible(conf)
    assert "alice-x" in visible
    assert "bob-x" not in visible


def test_the_super_user_sees_and_writes_everything(secure: SecureBroker) -> None:
    conf = _config(secure, "PLAIN", ADMIN, ADMIN_PASSWORD)
    assert {"alice-x", "bob-x"} <= _visible(conf)
    assert _produce(conf, "alice-x", "bob-x") == {"alice-x": None, "bob-x": None}

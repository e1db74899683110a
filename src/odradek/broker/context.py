"""What every handler gets: the broker's configuration, identity and services, the services
typed by the narrow ports of ``odradek.broker.ports`` (so a handler runs against in-memory
fakes in tests, and never sees a concrete service or a storage type)."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from odradek._clock import Clock
from odradek.broker.fetch_session import FetchSessionCache
from odradek.broker.ports import (
    ClusterPort,
    GroupsPort,
    ProducerIdsPort,
    PurgatoryPort,
    ReplicasPort,
    TopicsPort,
    TransactionsPort,
    TxnVerifierPort,
)
from odradek.broker.security.credentials import ScramCredentialStore

if TYPE_CHECKING:
    from odradek.broker.auth.acl_store import AclStore
    from odradek.broker.auth.authorizer import AclAuthorizer
    from odradek.broker.auth.quota_store import QuotaStore
    from odradek.broker.auth.quotas import ClientQuotas
    from odradek.broker.config import BrokerConfig
    from odradek.protocol import ApiKey, VersionRange


@dataclass
class BrokerContext:
    """The broker as handlers see it. Mutable only by the server (the bound port)."""

    config: BrokerConfig
    cluster_id: str
    broker_id: int
    replicas: ReplicasPort
    topics: TopicsPort
    purgatory: PurgatoryPort
    clock: Clock
    #: Advertised address of the listener (the real port once bound, for port 0).
    host: str = "127.0.0.1"
    port: int = 9092
    supported_versions: dict[ApiKey, VersionRange] = field(default_factory=dict)
    #: The group coordinator (None: this broker runs none).
    groups: GroupsPort | None = None
    #: This broker's part in a ZooKeeper cluster (None: a single broker, no zookeeper.connect).
    cluster: ClusterPort | None = None
    #: Where InitProducerId's producer ids come from (None: a process-local counter).
    producer_ids: ProducerIdsPort | None = None
    #: The transaction coordinator (None: this broker runs none).
    transactions: TransactionsPort | None = None
    #: Asks coordinators before a producer's first transactional batch on a partition
    #: (KIP-890 part 1; None: ``transaction.partition.verification.enable`` is false).
    txn_verifier: TxnVerifierPort | None = None
    #: Incremental fetch sessions (KIP-227) served by this broker's Fetch handler.
    fetch_sessions: FetchSessionCache = field(default_factory=FetchSessionCache)
    #: Users' SCRAM credentials (None: none kept, e.g. in handler tests).
    scram_credentials: ScramCredentialStore | None = None
    #: The ACL authorizer (None: ``authorizer.class.name`` empty, everything is allowed).
    authorizer: AclAuthorizer | None = None
    #: Where ACLs are stored (None: no authorizer; the ACL APIs answer SECURITY_DISABLED).
    acl_store: AclStore | None = None
    #: Client quotas (None: not enforced; the quota APIs answer as if none were set).
    quotas: ClientQuotas | None = None
    quota_store: QuotaStore | None = None


#: The address of the client whose request is being handled (``/127.0.0.1`` as Kafka
#: reports it), set by the server around each dispatch; read by handlers that record it
#: (JoinGroup's member host).
CLIENT_HOST: contextvars.ContextVar[str] = contextvars.ContextVar("client_host", default="")


#: The advertised ``(host, port)`` of the listener the client connected to, set by the server
#: around each dispatch (None: the context's ``host`` / ``port``). Metadata, DescribeCluster
#: and FindCoordinator answer with it, so a client stays on the listener it chose.
CLIENT_ENDPOINT: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "client_endpoint", default=None
)


#: The name of the listener the client connected to, set beside ``CLIENT_ENDPOINT`` (None:
#: not through a listener). In a cluster, Metadata, DescribeCluster, FindCoordinator and the
#: KIP-951 leader endpoints list the brokers at that listener's endpoints.
CLIENT_LISTENER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "client_listener", default=None
)


def advertised_endpoint(ctx: BrokerContext) -> tuple[str, int]:
    """This broker's address as the current client should see it (see ``CLIENT_ENDPOINT``)."""
    endpoint = CLIENT_ENDPOINT.get()
    return (ctx.host, ctx.port) if endpoint is None else endpoint

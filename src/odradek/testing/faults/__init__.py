"""Fault injection against a real replicated cluster (issue 15).

``cluster.FaultCluster`` starts a ZooKeeper ensemble and brokers — each a test host in a
network namespace of its own when the kernel allows, loopback processes otherwise — and owns
every fault it can inject; ``netns`` builds and tears down the namespaces; ``disks`` mounts the
small tmpfs log directories a full-disk fault fills and sets up libfaketime; ``injectors`` are
the fault kinds (``Fault``: ``apply`` then ``heal``) and ``available_faults`` says which can be
injected here; ``schedule`` chooses faults from a seed and keeps the timeline.
"""

"""Replication: a partition's leader and follower states, the high watermark, and (as they
land) the follower fetchers, ISR changes and the delayed-produce purgatory for acks=all.

``partition.Partition`` is the one owner of a replica's high watermark: every change goes
through ``Partition.advance_high_watermark``, which tells the listener the replica manager
installed (acks=all waiters, delayed fetches).
"""

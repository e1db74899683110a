"""The checker of the transactional workload: its ``Transaction`` events against what a
read_committed consumer read of every partition after healing → a ``TxnReport``.

Pure: plain values in, a value out. Kafka's contract for a read_committed reader (KIP-98):

- **lost**: every record of a committed transaction is visible (reported per transaction,
  with the values missing).
- **duplicated**: no record of a transaction — whatever its outcome — is visible more than
  once.
- **aborted visible**: no record of an aborted transaction is visible.
- **partial**: a transaction whose outcome is unknown (its commit failed, the coordinator
  decided) is visible all or nothing. (A committed transaction missing some records is lost,
  an aborted one showing some is aborted visible.)
- **reordered**: a committed or unknown transaction's visible records on one partition are
  at rising offsets in the order they were produced, on the partition they were sent to.

Values are unique in a run, so a value names its record; visible values no recorded
transaction owns are counted (``unowned``), not judged — the workload records every
transaction it begins.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from odradek.testing.faults.history import CommittedLog, Event, Transaction

Position = tuple[int, int]  # (partition, offset)


@dataclass(frozen=True, slots=True)
class TxnViolation:
    """One transaction that broke a rule: which rule (``kind``) and the values concerned."""

    kind: str  # "lost", "duplicated", "aborted visible", "partial", "reordered"
    producer: str
    number: int
    outcome: str
    values: tuple[bytes, ...]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TxnReport:
    committed: int = 0
    aborted: int = 0
    unknown: int = 0
    #: Of the unknown ones, how many were visible (committed by the coordinator).
    unknown_visible: int = 0
    records_visible: int = 0
    unowned: int = 0
    lost: tuple[TxnViolation, ...] = ()
    duplicated: tuple[TxnViolation, ...] = ()
    aborted_visible: tuple[TxnViolation, ...] = ()
    partial: tuple[TxnViolation, ...] = ()
    reordered: tuple[TxnViolation, ...] = ()

    @property
    def violations(self) -> int:
        return (
            len(self.lost)
            + len(self.duplicated)
            + len(self.aborted_visible)
            + len(self.partial)
            + len(self.reordered)
        )

    def examples(self, per_kind: int = 5) -> list[TxnViolation]:
        return [
            *self.lost[:per_kind],
            *self.duplicated[:per_kind],
            *self.aborted_visible[:per_kind],
            *self.partial[:per_kind],
            *self.reordered[:per_kind],
        ]


def check_transactions(events: Sequence[Event], logs: Iterable[CommittedLog]) -> TxnReport:
    """Checks the ``Transaction`` events of ``events`` against the read_committed ``logs``."""
    transactions = [e for e in events if isinstance(e, Transaction)]
    where: dict[bytes, list[Position]] = defaultdict(list)
    for log in logs:
        for offset, value in log.records:
            where[value].append((log.partition, offset))
    owned = {value for txn in transactions for _, value in txn.records}
    found: dict[str, list[TxnViolation]] = defaultdict(list)
    unknown_visible = 0
    for txn in transactions:
        values = [value for _, value in txn.records]
        visible = [value for value in values if where.get(value)]
        twice = tuple(value for value in values if len(where.get(value, ())) > 1)
        if twice:
            found["duplicated"].append(_violation("duplicated", txn, twice, where))
        if txn.outcome == "committed" and len(visible) < len(values):
            missing = tuple(value for value in values if not where.get(value))
            found["lost"].append(
                _violation("lost", txn, missing, where, f"{len(visible)} of {len(values)} visible")
            )
        elif txn.outcome == "aborted" and visible:
            found["aborted visible"].append(
                _violation("aborted visible", txn, tuple(visible), where)
            )
        elif txn.outcome == "unknown" and 0 < len(visible) < len(values):
            found["partial"].append(
                _violation(
                    "partial", txn, tuple(visible), where, f"{len(visible)} of {len(values)}"
                )
            )
        if txn.outcome == "unknown" and len(visible) == len(values):
            unknown_visible += 1
        if txn.outcome != "aborted":
            disorder = _disorder(txn, where)
            if disorder is not None:
                found["reordered"].append(disorder)
    outcomes = Counter(txn.outcome for txn in transactions)
    return TxnReport(
        committed=outcomes["committed"],
        aborted=outcomes["aborted"],
        unknown=outcomes["unknown"],
        unknown_visible=unknown_visible,
        records_visible=sum(len(positions) for value, positions in where.items() if value in owned),
        unowned=sum(1 for value in where if value not in owned),
        lost=tuple(found["lost"]),
        duplicated=tuple(found["duplicated"]),
        aborted_visible=tuple(found["aborted visible"]),
        partial=tuple(found["partial"]),
        reordered=tuple(found["reordered"]),
    )


def tally_transactions(events: Sequence[Event]) -> TxnReport:
    """The outcome counts alone, for a run whose partitions could not be read."""
    outcomes = Counter(e.outcome for e in events if isinstance(e, Transaction))
    return TxnReport(outcomes["committed"], outcomes["aborted"], outcomes["unknown"])


def _violation(
    kind: str,
    txn: Transaction,
    values: tuple[bytes, ...],
    where: dict[bytes, list[Position]],
    detail: str = "",
) -> TxnViolation:
    seen = [(value, tuple(where[value])) for value in values if where.get(value)]
    at = "; ".join(f"{value!r} at {positions}" for value, positions in seen[:3])
    if len(seen) > 3:
        at += f"; {len(seen) - 3} more"
    text = ", ".join(part for part in (detail, at) if part)
    return TxnViolation(kind, txn.producer, txn.number, txn.outcome, values, text)


def _disorder(txn: Transaction, where: dict[bytes, list[Position]]) -> TxnViolation | None:
    """The first pair of the transaction's visible records out of produced order on their
    partition (or a record visible on another partition than the one it was sent to)."""
    streams: dict[int, list[tuple[bytes, int]]] = defaultdict(list)
    for partition, value in txn.records:
        positions = where.get(value, ())
        if not positions:
            continue
        seen_partition, offset = positions[0]
        if seen_partition != partition:
            return TxnViolation(
                "reordered",
                txn.producer,
                txn.number,
                txn.outcome,
                (value,),
                f"sent to partition {partition}, visible at {positions[0]}",
            )
        streams[partition].append((value, offset))
    for partition, stream in sorted(streams.items()):
        for (earlier, earlier_offset), (later, later_offset) in itertools.pairwise(stream):
            if later_offset <= earlier_offset:
                return TxnViolation(
                    "reordered",
                    txn.producer,
                    txn.number,
                    txn.outcome,
                    (earlier, later),
                    f"partition {partition}: {earlier!r} at {earlier_offset}, "
                    f"produced later {later!r} at {later_offset}",
                )
    return None

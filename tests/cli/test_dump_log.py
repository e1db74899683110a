"""Tests for ``odradek dump-log`` (odradek.cli.dump_log), run through ``main``."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from odradek.cli.main import main
from odradek.records.batch import CRC_OFFSET, CompressionType, TimestampType, compute_crc
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.txn_index import AbortedTxn, append_aborted

FIRST = build_batch(
    [
        SimpleRecord(1000, b"k", b"v"),
        SimpleRecord(1300, None, b"line\nbreak", [("trace", b"\xff\x00"), ("n", None)]),
    ],
    partition_leader_epoch=3,
)
SECOND = build_batch(
    [SimpleRecord(2000 + i, b"key-%d" % i, b"value" * 20) for i in range(3)],
    base_offset=2,
    compression=CompressionType.LZ4,
    producer_id=77,
    producer_epoch=1,
    base_sequence=5,
    timestamp_type=TimestampType.LOG_APPEND_TIME,
    transactional=True,
)


def write(directory: Path, data: bytes, name: str = "00000000000000000000.log") -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


def resign(data: bytearray, pos: int, size: int) -> bytearray:
    struct.pack_into(">I", data, pos + CRC_OFFSET, compute_crc(data, pos, size))
    return data


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = main(["dump-log", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_dumps_every_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, FIRST + SECOND)
    status, lines, err = run(capsys, str(path))
    assert status == 0
    assert err == ""
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Log starting offset: 0"
    assert len(lines) == 4
    assert lines[2] == (
        f"baseOffset: 0 lastOffset: 1 count: 2 position: 0 size: {len(FIRST)} "
        "maxTimestamp: 1300 timestampType: CreateTime compresscodec: none producerId: -1 "
        "producerEpoch: -1 baseSequence: -1 partitionLeaderEpoch: 3 isTransactional: false "
        f"isControl: false crc: {int.from_bytes(FIRST[17:21], 'big')} isvalid: true"
    )
    assert lines[3].startswith(
        f"baseOffset: 2 lastOffset: 4 count: 3 position: {len(FIRST)} size: {len(SECOND)} "
        "maxTimestamp: 2002 timestampType: LogAppendTime compresscodec: lz4 producerId: 77 "
        "producerEpoch: 1 baseSequence: 5 partitionLeaderEpoch: -1 isTransactional: true "
        "isControl: false crc: "
    )
    assert lines[3].endswith(" isvalid: true")


@pytest.mark.parametrize("flag", ["--print-records", "--print-data-log"])
def test_prints_records(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    path = write(tmp_path, FIRST + SECOND, name="00000000000000000042.log")
    status, lines, _ = run(capsys, flag, str(path))
    assert status == 0
    assert lines[1] == "Log starting offset: 42"
    records = [line for line in lines if line.startswith("| ")]
    assert records == [
        '| offset: 0 CreateTime: 1000 sequence: -1 keySize: 1 valueSize: 1 key: "k" '
        'payload: "v" headers: []',
        "| offset: 1 CreateTime: 1300 sequence: -1 keySize: -1 valueSize: 10 key: null "
        'payload: "line\\nbreak" headers: ["trace"=0xff00, "n"=null]',
        *(
            f"| offset: {2 + i} LogAppendTime: 2002 sequence: {5 + i} keySize: 5 "
            f'valueSize: 100 key: "key-{i}" payload: "{"value" * 20}" headers: []'
            for i in range(3)
        ),
    ]
    assert lines.index(records[0]) == 3  # right after its batch line


def test_empty_segment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, b"", name="segment.log")
    status, lines, err = run(capsys, str(path))
    assert (status, lines, err) == (0, [f"Dumping {path}"], "")


def test_several_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write(tmp_path, FIRST)
    second = write(tmp_path, SECOND, name="00000000000000000002.log")
    status, lines, _ = run(capsys, str(first), str(second))
    assert status == 0
    assert [line for line in lines if line.startswith("Dumping")] == [
        f"Dumping {first}",
        f"Dumping {second}",
    ]


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        (5, "truncated batch: 5 bytes remain, the offset and length take 12"),
        (40, f"truncated batch: needs {len(SECOND)} bytes, 40 remain"),
        (len(SECOND) - 1, f"truncated batch: needs {len(SECOND)} bytes, {len(SECOND) - 1} remain"),
    ],
)
def test_stops_at_a_truncated_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tail: int, reason: str
) -> None:
    path = write(tmp_path, FIRST + SECOND[:tail])
    status, lines, err = run(capsys, "--print-records", str(path))
    assert status == 1
    assert lines[-1] == f"Stopped at position {len(FIRST)}: {reason}"
    assert sum(line.startswith("baseOffset") for line in lines) == 1
    assert err == f"odradek: corrupt log segment: {path} at position {len(FIRST)}\n"
    assert "Traceback" not in err


def test_stops_at_a_crc_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(FIRST + SECOND + FIRST)
    data[len(FIRST) + 70] ^= 0x10
    path = write(tmp_path, bytes(data))
    status, lines, _ = run(capsys, "--print-records", str(path))
    assert status == 1
    assert lines[-2].startswith(f"baseOffset: 2 lastOffset: 4 count: 3 position: {len(FIRST)} ")
    assert lines[-2].endswith("isvalid: false")
    assert lines[-1].startswith(
        f"Stopped at position {len(FIRST)}: CRC mismatch in batch with base offset 2: stored "
    )
    assert sum(line.startswith("| ") for line in lines) == 2  # only the first batch's records


@pytest.mark.parametrize(
    ("offset", "value", "reason"),
    [
        (16, b"\x01", "message format v1 (magic 1) is not supported"),
        (16, b"\x00", "message format v0 (magic 0) is not supported"),
        (16, b"\x07", "unknown magic byte 7"),
        (8, b"\x00\x00\x00\x10", "impossible batch length 16 (the minimum is 49)"),
        (8, b"\x7f\xff\xff\xff", "truncated batch: needs 2147483659 bytes"),
    ],
)
def test_stops_at_a_malformed_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], offset: int, value: bytes, reason: str
) -> None:
    data = bytearray(FIRST + SECOND)
    data[len(FIRST) + offset : len(FIRST) + offset + len(value)] = value
    path = write(tmp_path, bytes(data))
    status, lines, err = run(capsys, str(path))
    assert status == 1
    assert lines[-1].startswith(f"Stopped at position {len(FIRST)}: {reason}")
    assert "Traceback" not in err


def test_stops_at_undecodable_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(SECOND)
    data[61:] = b"\x00" * (len(data) - 61)  # not an LZ4 frame any more; CRC made valid again
    path = write(tmp_path, FIRST + bytes(resign(data, 0, len(data))))
    status, lines, _ = run(capsys, "--print-records", str(path))
    assert status == 1
    assert lines[-2].endswith("isvalid: true")
    assert lines[-1].startswith(f"Stopped at position {len(FIRST)}: cannot decode the records: ")
    # Without --print-records the batch is fine as far as the dump can tell.
    assert run(capsys, str(path))[0] == 0


def test_unknown_codec_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(FIRST)
    data[22] |= 0x06
    path = write(tmp_path, bytes(resign(data, 0, len(data))))
    status, lines, _ = run(capsys, "--print-records", str(path))
    assert status == 1
    assert "compresscodec: unknown(6)" in lines[2]
    assert "unknown compression codec 6" in lines[-1]


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, lines, err = run(capsys, str(tmp_path / "00000000000000000000.log"))
    assert status == 2
    assert lines == []
    assert err.count("\n") == 1
    assert err.startswith("odradek: ")
    assert "does not exist" in err


def test_non_log_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, FIRST, name="notes.txt")
    status, lines, err = run(capsys, str(path))
    assert status == 2
    assert lines == []
    assert err == (
        f"odradek: Invalid value for FILE: {path} is not a log segment or index file "
        "(expected a name ending in .log, .index, .timeindex or .txnindex)\n"
    )


def test_txnindex_entries_are_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = str(tmp_path)
    append_aborted(directory, 0, AbortedTxn(7, 0, 3, 0))
    append_aborted(directory, 0, AbortedTxn(9, 2, 12, 4))
    path = tmp_path / "00000000000000000000.txnindex"
    status, lines, err = run(capsys, str(path))
    assert (status, err) == (0, "")
    assert lines == [
        f"Dumping {path}",
        "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 0",
        "version: 0 producerId: 9 firstOffset: 2 lastOffset: 12 lastStableOffset: 4",
    ]


def test_a_malformed_txnindex_is_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, b"\x00" * 40, name="00000000000000000000.txnindex")
    status, lines, err = run(capsys, str(path))
    assert status == 1
    assert lines == [
        f"Dumping {path}",
        f"Problem: {path}: 40 bytes is not a whole number of entries",
    ]
    assert err == f"odradek: index problems: {path} (malformed)\n"


def test_directory_and_no_argument_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, str(tmp_path))[0] == 2
    assert run(capsys)[0] == 2


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    status, lines, _ = run(capsys, "--help")
    assert status == 0
    assert any("--print-data-log" in line for line in lines)

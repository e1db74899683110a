"""The README's Python examples, run as a user runs them: each ```python block of README.md is a
script, run by this interpreter in a child process against a real embedded broker (and, for the
Spark ones, a local SparkSession the block itself builds).

So that an example can be copied as it is, the README uses the addresses and paths a reader
would: ``127.0.0.1:9092`` and ``broker1:9092`` become the test broker's address, the standalone
master ``spark://127.0.0.1:7077`` becomes ``local[1]`` and ``/tmp/odradek-data`` a temporary
directory — nothing else is changed. Checks:

- every block runs to the end (exit 0): an example that raises fails its test;
- a ``print(...)`` line with a trailing ``# text`` comment must print exactly ``text`` (those
  lines, in order, are the block's whole expected output);
- the Spark write example's output topic holds what the example says it writes.

Spark's children (JVM, workers) bind to 127.0.0.1 only (``SPARK_LOCAL_IP``), with no UI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek import AdminClient, Broker, NewTopic, Producer, SimpleConsumer

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_EXPECTED = re.compile(r"^\s*print\(.*\)\s+#\s?(.*)$")
PAGE_VIEWS = [b"hello", b"world", b"page view"]


@dataclass(frozen=True)
class Example:
    line: int  # of the opening fence, 1-based
    code: str

    @property
    def uses_spark(self) -> bool:
        return "pyspark" in self.code

    def expected_output(self) -> list[str]:
        return [m[1] for line in self.code.splitlines() if (m := _EXPECTED.match(line))]


def readme_examples(text: str) -> list[Example]:
    return [
        Example(text.count("\n", 0, match.start()) + 1, match[1]) for match in _FENCE.finditer(text)
    ]


EXAMPLES = readme_examples(README.read_text())


def test_the_readme_has_the_examples_this_test_expects() -> None:
    """A renamed fence (```py, ```Python) would silently drop an example from the test."""
    text = README.read_text()
    fences = re.findall(r"^```(\S*)", text, re.MULTILINE)
    assert not [f for f in fences if f.lower() in {"py", "python3"} or f == "Python"]
    assert len(EXAMPLES) >= 4
    assert sum(e.uses_spark for e in EXAMPLES) >= 2
    assert all(e.expected_output() or e.uses_spark for e in EXAMPLES)


def test_examples_are_extracted_with_their_expected_output() -> None:
    text = 'intro\n```python\nx = 1\nprint(x)   # 1\nprint("a b")  #a b\n```\n```text\nno\n```\n'
    (example,) = readme_examples(text)
    assert example.line == 2
    assert example.code == 'x = 1\nprint(x)   # 1\nprint("a b")  #a b\n'
    assert example.expected_output() == ["1", "a b"]


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"num.partitions": "1"}) as started:
        with AdminClient({"bootstrap.servers": started.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("page-views", 3, 1), NewTopic("shouted", 1, 1)]).all()
        with Producer({"bootstrap.servers": started.bootstrap_servers}) as producer:
            for n, value in enumerate(PAGE_VIEWS):
                producer.send("page-views", value, f"user-{n}".encode()).result(30)
        yield started


def adapted(code: str, bootstrap: str, data_dir: Path) -> str:
    return (
        code.replace("127.0.0.1:9092", bootstrap)
        .replace("broker1:9092", bootstrap)
        .replace("spark://127.0.0.1:7077", "local[1]")
        .replace("/tmp/odradek-data", str(data_dir))
    )


def run_example(example: Example, broker: Broker, tmp_path: Path) -> str:
    script = tmp_path / f"readme_line_{example.line}.py"
    script.write_text(adapted(example.code, broker.bootstrap_servers, tmp_path / "data"))
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_SUBMIT_ARGS="--conf spark.ui.enabled=false pyspark-shell",
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, (
        f"README.md line {example.line}: the example failed\n{result.stdout}\n{result.stderr}"
    )
    return result.stdout


def read_topic(bootstrap: str, topic: str) -> list[bytes | None]:
    values: list[bytes | None] = []
    with SimpleConsumer({"bootstrap.servers": bootstrap}) as consumer:
        end, offset = consumer.latest_offset(topic, 0), 0
        while offset < end:
            fetched = consumer.fetch(topic, 0, offset)
            values.extend(m.value for m in fetched if m.offset < end)
            offset = fetched[-1].next_offset
    return values


@pytest.mark.parametrize(
    "example",
    [
        pytest.param(e, id=f"line{e.line}", marks=[pytest.mark.spark] if e.uses_spark else [])
        for e in EXAMPLES
    ],
)
def test_readme_example(example: Example, broker: Broker, tmp_path: Path) -> None:
    shouted_before = read_topic(broker.bootstrap_servers, "shouted")
    out = run_example(example, broker, tmp_path)
    expected = example.expected_output()
    if expected:
        assert out.splitlines() == expected
    if '"shouted"' in example.code:  # the write example: every page view, upper-cased, once
        added = read_topic(broker.bootstrap_servers, "shouted")[len(shouted_before) :]
        assert sorted(v or b"" for v in added) == sorted(v.upper() for v in PAGE_VIEWS)


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("document", ["README.md", "docs/architecture.md", "docs/operations.md"])
def test_relative_links_point_into_the_repository(document: str) -> None:
    """A clone must hold what its documents link to (the README once pointed outside it)."""
    root = README.parent
    path = root / document
    text = path.read_text()
    targets = [t for t in _LINK.findall(text) if "://" not in t]
    for target in targets:
        resolved = (path.parent / target).resolve()
        assert resolved.is_relative_to(root), f"{document} links outside the repository: {target}"
        assert resolved.exists(), f"{document} links to a missing file: {target}"
    assert "../shared" not in text

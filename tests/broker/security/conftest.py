from __future__ import annotations

from pathlib import Path

import pytest

from odradek.testing.certificates import CertificateFiles, make_certificates


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> CertificateFiles:
    directory: Path = tmp_path_factory.mktemp("certificates")
    return make_certificates(directory)

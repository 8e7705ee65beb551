"""The fuzz files go under pytest's tmp path, never the working directory."""

from __future__ import annotations

import pytest

from tests.unit.fuzz import loaders


@pytest.fixture(scope="session", autouse=True)
def _fuzz_files_under_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    loaders.use_dir(tmp_path_factory.mktemp("fuzz"))

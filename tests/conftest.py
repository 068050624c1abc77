"""Shared fixtures: the data root (real corpora beside the project) and a scratch run dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from clineval.datapaths import resolve_data_root


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = resolve_data_root(None)
    if root is None or not (root / "ner").is_dir():
        pytest.skip("real data root (../shared/data or $CLINEVAL_DATA_DIR) not available")
    return root

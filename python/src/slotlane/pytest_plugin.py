"""The pytest plugin of slotlane (registered through the ``pytest11`` entry point): fixtures
that give each test a slotlane-server running in the test process (slotlane.testing).

    def test_app(slotlane_cluster_url):
        with slotlane.Client(slotlane_cluster_url) as r:
            ...

``slotlane_server_options`` returns the keyword arguments of slotlane.testing.Server
(default: 4 shards, per-shard ports, -MOVED): override it in a conftest.py or a module to
change them. The server of ``slotlane_server`` is started for the test and stopped after it.
"""
from typing import Any, Dict, Iterator

import pytest

from .testing import Server


@pytest.fixture
def slotlane_server_options() -> Dict[str, Any]:
    """Server(...)'s arguments for ``slotlane_server``; override to change them."""
    return {"shards": 4, "port_mode": "per-shard"}


@pytest.fixture
def slotlane_server(slotlane_server_options: Dict[str, Any]) -> Iterator[Server]:
    """A started slotlane.testing.Server, stopped after the test."""
    with Server(**slotlane_server_options) as srv:
        yield srv


@pytest.fixture
def slotlane_cluster_url(slotlane_server: Server) -> str:
    """The URL of ``slotlane_server`` (a cluster client discovers every shard from it)."""
    return slotlane_server.url

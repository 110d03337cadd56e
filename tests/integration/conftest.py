"""Fixtures of the HTTP API's integration tests: a live server over the test database, and keys."""

from __future__ import annotations

from typing import Callable, Iterator
from uuid import UUID

import pytest

from api_support import api_key, build_api, serve


@pytest.fixture
def api_server(app, settings) -> Iterator[str]:
    """The API over the test `app`, on a real uvicorn server on loopback: its base URL."""
    with serve(build_api(app, settings)) as base_url:
        yield base_url


@pytest.fixture
def api_key_for(app) -> Callable[[UUID], str]:
    """api_key_for(user) → a new plain API key of that user."""
    return lambda user, name=None: api_key(app, user, name)

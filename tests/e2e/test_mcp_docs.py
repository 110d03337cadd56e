"""The MCP page (docs/MCP.md) as a user follows it: the stdio client configuration and the HTTP one
(against `memctx mcp --http` as a process), each with a real key, through the official MCP client.
The README shows the same stdio configuration."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import anyio
import httpx
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from api_support import free_port
from memctx import keys
from memctx.app import open_app
from memctx.config import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```json\n(.*?)```", (ROOT / "docs" / "MCP.md").read_text(), re.S)
STDIO, HTTP = (json.loads(body)["mcpServers"]["memctx"] for body in BLOCKS)
BIN = Path(sys.executable).parent


@pytest.fixture
def key(database_url) -> str:
    with open_app(Settings(database_url=database_url)) as app:
        return keys.create_key(app.pool, uuid.uuid4()).secret


def _filled(values: dict[str, str], key: str, database_url: str) -> dict[str, str]:
    """The page's placeholders replaced: the key, this test's database."""
    return {name: value.replace("mck_…", key).replace("postgresql://…", database_url) for name, value in values.items()}


async def _round_trip(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    assert len((await session.list_tools()).tools) == 9
    added = await session.call_tool("add_message", {"role": "user", "content": "My table is for six people."})
    assert not added.is_error, added.content
    found = await session.call_tool("search_conversation_history", {"query": "table for six"})
    return json.loads(found.content[0].text)


def test_the_readme_shows_the_stdio_configuration_the_test_runs():
    assert f"```json\n{BLOCKS[0]}```" in README


def test_the_stdio_configuration(key, database_url):
    params = StdioServerParameters(command=str(BIN / STDIO["command"]), args=STDIO["args"],
                                   env=_filled(STDIO["env"], key, database_url))

    async def scenario():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                return await _round_trip(session)

    found = anyio.run(scenario)
    assert found["memories"][0]["conversation"] == STDIO["env"]["MEMCTX_CONVERSATION"]


@contextmanager
def _mcp_http(database_url: str) -> Iterator[str]:
    """`memctx mcp --http` on a free port; yields the page's URL with that port."""
    port = free_port()
    server = subprocess.Popen([str(BIN / "memctx"), "mcp", "--http", "--port", str(port)],
                              env={**os.environ, "MEMCTX_DATABASE_URL": database_url},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = HTTP["url"].replace(":8080/", f":{port}/")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.post(url, timeout=1).status_code == 401:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "memctx mcp --http did not start"
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(30)


def test_the_http_configuration_against_memctx_mcp_http(key, database_url):
    headers = _filled(HTTP["headers"], key, database_url)

    async def scenario(url: str):
        async with create_mcp_http_client(headers=headers) as http, \
                streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
            return await _round_trip(session)

    with _mcp_http(database_url) as url:
        found = anyio.run(scenario, url)
    assert found["memories"][0]["conversation"] == HTTP["headers"]["X-Memctx-Conversation"]

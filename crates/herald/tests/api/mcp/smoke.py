"""Smoke test of Herald's MCP server with the official Python SDK (PyPI `mcp`).

Usage: smoke.py URL SECRET_KEY. Prints one JSON object describing what it saw; the Rust test
(../mcp_python.rs) checks it against the server's state through REST.
"""

import asyncio
import json
import sys

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def client(url, key, **kwargs):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), **kwargs)


async def approve(context, params):
    return types.ElicitResult(action="accept", content={"confirm": True})


def error_code(result):
    return json.loads(result.content[0].text)["error"]["code"]


async def main(url, key):
    seen = {}
    async with client(url, key) as c:
        tools = await c.list_tools()
        seen["tools"] = sorted(t.name for t in tools.tools)
        create = next(t for t in tools.tools if t.name == "create_contact")
        seen["create_contact_required"] = create.input_schema.get("required")
        created = await c.call_tool(
            "create_contact", {"email": "py@example.com", "data": {"source": "python"}}
        )
        seen["created"] = created.structured_content
        page = await c.call_tool("list_contacts", {"limit": 5})
        seen["listed"] = [x["email"] for x in page.structured_content["data"]]
        bad = await c.call_tool("create_contact", {"email": 7})
        seen["bad_is_error"] = bad.is_error
        seen["bad_code"] = error_code(bad)
        mail = {
            "to": "py@example.com",
            "from": "hello@shop.test",
            "subject": "From Python",
            "body": "<p>Hi</p>",
        }
        unconfirmed = await c.call_tool("send_email", mail)
        seen["unconfirmed_code"] = error_code(unconfirmed)
    async with client(url, key, elicitation_callback=approve) as c:
        sent = await c.call_tool("send_email", mail)
        seen["confirmed_is_error"] = sent.is_error
        seen["confirmed"] = sent.structured_content
    print(json.dumps(seen))


asyncio.run(main(sys.argv[1], sys.argv[2]))

"""The README's proxy example: any OpenAI client gets memory by pointing base_url at memctx.

    MEMCTX_API_URL=http://127.0.0.1:8080 MEMCTX_API_KEY=mck_... python docs/examples/proxy.py

tests/integration/test_api_proxy.py runs it against a live server and checks what it prints.
"""

import os

from openai import OpenAI

client = OpenAI(base_url=os.environ["MEMCTX_API_URL"] + "/v1", api_key=os.environ["MEMCTX_API_KEY"])
for message in ("My sister Ana lives in Porto.", "Where does my sister live?"):
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": message}],  # only the new message: memctx adds the memory
        extra_headers={"X-Memctx-Conversation": "support-42"},  # a UUID, or your id (created on first use)
    )
    print(reply.choices[0].message.content)

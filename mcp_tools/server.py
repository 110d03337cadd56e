"""The MCP tools: memory search, the summary board, the working context, recording a message, web
search and the user's profile (`mcp_tools.profile`), for an agent acting for one authenticated user.

Owns: the tools, their descriptions (written for the LLM that calls them), and memctx's refusals
as tool errors. Thin: each tool parses its arguments, names the caller's conversation, calls
memctx as the caller (`App.for_user`: every query runs under row-level security) and keeps the
result small, with its sources. Each tool is a module-level function; `build_server` registers
them. Who calls and which conversation the session is bound to come from the transport
(`mcp_tools.stdio`, `mcp_tools.http`) through a `Bind` that the tool reads with `bound(ctx)`
(`mcp_tools.binding`), never from a tool argument: a tool has no way to name a user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Callable, Literal
from uuid import UUID

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memctx.assemble import asked_at, assembler_for, get_working_context as working_context
from memctx.mcp_tools import profile
from memctx.mcp_tools.binding import Bind, Binding, MemctxServer, bound, refusals
from memctx.models import Conversation, NewMessage, check_query
from memctx.pipeline.board import get_board
from memctx.pipeline.catchup import live_chain
from memctx.retrieve import search_memories
from memctx.retrieve.search import named_range
from memctx.store import UnknownConversation
from memctx.store.ingest import ConversationInput

MAX_RESULTS = 20
MAX_WEB_RESULTS = 10
NO_ENGINE = "Web search is off on this server: no search engine is configured (MEMCTX_WEB_ENGINES)."
NOTHING_BOUND = ("No conversation is bound to this session and none was given: pass conversation_id "
                 "(a conversation's id or your external id).")
# recall_context's context types → the board's sections.
RECALL_SECTIONS = {"action_items": "action_items", "questions": "pending_questions", "facts": "key_facts",
                   "entities": "entities", "constraints": "constraints"}

ConversationArg = Annotated[str | None, Field(
    description="the conversation's id or its external id; leave it out for the conversation this session "
                "is bound to")]
BlockList = list[dict[str, Any]]
AsOfArg = Annotated[datetime | None, Field(
    description="the moment the user asks, ISO 8601 (with their UTC offset, their day); leave it out for now. "
                "Relative dates in the query (\"last weekend\") mean the days they name then")]


def _conversation(binding: Binding, name: str | None) -> Conversation:
    name = name if name is not None else binding.conversation
    if name is None:
        raise ToolError(NOTHING_BOUND)
    who = binding.caller
    return who.app.store.find_conversation(who.user_id, name)


def _is_uuid(name: str) -> bool:
    try:
        UUID(name)
    except ValueError:
        return False
    return True


def _named(conv: Conversation) -> dict[str, Any]:
    return {"conversation_id": str(conv.id), "conversation": conv.external_id}


def _board_view(binding: Binding, conv: Conversation) -> dict[str, Any] | None:
    board = get_board(binding.caller.app, binding.caller.user_id, conv.id)
    return board.view_json() if board else None


def search_conversation_history(
        query: Annotated[str, Field(description="what to look for, in plain words")], ctx: Context,
        time_range: Literal["today", "week", "month", "all"] = "all",
        limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 5, as_of: AsOfArg = None) -> dict[str, Any]:
    """Search everything this user said in all of their past conversations with you (messages and
    summaries), best match first. Use it when the user refers to something said before ("as I told
    you", "last week"), or before answering a question whose answer the user may have given earlier.
    Each memory lists what was said, by whom (speaker) and when (date), and where it came from: the
    conversation (id and external id) and the message ids. An empty list means nothing matched."""
    binding = bound(ctx)
    who = binding.caller
    asked = asked_at(as_of)
    with refusals():
        check_query(query)
        memories = search_memories(who.app, who.user_id, query, None, named_range(time_range, asked),
                                   limit=limit, now=asked)
        conversations = {c: who.app.store.get_conversation(who.user_id, c)
                         for c in {m.conversation_id for m in memories}}
    return {"memories": [{
        "kind": m.kind, "score": round(m.score, 4), **_named(conversations[m.conversation_id]),
        "said": [{"speaker": f.who, "date": f.time.isoformat() if f.time else None, "text": f.text,
                  "message_id": f.external_id, "id": str(f.id)} for f in m.fragments],
    } for m in memories]}


def get_conversation_summary(ctx: Context, conversation_id: ConversationArg = None) -> dict[str, Any]:
    """Catch up on a conversation without reading it: its running summary, the key facts (per
    person) and the master summary of everything older than the recent turns. Every fact cites
    the messages it came from. Defaults to the conversation this session is bound to."""
    binding = bound(ctx)
    with refusals():
        conv = _conversation(binding, conversation_id)
        view = _board_view(binding, conv)
        master = next((c for c in live_chain(binding.caller.app, binding.caller.user_id, conv.id)
                       if c.is_master), None)
    return {**_named(conv),
            "summary": view["summary"] if view else None,
            "key_facts": view["key_facts"] if view else {},
            "master_summary": {"id": str(master.id), "text": master.text, "first_seq": master.first_seq,
                               "last_seq": master.last_seq} if master else None,
            "messages_summarized": view["message_count"] if view else 0}


def recall_context(context_type: Literal["action_items", "questions", "facts", "entities", "constraints"],
                   ctx: Context, conversation_id: ConversationArg = None) -> dict[str, Any]:
    """One list from a conversation's summary board: `action_items` (open plans and promises, who
    does what), `questions` (asked and not answered yet), `facts` (key facts per person),
    `entities` (people, places, organizations) or `constraints` (the user's stated preferences,
    standing instructions and corrections: honour them). Each item cites the messages it came
    from. Defaults to the conversation this session is bound to; an empty list means none yet."""
    binding = bound(ctx)
    with refusals():
        conv = _conversation(binding, conversation_id)
        view = _board_view(binding, conv)
    section = RECALL_SECTIONS[context_type]
    return {**_named(conv), "context_type": context_type, "items": view[section] if view else []}


def get_working_context(
        query: Annotated[str, Field(description="the new user message you are about to answer")],
        token_budget: Annotated[int, Field(ge=1, description="most tokens the context may take")],
        ctx: Context, conversation_id: ConversationArg = None,
        scope: Annotated[Literal["conversation", "user"] | None, Field(
            description="where memories come from: `user` (all of this user's conversations) or "
                        "`conversation` (only this one); leave it out for the server's default")] = None,
        as_of: AsOfArg = None) -> dict[str, Any]:
    """The best context for answering `query` in a conversation, within `token_budget` tokens
    (tiktoken, chat format): relevant memories (from all of this user's conversations unless
    `scope` says only this one; a memory of another conversation names it and its date), the
    conversation's summaries and board, and its recent turns, as chat messages ready to send to
    a model. For agents that build their own prompts. `sources` says where every included line
    came from; `today` is the day the context tells the model it is. Defaults to the
    conversation this session is bound to."""
    binding = bound(ctx)
    who = binding.caller
    most = who.app.settings.api_max_token_budget
    if token_budget > most:
        raise ToolError(f"token_budget must be at most {most}")
    asked = asked_at(as_of)
    with refusals():
        check_query(query)
        conv = _conversation(binding, conversation_id)
        wc = working_context(who.app, conv.id, query, token_budget, user=who.user_id, scope=scope, now=asked)
    return {**_named(conv), "tokens": wc.tokens, "budget": wc.budget, "messages": wc.messages,
            "sources": [s.as_json() for s in wc.sources], "today": wc.today.isoformat() if wc.today else None}


def add_message(
        role: Literal["user", "assistant", "system", "tool", "agent", "observer"],
        content: Annotated[str | BlockList, Field(description=(
            'the message: a string, or typed blocks: {"type": "text", "text"}, {"type": "image", "url", '
            '"caption"}, {"type": "tool_call", "name", "arguments"}, {"type": "tool_result", "content"}, '
            '{"type": "thinking", "text"}'))],
        ctx: Context) -> dict[str, Any]:
    """Record one message in the conversation this session is bound to, so that memory keeps it:
    later searches, summaries and working contexts include it. Use it when your runtime does not
    store the conversation itself. A bound external id that does not exist yet is created; an
    unknown conversation id (a UUID) is an error. Returns the stored message's id and position (seq)."""
    binding = bound(ctx)
    if binding.conversation is None:
        raise ToolError("No conversation is bound to this session, so there is nowhere to add the message.")
    who = binding.caller
    with refusals():
        message = NewMessage.build(role, content, record="content")
        # checked as ingest and the API check a batch: an empty message is refused too
        ConversationInput(binding.conversation, None, {}, [message], ["content"])
        try:
            conv = _conversation(binding, None)
        except UnknownConversation:
            if _is_uuid(binding.conversation):  # perhaps another tenant's: never a new conversation
                raise
            conv = who.app.store.create_conversation(who.user_id, external_id=binding.conversation)
        stored = who.app.store.append_messages(who.user_id, conv.id, [message])
    return {**_named(conv), "id": str(stored[0].id), "seq": stored[0].seq}


def web_search(
        query: Annotated[str, Field(description="what to look up on the web, in plain words")], ctx: Context,
        max_results: Annotated[int | None, Field(ge=1, le=MAX_WEB_RESULTS, description=(
            "pages to fetch; leave it out for the server's setting (3 by default)"))] = None) -> dict[str, Any]:
    """Search the web for current or outside knowledge that neither you nor this user's conversation
    history can answer: news, releases, prices, schedules, people or companies you do not know.
    Search the conversation history first for anything the user may have said. The query is
    anonymized before it leaves (e-mail addresses, phone numbers, long numbers and the
    conversation's people are removed), and a repeated search within the cache's lifetime is
    answered from the cache. Returns each result's title, URL and cleaned page text (cite the URL),
    the query actually sent, the engine that answered, and the decision memctx's own rules would
    have taken (the search runs either way, since you asked). An empty result list with `errors`
    means the engines or pages failed."""
    binding = bound(ctx)
    who = binding.caller
    with refusals():
        check_query(query)
        assembler = assembler_for(who.app)
        web = assembler.external
        if web is None:
            raise ToolError(NO_ENGINE)
        people: list[str] = []
        conversation = None  # the bound conversation, when it exists: the answer is cached only while it does
        if binding.conversation is not None:
            try:
                conversation = _conversation(binding, None).id
                people = list(assembler.search.speakers(who.user_id, conversation))
            except UnknownConversation:
                pass  # bound but not created yet: no speakers to remove
        decision = web.decide(query)
        report = web.run(query, decision, user=who.user_id, people=people, max_results=max_results,
                         conversation=conversation)
    return {"query_sent": report.query, "engine": report.engine, "cached": report.cached,
            "results": [{"title": r.title, "url": r.url, "text": r.text, "page_fetched": r.fetched}
                        for r in report.results],
            "decision": {"search": decision.search, "by": decision.by, "reason": decision.reason},
            "errors": list(report.errors)}


TOOLS: tuple[Callable[..., Any], ...] = (search_conversation_history, get_conversation_summary, recall_context,
                                         get_working_context, add_message, web_search)


def build_server(bind: Bind) -> MemctxServer:
    """The memctx MCP server; `bind` says who calls each tool and which conversation is current."""
    server = MemctxServer(bind, name="memctx", instructions=(
        "Long-term memory of your conversations with this user. Search it before saying you do not "
        "know something the user told you earlier; read the summary board to catch up on a conversation."))
    for tool in TOOLS + profile.TOOLS:
        server.add_tool(tool)
    return server

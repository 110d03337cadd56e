"""The HTTP API's request and response bodies (pydantic), and so its OpenAPI schema.

Owns: the shapes clients rely on and the refusals that need no database: text Postgres cannot
store (NUL bytes, invalid UTF-8), unknown roles, negative or huge numbers, unknown fields. Each
refusal is a 422 whose `loc` names the field. Message content (typed blocks) is checked by
memctx itself (`NewMessage.build`), as for every other way in.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memctx.models import Role, check_date, check_json, check_query, check_text

# Larger than any sane value, smaller than a Postgres bigint.
MAX_SEQ = 2**62


def _text(value: str) -> str:
    return check_text(value, "text")


def _json(value: dict[str, Any]) -> dict[str, Any]:
    check_json(value, "metadata")
    return value


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value


def _date(value: datetime | None) -> datetime | None:
    return check_date(value) if value is not None else None


Text = Annotated[str, AfterValidator(_text)]
Metadata = Annotated[dict[str, Any], AfterValidator(_json)]
Timestamp = Annotated[datetime, AfterValidator(_utc)]
MessageDate = Annotated[datetime, AfterValidator(_utc), AfterValidator(_date)]
# A conversation in a path or body: its memctx UUID or the caller's own external id.
ConversationName = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_text)]
Query = Annotated[str, Field(min_length=1, max_length=100_000), AfterValidator(check_query)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# Conversations ---------------------------------------------------------------------------------
class ConversationIn(Body):
    external_id: Annotated[Text | None, Field(max_length=1000)] = None
    title: Annotated[Text | None, Field(max_length=10_000)] = None
    metadata: Metadata = Field(default_factory=dict)


class ConversationOut(Out):
    id: UUID
    external_id: str | None = Field(description="your id for the conversation, if you gave one")
    title: str | None
    metadata: dict[str, Any]
    message_count: int = Field(description="messages stored so far")
    created_at: datetime
    last_message_at: datetime | None
    closed_at: datetime | None = Field(description="when it was closed; null while open")


class ConversationPage(BaseModel):
    items: list[ConversationOut]
    next_offset: int | None = Field(description="offset of the next page; null on the last one")


class ProxyModeIn(Body):
    mode: Literal["live", "shadow"] | None = Field(
        description="'shadow': the proxy sends the client's requests as they come and records the context it "
                    "would have sent; 'live': it sends the working context; null: the server's MEMCTX_PROXY_MODE")


class ProxyModeOut(BaseModel):
    mode: Literal["live", "shadow"] | None = Field(description="the conversation's own mode; null: the server's")
    effective: Literal["live", "shadow"] = Field(
        description="what a request without an X-Memctx-Mode header runs in")


# Messages --------------------------------------------------------------------------------------
class MessageIn(Body):
    role: Role
    content: str | list[dict[str, Any]] = Field(
        description="a string, or typed blocks: text {text}, image {url, caption}, tool_call {name, arguments}, "
                    "tool_result {content}, thinking {text}")
    id: Annotated[Text | None, Field(max_length=1000)] = Field(
        default=None, description="your id of the message; a message whose id is already stored is skipped")
    created_at: MessageDate | None = None
    metadata: Metadata = Field(default_factory=dict)


class MessagesIn(Body):
    messages: list[MessageIn] = Field(min_length=1, description="appended in order, in one transaction")


class MessageOut(Out):
    id: UUID
    seq: int
    role: str
    content: list[dict[str, Any]] = Field(description="the message as typed blocks (a string arrives as one text block)")
    text: str = Field(description="the blocks' text, as search and summaries read it")
    external_id: str | None
    token_count: int | None
    created_at: datetime
    metadata: dict[str, Any]


class MessagesOut(BaseModel):
    messages: list[MessageOut]


class MessagePage(BaseModel):
    items: list[MessageOut]
    next_after_seq: int | None = Field(description="after_seq of the next page; null on the last one")


# Context and search ------------------------------------------------------------------------------
class ContextIn(Body):
    query: Query = Field(description="the user's new message")
    token_budget: int = Field(ge=1, description="tokens of the whole context, system prompt and query included")
    system_prompt: Annotated[Text | None, Field(max_length=100_000)] = None
    scope: Literal["conversation", "user"] | None = Field(
        default=None, description="memories from all of the caller's conversations (user) or this one's "
                                  "(conversation); left out, the server's MEMCTX_CONTEXT_SCOPE (user by default)")
    status_quo: bool = Field(default=False, description="the last raw messages instead (a baseline)")
    as_of: Timestamp | None = Field(
        default=None, description="the moment the query is asked (ISO 8601; with the user's UTC offset, their "
                                  "day): the query's relative dates mean the days they name then, and the "
                                  "context says what day it is. Left out, the moment of the request; a replay "
                                  "or an evaluation asks in the past")


class TimeWindow(Body):
    since: Timestamp | None = None
    until: Timestamp | None = None


class SearchIn(Body):
    query: Query
    conversation_id: ConversationName | None = None
    time_range: Literal["today", "week", "month", "all"] | TimeWindow = "all"
    limit: int = Field(default=10, ge=1)
    as_of: Timestamp | None = Field(
        default=None, description="the moment the query is asked: its relative dates (\"last weekend\") and a "
                                  "named time_range count from it; left out, the moment of the request")


# Summaries and long-term memory ---------------------------------------------------------------------
class SummaryEditIn(Body):
    text: Annotated[Text, Field(min_length=1, max_length=100_000)]


class SummaryOut(Out):
    id: UUID
    conversation_id: UUID
    level: int
    is_master: bool
    content: str
    first_seq: int
    last_seq: int
    token_count: int | None
    edited: bool
    created_at: datetime


# The profile and feedback ------------------------------------------------------------------------
class ProfileItemIn(Body):
    value: Annotated[Text, Field(min_length=1, max_length=2000)] = Field(description="the item, in plain words")
    kind: Literal["fact", "preference", "instruction", "plan"] = "fact"
    person: Annotated[Text, Field(min_length=1, max_length=200)] = Field(
        default="user", description="whose item it is: `user` (you), or a speaker's name")


class ProfileEditIn(Body):
    value: Annotated[Text, Field(min_length=1, max_length=2000)] = Field(description="the item in your words")


class FeedbackIn(Body):
    kind: Literal["profile_item", "message", "summary", "procedure"] = Field(description="what is rated")
    id: UUID = Field(description="its id, as the context's `sources` name it")
    rating: Literal["useful", "wrong", "outdated"]
    note: Annotated[Text | None, Field(max_length=2000)] = None

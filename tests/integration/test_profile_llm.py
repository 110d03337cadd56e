"""The LLM path of profile learning, against a real OpenAI-compatible server on loopback: the reply
validated against its schema, every item citing a message of its batch said by its person, and any
failure falling back to the key-free learner for the whole batch."""

from __future__ import annotations

import json

from memctx.learn.extract import ExtractiveLearner
from memctx.learn.llm import LLMLearner
from memctx.pipeline import learning, profile
from memctx.providers import make_learner
from memctx.store import DEFAULT_USER
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.llm import LLMSummarizer
from memctx.tokens import get_counter
from support import say_by_sql
from test_llm_summarizer import MODEL, FakeOpenAI, Reply, server  # noqa: F401 (fixture)

USER = DEFAULT_USER
TURNS = ["We finally adopted a kitten last week, she's called Pixel.", "Congratulations!",
         "Also, I'm gluten intolerant, so keep that in mind for recipes.", "Noted."]


def _learner(server, failures):  # noqa: F811
    model = LLMSummarizer(base_url=server.base_url, model=MODEL, api_key="sk-test", timeout=2, max_retries=0,
                          fallback=ExtractiveSummarizer(get_counter()), counter=get_counter())
    return model, LLMLearner(model, ExtractiveLearner(), on_failure=failures.append)


def test_the_models_items_are_stored_with_their_sources_and_unsourced_ones_dropped(app, server):  # noqa: F811
    conv = app.store.create_conversation(USER)
    say_by_sql(app, conv.id, TURNS)
    server.queue.append(Reply(content=json.dumps({"items": [
        {"source": 1, "person": "user", "kind": "fact", "subject": "kitten", "topic": "pets",
         "value": "adopted a kitten called Pixel", "explicit": True},
        {"source": 3, "person": "user", "kind": "preference", "topic": "diet", "value": "gluten intolerant",
         "slot": "diet"},
        {"source": 2, "person": "user", "kind": "fact", "value": "said congratulations"},  # the assistant's turn
        {"source": 99, "person": "user", "kind": "fact", "value": "lives on the moon"}]})))
    failures: list[str] = []
    model, learner = _learner(server, failures)
    with model:
        done = learning.learn_all(app, USER, conv.id, learner)
    items = {i.value: i for i in profile.list_profile(app, USER)}
    assert set(items) == {"adopted a kitten called Pixel", "gluten intolerant"}
    assert items["adopted a kitten called Pixel"].subject == "kitten"
    assert items["gluten intolerant"].key == "user|self|diet|diet"
    assert [s.external_id for s in items["gluten intolerant"].sources] == [None]
    assert done.candidates == 2 and learner.unsourced == 2 and failures == []
    prompt = server.requests[0]["body"]["messages"][1]["content"]
    assert "#1" in prompt and "Pixel" in prompt and server.requests[0]["body"]["response_format"] == {"type": "json_object"}


def test_a_failed_reply_falls_back_to_the_key_free_learner_for_the_batch(app, server):  # noqa: F811
    conv = app.store.create_conversation(USER)
    say_by_sql(app, conv.id, TURNS)
    server.queue.append(Reply(content='{"items": [{"source": 1, "kind": "rumour", "value": "x", "person": "user"}]}'))
    failures: list[str] = []
    model, learner = _learner(server, failures)
    with model:
        learning.learn_all(app, USER, conv.id, learner)
    values = {i.value for i in profile.list_profile(app, USER)}
    assert "I'm gluten intolerant, so keep that in mind for recipes" in values  # the extractive rules' item
    assert failures == ["schema"] and learner.fallbacks == 1


def test_the_llm_learner_is_the_one_configured_with_the_llm_summarizer(settings, server):  # noqa: F811
    llm_settings = settings.model_copy(update={"summarizer": "llm", "llm_base_url": server.base_url})
    model = LLMSummarizer(base_url=server.base_url, model=MODEL, api_key=None, fallback=ExtractiveSummarizer(get_counter()),
                          counter=get_counter())
    with model:
        assert isinstance(make_learner(llm_settings, model), LLMLearner)
        assert isinstance(make_learner(settings, ExtractiveSummarizer(get_counter())), ExtractiveLearner)

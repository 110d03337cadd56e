"""External search's pure parts: the decision rules, query anonymization, HTML cleaning, the
small LLM's strict yes."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from memctx.web.anonymize import Anonymizer
from memctx.web.cache import fingerprint
from memctx.web.clean import clean_html, cut
from memctx.web.decide import decide, entities
from memctx.web.slm import parse_yes
from memctx.tokens import get_counter

WEB = Path(__file__).resolve().parents[1] / "fixtures" / "web"
TODAY = date(2026, 11, 23)
PEOPLE = ("Caroline", "Melanie")
KNOWN = "Caroline: I went to the Pride Parade with Melanie. We talked about the Hartwell Project."

# query → (web search?, what the reason must mention)
DECISIONS = [
    ("What is the latest version of PostgreSQL?", True, "temporal 'latest'"),
    ("Who is Sam Altman?", True, "named 'Sam Altman' not in the conversation"),
    ("Tell me about Acme Widgets Inc.", True, "'Acme Widgets Inc'"),
    ("Is Python 3.14 out?", True, "'Python 3.14'"),
    ("Any news from the 2026 elections?", True, "temporal '2026'"),
    ("What's the weather today in Lisbon?", True, "temporal 'today'"),
    ("What is the price of an ounce of gold right now?", True, "temporal 'now'"),
    ("What did Caroline research?", False, "names the conversation's Caroline"),
    ("When did Melanie paint a sunrise?", False, "names the conversation's Melanie"),
    ("What happened at the Pride Parade?", False, "no rule fired"),  # named, but already in the conversation
    ("What is your favourite colour?", False, "personal"),
    ("What did we decide in 2019?", False, "personal"),
    ("Can you rewrite this paragraph more formally?", False, "no rule fired"),
    ("thanks, that helps", False, "no rule fired"),
]


@pytest.mark.parametrize("query, search, reason", DECISIONS)
def test_keyword_rules_decide_and_say_why(query, search, reason):
    decision = decide(query, threshold=1.0, known=KNOWN, people=PEOPLE, today=TODAY)
    assert (decision.search, decision.by) == (search, "keyword"), decision.reason
    assert reason in decision.reason


def test_a_strong_memory_hit_on_the_same_names_keeps_the_query_off_the_web():
    query = "What's the latest on the Hartwell Project?"
    assert decide(query, threshold=1.0, known=KNOWN, today=TODAY).search  # 'latest' fires
    memories = ["Ben: the Hartwell Project ships in May, the budget was approved last week."]
    decision = decide(query, threshold=1.0, known=KNOWN, memories=memories, today=TODAY)
    assert (decision.search, decision.by) == (False, "memory")
    assert "Hartwell Project" in decision.reason
    # a hit that does not mention the name is no answer
    assert decide(query, threshold=1.0, known=KNOWN, memories=["Ben: lunch was fine."], today=TODAY).search


def test_the_threshold_is_the_setting_and_the_small_llm_is_asked_only_when_no_rule_fired():
    assert not decide("Who is Sam Altman?", threshold=2.0, today=TODAY).search
    asked: list[str] = []

    def slm(query):
        asked.append(query)
        return True, "answered 'yes'"

    assert decide("how tall is the eiffel tower", threshold=1.0, slm=slm, today=TODAY).by == "slm"
    assert decide("What did Caroline research?", threshold=1.0, people=PEOPLE, slm=slm, today=TODAY).by == "keyword"
    assert asked == ["how tall is the eiffel tower"]


@pytest.mark.parametrize("answer, yes", [("yes", True), ("Yes.", True), (" YES! ", True), ("no", False),
                                         ("Yes, but", False), ("maybe", False), ("", False), (None, False),
                                         ("I think yes", False)])
def test_only_a_clear_yes_from_the_small_llm_is_yes(answer, yes):
    assert parse_yes(answer) is yes


def test_entities_are_names_companies_and_versions():
    assert set(entities("Compare Node.js 22.1 with Deno 2.0 at Vercel Inc")) == {"Node.js 22.1", "Deno 2.0",
                                                                                   "Vercel Inc"}
    assert entities("What is the capital of New South Wales?") == ("New South Wales",)


def test_anonymization_removes_personal_data_before_a_query_leaves():
    anonymizer = Anonymizer((r"ticket-\w+",))
    query = ("Caroline's flight: email caroline.m@example.org or call +1 (415) 555-0132, booking 48213377, "
             "ticket-AB12 - delays at Lisbon airport in 2026? melanie says 3 bags")
    sent = anonymizer.clean(query, PEOPLE)
    for secret in ("caroline", "Caroline", "example.org", "555", "48213377", "ticket-AB12", "melanie"):
        assert secret not in sent
    assert "Lisbon airport in 2026" in sent and "3 bags" in sent  # what the search needs stays


def test_cleaning_keeps_the_article_and_drops_the_page_around_it():
    counter = get_counter("cl100k_base")
    page = clean_html((WEB / "news-article.html").read_text(), "https://news.example/pg18", counter, 400)
    assert page.title == "PostgreSQL 18 released with asynchronous I/O" and page.url == "https://news.example/pg18"
    for kept in ("asynchronous I/O subsystem", "What else is new", "Skip scans on multicolumn B-tree indexes.",
                 "data checksums for new clusters."):
        assert kept in page.text
    for dropped in ("cookies", "Subscribe", "Advertisement", "Share on", "Hidden tracking", "invisible",
                    "newsletter", "Related stories", "comments", "Most read", "All rights reserved", "gtag",
                    "Skip to content", "Home ›"):
        assert dropped not in page.text
    assert "  " not in page.text
    blog = clean_html((WEB / "blog-post.html").read_text(), "https://paws.example/collie", counter, 400)
    assert "hip scores" in blog.text
    assert not any(x in blog.text for x in ("Free shipping", "10% off", "Categories", "Rex", "Tweet", "WordPress"))


def test_boilerplate_is_known_by_a_whole_class_name_or_a_word_of_one():
    html = ('<main><p>The release notes list asynchronous I/O.</p><span class="sr-only">Opens in a new tab</span>'
            '<div id="cookie_banner">We use cookies.</div><p class="visually-hidden">Skip</p></main>')
    text = clean_html(html, "u", get_counter("cl100k_base"), 200).text
    assert text == "The release notes list asynchronous I/O."


def test_cleaned_text_is_cut_on_a_sentence_to_the_token_cap():
    counter = get_counter("cl100k_base")
    page = clean_html((WEB / "news-article.html").read_text(), "u", counter, 60)
    assert counter.count(page.text) <= 60
    assert page.text.endswith("open source database.")
    assert cut(["One two three four five six seven eight nine ten eleven."], counter, 4).endswith("…")


def test_the_cache_key_folds_case_and_spacing_and_follows_the_settings():
    key = fingerprint("Postgres 18  release", engines=["searxng"], max_results=3, result_tokens=300)
    assert key == fingerprint("postgres 18 release", engines=["searxng"], max_results=3, result_tokens=300)
    assert key != fingerprint("postgres 18 release", engines=["duckduckgo"], max_results=3, result_tokens=300)
    assert len(key) == 64

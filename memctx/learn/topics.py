"""What a profile item is about: its topic, its subject, and the slot it fills. Pure.

Owns: the topics (a small lexicon of plain words each: diet, health, home, work …), which words
of a text or a query name them (`topics_of`), an item's subject (the person themselves, or a
relation of theirs: "my sister …" is about the sister), and the slots that hold one value at a
time (where someone lives, their job, their age, their diet, their name …), so that a new
explicit value replaces the old one. A query's topics let a profile item bear on a question that
shares no word with it ("What should I cook tonight?" and "I'm vegetarian" are both about food).
"""

from __future__ import annotations

import re
from functools import lru_cache

from memctx.learn.types import SELF
from memctx.words import bare_words

# Topic → its words (lower case, bare: "sister's" counts as "sister"). An item takes the topic
# most of its words name (the first listed on a tie); a query bears on every topic it names.
TOPIC_WORDS: dict[str, frozenset[str]] = {name: frozenset(words.split()) for name, words in {
    "style": "answer answers reply replies respond response responses brief briefly short shorter concise "
             "detailed detail verbose tone formal informal casual bullet bullets format formatting markdown "
             "emoji emojis explain explanation explanations summary summaries",
    "diet": "vegetarian vegan pescatarian meat fish chicken beef pork eat eating ate food foods diet keto paleo "
            "gluten dairy lactose cook cooking cooked recipe recipes meal meals dinner lunch breakfast "
            "restaurant restaurants cuisine snack snacks dish dishes bake baking dessert desserts coffee tea "
            "drink drinks wine beer sugar spicy",
    "health": "allergic allergy allergies intolerant intolerance asthma diabetes diabetic health healthy "
              "doctor doctors medication medications medicine symptoms illness sick injury injured surgery "
              "therapy therapist hearing blood pressure condition diagnosed pain migraine migraines anxiety "
              "depression mental sleep insomnia",
    "fitness": "gym workout workouts exercise exercises exercising run running runner marathon yoga pilates "
               "fitness training trainer steps hike hiking swim swimming cycling lift lifting weights",
    "home": "live lives living moved move moving apartment house home city town neighborhood neighbourhood "
            "rent flat garden garage bedroom kitchen backyard furniture address relocated",
    "work": "work works working job jobs career office company boss colleague colleagues coworker coworkers "
            "salary promotion manager employer employed business startup client clients hired fired "
            "profession shift shifts",
    "education": "school college university degree degrees course courses class classes study studying "
                 "studied exam exams thesis graduate graduated graduation undergraduate undergrad master "
                 "masters phd diploma certificate certification semester major student teacher lecture",
    "family": "family wife husband partner spouse sister sisters brother brothers sibling siblings mom mother "
              "dad father parent parents son sons daughter daughters kid kids child children baby babies "
              "grandma grandpa grandmother grandfather grandparents cousin cousins aunt uncle niece nephew "
              "married marriage wedding fiance fiancee engaged divorced boyfriend girlfriend",
    "pets": "pet pets dog dogs puppy puppies cat cats kitten kittens bird birds parrot hamster rabbit bunny "
            "horse horses fish aquarium turtle vet",
    "hobbies": "hobby hobbies paint painting painted drawing draw sketch music instrument guitar piano violin "
               "drums sing singing dance dancing photography photos camera gardening knitting crafts pottery "
               "woodworking gaming game games chess collect collecting collection fishing camping writing "
               "poetry poems stories volunteer volunteering",
    "media": "movie movies film films show shows series tv netflix song songs album albums band bands artist "
             "artists concert concerts podcast podcasts book books novel novels author genre documentary "
             "documentaries anime comics reading read audiobook audiobooks",
    "travel": "trip trips travel traveling travelling travelled traveled vacation vacations holiday flight "
              "flights fly flying airline hotel hotels visit visited abroad country countries beach passport",
    "finance": "money budget spend spent spending price prices cost costs save saving savings invest "
               "investing investment loan debt bank paid pay bills income expenses dollars euros pounds",
    "tech": "python javascript typescript java rust golang sql excel spreadsheet software app apps code coding "
            "program programming laptop computer phone iphone android linux windows mac macos editor vscode "
            "vim emacs keyboard mouse",
    "possessions": "car cars bike bicycle truck motorcycle bought buy buying own owns purchase purchased "
                   "watch jewelry gift gifts",
}.items()}

# The relations an item can be about: "my sister lives in Berlin" is about the sister.
RELATIONS = frozenset("""
wife husband partner spouse boyfriend girlfriend fiance fiancee sister brother sibling mom mother dad father
parents parent son daughter kids kid children child baby grandma grandpa grandmother grandfather
grandparents cousin aunt uncle niece nephew friend boss coworker colleague roommate neighbor neighbour
dog cat puppy kitten pet bird horse
""".split())
_PLURAL = {"kids": "kid", "children": "child", "parents": "parent", "sisters": "sister", "brothers": "brother",
           "dogs": "dog", "cats": "cat", "friends": "friend", "cousins": "cousin", "grandparents": "grandparent",
           "mom": "mother", "dad": "father"}
_RELATION = re.compile(r"^\s*(?:my|our)\s+(?:(?:older|younger|little|big|baby|best|new|old|eldest|oldest|youngest|"
                       r"two|three|\w+-year-old)\s+)*([a-z]+)\b", re.IGNORECASE)

# Slots that hold one value at a time, and the phrases that fill them (a value of its own says
# which slot: "we moved to Lisbon" fills home, "I just turned 33" fills age).
SLOTS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple((name, topic, re.compile(pattern, re.IGNORECASE)) for name, topic, pattern in (
    ("name", "family", r"\b(?:my\s+name\s+is|my\s+name's|call\s+me|I\s+go\s+by)\b"),
    ("home", "home", r"\b(?:(?:I|we)\s+(?:now\s+|still\s+|currently\s+)?(?:live|lives|living)\s+in|(?:I|we)\s+(?:just\s+|recently\s+|finally\s+)?"
                     r"(?:moved|relocated)\s+(?:back\s+)?to|(?:I'm|I\s+am|we're|we\s+are)\s+(?:now\s+)?(?:based|living)\s+in|"
                     r"(?:lives|living)\s+in)\b"),
    ("job", "work", r"\b(?:(?:I|she|he)\s+(?:now\s+|currently\s+|still\s+)?works?\s+(?:as|at|for)|(?:I|she|he)\s+(?:just\s+|recently\s+)?"
                    r"(?:got|started|landed|took)\s+(?:a\s+|my\s+|the\s+)?(?:new\s+)?(?:job|position|role)|my\s+(?:new\s+)?job\s+(?:is|as)|"
                    r"(?:I'm|I\s+am)\s+employed\b|(?:I|we)\s+(?:just\s+)?started\s+working\s+(?:at|for|as))"),
    ("age", "family", r"\b(?:(?:I'm|I\s+am|(?:she|he)\s+is|(?:she|he)'s)\s+\d{1,3}(?:\s+years?\s+old)?\b(?!\s*(?:%|percent|minutes|"
                      r"hours|miles|km|pounds|kg|dollars|times|pages|days|weeks|months))|(?:I|she|he)\s+(?:just\s+)?turned\s+\d{1,3}\b)"),
    ("diet", "diet", r"\b(?:(?:I'm|I\s+am|we're|we\s+are)\s+(?:now\s+|still\s+|no\s+longer\s+|not\s+)?(?:a\s+)?(?:strict\s+)?"
                     r"(?:vegetarian|vegan|pescatarian|omnivore|carnivore|keto|gluten-free|dairy-free)|(?:I|we)\s+"
                     r"(?:don't|do\s+not|no\s+longer|now|still)\s+eat\s+(?:meat|fish|dairy|gluten|eggs)|eat\s+meat\s+again)\b"),
    ("relationship", "family", r"\b(?:I'm|I\s+am|we're|we\s+are|we\s+got|I\s+got)\s+(?:now\s+|recently\s+|just\s+|newly\s+)?"
                               r"(?:married|single|engaged|divorced|separated|widowed)\b"),
))


@lru_cache(maxsize=8192)
def topic_words(text: str) -> frozenset[str]:
    """The words of `text` as the lexicon reads them (bare, lower case, a plural's singular too)."""
    found = set(bare_words(text))
    found |= {w[:-1] for w in found if len(w) > 3 and w.endswith("s")}
    return frozenset(found)


def topics_of(text: str) -> tuple[str, ...]:
    """Every topic `text` names, most named first (lexicon order on a tie)."""
    said = topic_words(text)
    counts = [(len(said & listed), i, name) for i, (name, listed) in enumerate(TOPIC_WORDS.items())]
    return tuple(name for n, _, name in sorted(counts, key=lambda c: (-c[0], c[1])) if n)


def topic_of(text: str, default: str = "general") -> str:
    """The topic an item's value names most (`default` when none)."""
    found = topics_of(text)
    return found[0] if found else default


def subject_of(text: str) -> str:
    """Whom a first-person statement is about: a relation it opens with ("my sister …" → sister),
    else the person themselves (`SELF`)."""
    match = _RELATION.match(text)
    if match:
        word = match.group(1).lower()
        word = _PLURAL.get(word, word)
        if word in RELATIONS or word in _PLURAL.values():
            return word
    return SELF


def slot_of(text: str) -> tuple[str, str] | None:
    """The one-value slot a statement fills and its topic, or None (an item among many)."""
    for name, topic, pattern in SLOTS:
        if pattern.search(text):
            return name, topic
    return None

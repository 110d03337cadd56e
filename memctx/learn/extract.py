"""The key-free learner: what each message says outright about the person who said it. Pure.

Owns: `ExtractiveLearner`, the default `Learner`. For each message of a person (a named speaker,
or the unnamed user: an assistant without a name speaks for nobody), sentence by sentence:

- a standing instruction to the assistant ("please keep answers short", "from now on, reply in
  Spanish", "always use metric units") is an `instruction`;
- a stated preference, rule or correction (`memctx.summarize.detect.is_constraint`: "I prefer
  aisle seats", "I'm allergic to peanuts", "I don't eat meat") is a `preference`;
- a plan or goal of the speaker's own with a concrete act (`detect.is_action`: "I'm planning to
  run a marathon in May") is a `plan`;
- something the speaker did, has or is (`detect.is_key_fact`, or a statement of who they are:
  "I live in Porto", "I'm a nurse", "I have two kids", "I just turned 32"), in the first person,
  is a `fact`.

Questions are not statements (a request's "By the way, …" sentence is its own sentence and
counts). Each item's value is the sentence's fact clause or the sentence without its opening
("Oh, by the way, …"), in the speaker's own words, at most `MAX_WORDS` words; its subject, topic
and slot come from `memctx.learn.topics`. A correction ("actually, we moved to Lisbon") is marked
so: it replaces what it corrects at once.

Left out: talk about the talk (a promise to report back or to look something up, a hope, thanks),
anything said to or about the listener ("you"), and a value that leans on what came before it
("It really is …", "That is one of my favorites").

Inferred, not said outright (`explicit=False`), from an unnamed user's requests to an assistant:
the programming language they ask for ("… in Python"), and how long they want answers ("shorter
please", "more detail"). These must earn their place (memctx.learn.merge).
"""

from __future__ import annotations

import re
from typing import Sequence

from memctx.learn.topics import slot_of, subject_of, topic_of
from memctx.learn.types import Candidate, Kind, ProfileItem, Said
from memctx.summarize import detect
from memctx.words import split_sentences, words

MAX_WORDS = 40  # an item's value at most; a longer sentence keeps its first clauses
PER_MESSAGE = 3  # items learned from one message at most (the first ones said)
MAX_SENTENCE_WORDS = 80  # a longer "sentence" is a list or a paste, not a statement about oneself

_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me|mine|we|we're|we've|our|us)\b", re.IGNORECASE)
# Addressed to the assistant, and meant to last: "from now on", "always", "never", "please keep …".
_INSTRUCTION = re.compile(
    r"^\s*(?:please\s+)?(?:always|never|don't|do\s+not|only|stop|avoid)\s+(?:answer|reply|respond|use|using|write|"
    r"give|suggest|recommend|include|mention|add|format|call|send|show|explain|use|assume|ask|put)\b|"
    r"\b(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+all\s+future)\b.*\b(?:you|your|answer|reply|"
    r"respond|use|write|give|call|send|keep|always|never|please|don't)\b|"
    r"\b(?:I\s+(?:want|need|would\s+like)|I'd\s+like)\s+you\s+to\s+(?:always|never|only|keep|stop|use|answer|reply|"
    r"respond|write)\b|"
    r"^\s*(?:please\s+)?(?:keep|make)\s+(?:your\s+|the\s+)?(?:answers?|replies|reply|responses?|explanations?)\s+"
    r"(?:short|shorter|brief|concise|detailed|simple|in\s+\w+)\b|"
    r"^\s*(?:please\s+)?(?:answer|reply|respond|write)\s+(?:briefly|concisely|in\s+(?:English|Spanish|French|German|"
    r"Portuguese|Italian|Dutch|Japanese|Chinese|bullet\s+points|plain\s+English))\b",
    re.IGNORECASE,
)
# Who someone is, said plainly: not always a "fact" of the board's kind (no event), but the
# profile's core.
_IDENTITY = re.compile(
    r"\b(?:I|we)\s+(?:now\s+|still\s+|currently\s+)?(?:live|work|study|teach)\b|\b(?:I'm|I\s+am)\s+(?:a|an)\s+[a-z]|"
    r"\b(?:I|we)\s+(?:have|own)\s+(?:a|an|two|three|four|five|\d+)\s+\w|\bmy\s+(?:\w+\s+){0,2}(?:is|are|was|were)\s+|"
    r"\b(?:I'm|I\s+am)\s+\d{1,3}\b|\bturned\s+\d{1,3}\b|\b(?:I|we)\s+(?:usually|always|often|normally|"
    r"regularly)\s+\w|\b(?:I|we)(?:'ve|\s+have)\s+been\s+\w+ing\b|\b(?:I|we)\s+(?:just\s+|recently\s+)?moved\b|"
    r"\b(?:I'm|I\s+am|we're|we\s+are)\s+(?:married|engaged|divorced|single|pregnant|retired|expecting)\b|"
    r"\b(?:I|we)\s+(?:come|came)\s+from\b|\bI\s+grew\s+up\b|\bI\s+was\s+born\b|\bI\s+(?:speak|play|drive|ride)\s+\w|"
    r"\bI(?:'m|\s+am)\s+(?:really\s+|very\s+|so\s+|terribly\s+)?(?:afraid|scared|terrified|frightened)\s+of\b|"
    r"\bI\s+have\s+(?:a\s+)?(?:fear|phobia)\s+of\b|\b(?:I|we)(?:'ve|\s+have)\s+(?:just\s+|now\s+|already\s+|finally\s+|"
    r"recently\s+|also\s+)?(?:\w+ed|read|seen|done|made|bought|sold|won|lost|run|written|taken|given|got|gotten)\b|"
    r"\bI(?:'m|\s+am)\s+(?:claustrophobic|colou?r-?blind|deaf|diabetic|"
    r"left-handed|an?\s+(?:introvert|extrovert|early\s+bird|night\s+owl))\b",
    re.IGNORECASE,
)
# A correction's opening word, left out of the value it states ("Actually, we moved to Lisbon").
_AMENDS = re.compile(r"^\s*(?:actually|correction|update|no|nope|sorry|oops|wait|well)\b[,:!.]?\s*", re.IGNORECASE)
# What someone cannot take, said of a thing before the word: "I'm gluten intolerant", "I'm very
# sensitive to caffeine" (the board's constraint rule reads "intolerant" only first).
_CONDITION = re.compile(r"\bI(?:'m|\s+am)\s+(?:\w+\s+){0,2}(?:intolerant|allergic|sensitive)\b", re.IGNORECASE)
# Talk about the talk, not about the person: a promise to report back or to look something up, a
# hope, thanks ("I'll let you know how it goes", "I'll have to check it out", "I'm so grateful").
_CHATTER = re.compile(
    r"\blet\s+(?:you|me)\s+know\b|\blook\s+into\b|\bcheck\s+(?:it|that|them|this)\s+out\b|\bhopefully\b|"
    r"\bI'm\s+hoping\b|\bwe\s+should\b|\bI'll\s+have\s+to\b|\badd\s+(?:it|that)\s+to\s+my\s+list\b|"
    r"\bkeep\s+you\s+(?:posted|updated)\b|\bthink\s+about\s+it\b|\bgive\s+it\s+a\s+(?:try|shot|go)\b|"
    r"\b(?:grateful|thankful)\b|\bI\s+hope\b|\bcan't\s+wait\b|\blemme\b|\bgotta\b",
    re.IGNORECASE)
# About the listener as much as the speaker ("I'm behind you", "I'll send you a video"): not a
# statement about the speaker (an instruction to an assistant names it, and is one).
_LISTENER = re.compile(r"\byou(?:r|rs|'re|'ll|'ve)?\b", re.IGNORECASE)
# A value that leans on what was said before it ("It really is …", "That is one of my favorites",
# "Which is why …", "You know I love …") says nothing on its own.
_LEANING = re.compile(r"^[\"“']?(?:it|that|this|these|those|which|they|you|he|she|so|but|and)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"(?<=[,;:])\s+|\s+[-–—]+\s+")

# Inferred from requests: the language a person asks for code in.
_LANGUAGE = re.compile(
    r"\b(?:in|using|with|use|written\s+in|code\s+in|script\s+in)\s+(Python|JavaScript|TypeScript|Java|Go|Golang|Rust|"
    r"Ruby|PHP|Kotlin|Swift|C\+\+|C#|SQL|Bash|Haskell|Scala|Elixir|Julia|Perl|Lua|Dart|R)(?![\w+#])")
_SHORTER = re.compile(r"\b(?:too\s+long|shorter|more\s+concise|be\s+brief|tl;?dr|keep\s+it\s+short|less\s+verbose)\b",
                      re.IGNORECASE)
_LONGER = re.compile(r"\b(?:more\s+detail(?:s|ed)?|elaborate|too\s+short|in\s+more\s+depth|longer\s+answer|"
                     r"explain\s+(?:it\s+)?in\s+detail)\b", re.IGNORECASE)


class ExtractiveLearner:
    """The default `Learner`: no model, the rules above."""

    name = "extractive"

    def learn(self, messages: Sequence[Said], known: Sequence[ProfileItem] = ()) -> list[Candidate]:
        found: list[Candidate] = []
        for message in sorted(messages, key=lambda m: m.seq):
            found += learn_message(message)
        return found


def learn_message(message: Said) -> list[Candidate]:
    """What one message says about its person (see the module docstring), in the order said."""
    person = message.person
    if person is None or not message.text.strip():
        return []
    out: list[Candidate] = []
    for sentence in split_sentences(message.text):
        if len(out) >= PER_MESSAGE:
            break
        candidate = _statement(message, person, sentence)
        if candidate is not None and all(c.value != candidate.value for c in out):
            out.append(candidate)
    if message.role == "user" and message.speaker is None:  # a user asking an assistant
        out += _inferred(message, person)
    return out


def _statement(message: Said, person: str, sentence: str) -> Candidate | None:
    """The item one sentence states, or None."""
    text = sentence.replace("’", "'").strip()
    count = len(words(text))
    if count < 3 or count > MAX_SENTENCE_WORDS or text.rstrip().endswith("?"):
        return None
    kind: Kind
    if _INSTRUCTION.search(text):
        kind, value = "instruction", clipped(detect.opening_removed(text))
    elif not _FIRST_PERSON.search(text):
        return None  # about someone else, or about nothing in particular
    elif detect.is_constraint(text) or _CONDITION.search(text):
        kind, value = "preference", clipped(detect.opening_removed(text))
    elif detect.is_key_fact(text) or _IDENTITY.search(text):
        kind, value = "fact", clipped(detect.fact_clause(text))
        if not _FIRST_PERSON.search(value):
            return None  # the fact clause is about someone else ("Jon won the race")
    elif detect.is_action(text):
        kind, value = "plan", clipped(detect.opening_removed(text))
    else:
        return None
    if kind != "plan" and detect.is_action(text) and not detect.is_constraint(text) and kind == "fact" \
            and re.search(r"\b(?:I'll|I\s+will|going\s+to|planning|plan\s+to)\b", value, re.IGNORECASE):
        kind = "plan"
    if detect.is_platitude(value) or len(words(value)) < 3 or _CHATTER.search(value) or _LEANING.match(value) \
            or (kind != "instruction" and _LISTENER.search(value)):
        return None
    amended = _AMENDS.match(value)
    if amended and len(words(value[amended.end():])) >= 3:
        value = value[amended.end():]
        value = value[:1].upper() + value[1:]
    slot = slot_of(value)
    attribute, slot_topic = slot if slot else ("", None)
    topic = "style" if kind == "instruction" else slot_topic or topic_of(value)
    return Candidate(message, person, kind, subject_of(value), topic, value.rstrip(" ,;:"), attribute,
                     explicit=True, correction=detect.is_correction(text) or bool(amended and slot))


def clipped(text: str, limit: int = MAX_WORDS) -> str:
    """`text` cut to its first clauses within `limit` words (at a word when one clause is longer)."""
    text = text.strip()
    if len(words(text)) <= limit:
        return text.rstrip(" .!")
    kept, total = [], 0
    for part in _CLAUSE.split(text):
        n = len(words(part))
        if total + n > limit:
            break
        kept.append(part)
        total += n
    if not kept:
        return " ".join(text.split()[:limit]).rstrip(" ,;:.!")
    return " ".join(kept).rstrip(" ,;:.!")


def _inferred(message: Said, person: str) -> list[Candidate]:
    """What a request says of its author without saying it: the programming language asked for,
    and how long answers should be."""
    out = []
    language = _LANGUAGE.search(message.text)
    if language:
        name = "Go" if language.group(1) == "Golang" else language.group(1)
        out.append(Candidate(message, person, "preference", "self", "tech", f"writes code in {name}",
                             "programming language", explicit=False))
    if _SHORTER.search(message.text):
        out.append(Candidate(message, person, "preference", "self", "style", "prefers short answers",
                             "answer length", explicit=False))
    elif _LONGER.search(message.text):
        out.append(Candidate(message, person, "preference", "self", "style", "prefers detailed answers",
                             "answer length", explicit=False))
    return out

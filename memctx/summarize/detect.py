"""What a board sentence is: a key fact, an action item, a constraint, a correction, a question.

Owns: the key-free detectors the board rules (`memctx.summarize.board`) and the board measure
(`memctx.evaluate.board`) share. Each takes one sentence and answers yes or no. Pure; no model,
no I/O.

- Cheering, thanks, greetings, compliments and platitudes ("You've got this!", "Let's keep
  making a difference!", "Thanks for always having my back") are never facts or actions: a
  sentence made of them and carrying no first-person fact is `is_platitude`.
- A key fact is a statement about the speaker's own life or a named third party, with a fact cue
  (a first-person fact, a name that is not someone addressed, a number, a date): something the
  speaker did, or a fact stated outright (a relative named, a named person's dated thing, a
  dated schedule, a quantity).
- An action item has an actor (I, we, let's) and a concrete act: an intent ("I'll", "I'm going
  to", "we're planning to", "let's") followed by a verb that does something (send, visit, try,
  read, sign up …), not one that keeps a mood (keep going, do my best, make it happen); or a
  request for one ("Can you remind me to book the tickets?"), or an order placed with the other
  side ("Order more butter on Wednesday"). A plan told with its facts (a named relative, a day)
  is a key fact, not an action item.
- A constraint is a stated preference, rule or correction about what to do or avoid: "I prefer",
  "my favorite … is", "I'm not into", "I'm allergic to", "please don't", "never call me …", "from
  now on", or a correction. A sentence merely starting with "never" or "always" is not one.
- A question is a sentence ending in "?" that asks for something: not a greeting ("How are
  you?") and not a tag ("…, right?", "huh?"). Whether it was answered is the board's call.
"""

from __future__ import annotations

import re

from memctx.summarize.text import MONTHS, RELATIONS, cues, names

_IMAGE_ONLY = re.compile(r"^\[image: [^\]]*\]$")


def _norm(sentence: str) -> str:
    return sentence.replace("’", "'").strip()


# Platitudes ----------------------------------------------------------------------------------

_CHEER = re.compile(
    r"\b(?:you(?:'ve|\s+have)?\s+got\s+this|(?:I'm|I\s+am|always)\s+(?:here|there)\s+for\s+you|here\s+to\s+help|"
    r"proud\s+of\s+you|believe\s+in\s+(?:yourself|you)|you\s+can\s+do\s+(?:it|this)|we\s+(?:got|can\s+do)\s+this|"
    r"never\s+(?:give\s+up|quit|stop)|don't\s+(?:give\s+up|quit|stop)|keep\s+(?:it\s+up|going|on|at\s+it|pushing|"
    r"chasing|moving|grinding|working|believing|spreading|trying|making|doing|supporting|motivating|inspiring|"
    r"up\s+the)|no\s+doubt|good\s+luck|best\s+of\s+luck|can't\s+wait|so\s+(?:happy|glad|proud)\s+for\s+you|"
    r"you(?:'re|\s+are)\s+(?:doing\s+)?(?:great|amazing|awesome|the\s+best|incredible|so\s+\w+)|same\s+here|me\s+too|"
    r"thanks?|thank\s+you|appreciate|congrat\w*|means\s+(?:a\s+lot|so\s+much|everything)|sounds\s+(?:great|good|fun|"
    r"awesome|amazing|cool|like)|(?:that|it)(?:'s|\s+is|\s+was|\s+must\s+(?:have\s+)?be(?:en)?)\s+(?:so\s+|really\s+|"
    r"super\s+|pretty\s+)?(?:great|awesome|amazing|cool|nice|wonderful|incredible|fantastic|inspiring|tough|hard|"
    r"powerful|special|sweet|beautiful|stunning)|right\s+attitude|just\s+do\s+it|make\s+(?:a|the)\s+(?:real\s+|big\s+"
    r")?(?:difference|change|impact)|take\s+care|talk\s+(?:to\s+you\s+)?soon|see\s+you|catch\s+you|have\s+a\s+"
    r"(?:great|good|nice)|let's\s+(?:keep|continue|do\s+(?:it|this)|get\s+to\s+work)|the\s+power\s+of|"
    r"(?:is|are)\s+(?:so\s+|really\s+)?(?:key|important|crucial|essential)|you\s+should|remember\s+(?:that|to|,))",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|my|me|we|we're|we've|our|us)\b", re.IGNORECASE)


def is_platitude(sentence: str) -> bool:
    """Cheering, thanks, compliments or a platitude with no fact of the speaker's own in it."""
    text = _norm(sentence)
    if cues(text).small_talk:
        return True
    if not _CHEER.search(text):
        return False
    return not (_EVENT.search(text) and (cues(text).number or cues(text).absolute_date or _named(text)))


# Key facts -----------------------------------------------------------------------------------

_VOCATIVE = re.compile(r"^(?:\w+[,!]?\s+){0,2}?([A-Z][\w'-]+)\s*[,!]|,\s*([A-Z][\w'-]+)\s*[.!?]*$")
_SECOND_PERSON = re.compile(r"^\s*(?:\w+[,!]?\s+){0,3}?(?:you|your|you're|you've|you'll)\b", re.IGNORECASE)
# Something the speaker did, had or is: the backbone of a fact worth keeping.
_EVENT = re.compile(
    r"\b(?:I|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+|actually\s+|even\s+|first\s+)?(?:\w+ed|went|got|made|"
    r"took|saw|met|won|lost|bought|began|found|had|have|has|did|gave|wrote|ran|sold|built|taught|left|became|came|"
    r"told|heard|kept|spent|read|own|was|were|'ve\s+\w+)\b|\bmy\s+\w+(?:\s+\w+){0,3}\s+(?:is|are|was|were|has|had|just|got)\b",
    re.IGNORECASE,
)
# Opinions, feelings, wishes, goals, likenesses and advice: true of the moment, rarely a fact to keep.
_NOT_FACT = re.compile(
    r"\b(?:so|really|super|pretty)\s+(?:cool|awesome|amazing|great|inspiring|fun|exciting|tough)\b|"
    r"\b(?:is|was|looks?)\s+(?:so\s+)?(?:cool|awesome|amazing|inspiring)\b|\bI'm\s+sure\b|\bfan\b|"
    r"\bfeels?\s+like\b|\bit's\s+like\b|\bmy\s+dream\s+is\b|\bI'm\s+trying\s+to\b|\b(?:I|we)\s+(?:hope|wish|want)\b|"
    r"^\s*(?:gotta|don't|do\s+not|remember|keep|just|believe|stay|let's|never|always)\b|"
    r"\b(?:is|are)\s+like\s+(?:a|an|my|the)\b|\bfavou?rite\s+part\b|\bmy\s+(?:main\s+)?goal\s+is\b|\bmain\s+focus\b",
    re.IGNORECASE,
)


_MONTH = r"(?:" + "|".join([*MONTHS, *(m[:3] for m in MONTHS if len(m) > 3), "Sept"]) + r")\.?"
# A day of a month, written out: "24 May", "May 24th".
_DAY_OF_MONTH = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?-i:{_MONTH})|(?-i:{_MONTH})\s+\d{{1,2}}(?:st|nd|rd|th)?)\b"
# Facts stated without a past event (each carries its own cue: a name, a day, a number):
# - someone close named: "with my partner Tomás", "my sister Ana", "my coworker Li";
# - a named person's thing with a day or a number: "Tomás's birthday is on 28 May";
# - the speaker's schedule on a given day: "we land on 24 May", "I start on June 3rd";
# - a quantity: "Budget is about 1,800 euros", "Each batch of croissants uses 2 kg flour".
_RELATIVE_NAMED = re.compile(rf"\b(?:my|our)\s+{RELATIONS},?\s+(?-i:[A-Z][\w'-]+)", re.IGNORECASE)
_NAMED_THING = re.compile(r"(?-i:\b[A-Z][\w-]*)'s\s+(?:[a-z]+\s+){1,2}(?:is|are|was|were)\b", re.IGNORECASE)
_SCHEDULE = re.compile(rf"\b(?:I|we)\s+(?:[\w']+\s+){{1,4}}?(?:on|by|until|from|before|after)\s+{_DAY_OF_MONTH}",
                       re.IGNORECASE)
_QUANTITY = re.compile(
    r"^\s*(?:(?:the|our|my|each|every|one)\s+)?(?!(?:it|that|this|there|he|she|they|we|you|i|which|what|who)\b)"
    r"[a-z][\w-]*(?:\s+(?:of\s+)?[\w-]+){0,2}\s+(?:is|are|was|were|uses|needs|takes|costs|weighs)\s+"
    r"(?:about\s+|around\s+|roughly\s+|approximately\s+|only\s+|just\s+|at\s+least\s+|under\s+|over\s+|almost\s+|"
    r"nearly\s+)?[€$£]?\d", re.IGNORECASE)


def _stated(text: str) -> bool:
    """A fact of one of the shapes above (a relative named, a named person's dated or numbered
    thing, a dated schedule, a quantity)."""
    if _RELATIVE_NAMED.search(text) or _SCHEDULE.search(text) or _QUANTITY.search(text):
        return True
    c = cues(text)
    return bool(_NAMED_THING.search(text)) and (c.number or c.absolute_date)


def _named(text: str) -> bool:
    """A name in the sentence other than someone addressed ("Yeah Jon, …", "…, Caroline.")."""
    addressed = {g for m in _VOCATIVE.finditer(text) for g in m.groups() if g}
    return any(n not in addressed for n in names(text))


def is_key_fact(sentence: str) -> bool:
    """A statement of something the speaker did, has or is (or a first-person fact cue), with a
    fact cue, that is not a platitude, an opinion, a wish or advice."""
    text = _norm(sentence)
    c = cues(text)
    if c.question or c.size < 4 or _IMAGE_ONLY.match(text) or is_platitude(text) or _NOT_FACT.search(text):
        return False
    if _SECOND_PERSON.match(text) and not _FIRST_PERSON.search(text):
        return False  # about the person addressed: usually a compliment or advice
    if not (c.fact or _EVENT.search(text) or _stated(text)):
        return False
    return c.fact or _named(text) or c.number or c.absolute_date


_CLAUSE = re.compile(r"\s+[-–—]+\s+|[-–—]{2}\s*|;\s+|,\s+(?:but|and|so|which|because|since|though|although|while|where)\s+")
# What the speaker thought of it, after the fact: "…, and it was really special!".
_VERDICT = re.compile(r"(?:,\s*|\s+and\s+)(?:it|that|this)(?:'s|\s+(?:is|was|felt|made))\s.*$", re.IGNORECASE)
_OPENING = re.compile(
    r"^(?:(?:yeah|yes|yep|wow|oh|aww|hey|hi|thanks|thank\s+you|sure|definitely|totally|absolutely|well|so|ok|okay|"
    r"haha|lol|omg|cool|awesome|great|nice|no|nope|ah|um|btw|by\s+the\s+way|anyway|anyways|honestly|also|and|but|"
    r"one\s+more\s+thing|"
    r"yup|plus|unfortunately|fortunately|luckily|sadly|thankfully|best\s+of\s+all|guess\s+what|on\s+(?:another|a\s+"
    r"(?:different|related|brighter|positive)|that)\s+note|since\s+(?:we|I)\s+last\s+(?:spoke|talked)|speaking\s+of\s+"
    r"[\w\s]+?)[\s,!.:–—-]+(?:[A-Z][a-z]+[,!.]\s+)?)+",
    re.IGNORECASE,
)
# A message's news-telling lead-in: "(Haven't talked in a while, but) wanted to let you know I …".
_NEWS = re.compile(r"^[^.!?]*?\b(?:wanted|want|had)\s+to\s+(?:let\s+you\s+know|tell\s+you|share)\s+(?:that\s+)?"
                   r"(?=(?:I|my|we|our)\b)", re.IGNORECASE)


def opening_removed(sentence: str) -> str:
    """The sentence without its opening interjections and asides ("Oh, by the way, …",
    "Wanted to let you know …"), as `fact_clause` reads it; the sentence itself when nothing
    is left."""
    return _OPENING.sub("", _NEWS.sub("", _norm(sentence))).strip() or sentence.strip()


def fact_clause(sentence: str) -> str:
    """The part of a key-fact sentence that states the fact: its opening interjections and
    asides ("Yeah, Jon, …", "Unfortunately, …", "wanted to let you know …") dropped, of its
    clauses the first that is a key fact by itself, and a verdict after it ("…, and it was so
    special") dropped when what is left is still a fact. A board line, not a sentence: no closing
    full stop or exclamation mark."""
    body = opening_removed(sentence)
    parts = [p.strip(" ,") for p in _CLAUSE.split(body) if p.strip(" ,")]
    best = next((p for p in parts if is_key_fact(p)), body)
    short = _VERDICT.sub("", best)
    best = short if short != best and is_key_fact(short) else best
    best = best[:1].upper() + best[1:]
    return best.rstrip(" .!") or best


# Action items --------------------------------------------------------------------------------

_INTENT = re.compile(
    r"(?:\b(?:I(?:'ll|\s+will)|we(?:'ll|\s+will)|(?:I'm|I\s+am|we're|we\s+are)\s+(?:\w+ly\s+|just\s+|also\s+|still\s+"
    r")?(?:going\s+to|gonna|hoping\s+to|about\s+to|down\s+to)|(?:I|we)\s+(?:plan|intend|promise|need|have)\s+to|"
    r"(?:I|we)'ve\s+got\s+to|(?:please\s+)?remind\s+me\s+to)|^\s*(?:gonna|gotta))"
    r"\s+((?:[\w'-]+\s+){0,5}[\w'-]+)",
    re.IGNORECASE,
)
# An intent whose object is the plan itself: "I'm planning a trip", "I'm getting ready for a
# dance comp", "Sending you the recipe now", "Visiting Paris is on my to-do list", "Don't forget
# the tickets" (a reminder of a thing, not "don't forget your passion").
_PLAN = re.compile(
    r"\b(?:I'm|I\s+am|we're|we\s+are)\s+(?:\w+ly\s+|also\s+|still\s+|now\s+)?(?:planning|getting\s+ready\s+for|"
    r"signing\s+up\s+for|booking|organizing|organising)\b|^\s*(?:I'm\s+)?sending\s+you\b|"
    r"\b(?:is|are)\s+(?:\w+ly\s+)?on\s+my\s+(?:to-?do\s+|bucket\s+)?list\b|\badd(?:ing)?\s+(?:it|that|this|them)\s+to\s+"
    r"my\s+(?:\w+\s+)?list\b|\b(?:we|I)\s+should\s+(?:plan|schedule|book|set\s+up)\b|"
    r"^\s*(?:please\s+)?(?:don't|do\s+not)\s+forget\s+(?:the|to)\b",
    re.IGNORECASE,
)
_LETS = re.compile(r"\blet's\s+((?:[\w'-]+\s+){0,3}[\w'-]+)", re.IGNORECASE)
# Joint plans need a concrete joint act ("let's meet on Friday"); most "let's" is cheering.
_JOINT_ACTS = frozenset("meet get-together go grab call schedule plan try watch visit cook bake play hang catch-up "
                        "talk-about book start do-lunch do-dinner have-lunch have-dinner".split())
_HEDGE = re.compile(r"\b(?:maybe|perhaps|someday|one\s+day|who\s+knows|might|whenever|if\s+I\s+can|one\s+of\s+these)\b",
                    re.IGNORECASE)
_FILLER = frozenset("definitely really also just probably surely totally soon then actually still".split())
_VAGUE = frozenset("""
keep continue stay-positive stay-strong stay-motivated stay-true stay-safe stay-optimistic stay-focused
stay-in-touch stay-upbeat stay-humble be never always do cherish savor remember treasure enjoy love miss rock chase push grind
work-hard work-together believe hope wish see-what see-how support motivate inspire celebrate figure think consider
handle stick appreciate reach need want get-to get-through get-support take-care catch talk speak have-a have-fun
live live-it see-you give-you-a give-it-my give-my do-my try-my make-it-happen make-it-work make-a make-the make-my
make-you make-your make-our make-this make-some make-happy make-great make-positive make-dreams make-sure-you
make-change make-memories spread-positivity spread-kindness spread-the-love spread-joy spread-the-joy
spread-awareness spread-love find-a-better find-a-way join-forces
""".split())


def _act(phrase: str, going: bool = False) -> bool:
    """Whether the words after an intent name a concrete act (not a mood or a vague resolve)."""
    words = [w.lower() for w in re.findall(r"[\w'-]+", phrase)]
    while words and (words[0] in _FILLER or words[:3] in (["be", "sure", "to"], ["make", "sure", "to"])
                     or words[:2] == ["try", "to"] or words[:2] == ["have", "to"]):
        words = words[3:] if words[:3] in (["be", "sure", "to"], ["make", "sure", "to"]) else \
            words[2:] if words[:2] in (["try", "to"], ["have", "to"]) else words[1:]
    if not words or words[0] in ("so", "it", "not", "never"):
        return False
    if words[0] in ("a", "an", "the"):
        return going  # "I'm going to a conference"; "I'll a…" is no act
    if words[0] == "be" and len(words) > 1 and words[1].endswith("ing"):
        words = words[1:]  # "I'll be tuning in"
    if words == ["make", "it"]:
        return False  # "I'm gonna make it!"
    if {"-".join(words[:n]) for n in (1, 2, 3, 4)} & _VAGUE:
        return False
    if words[0] in ("let", "tell") and "know" in words[:4]:
        rest = words[words.index("know") + 1:]
        return bool(rest) and rest[0] not in ("if", "when")  # "let you know how it goes", not a bare "let you know"
    return True


# An order placed with the other side: "Order more butter on Wednesday", "Book the 9:40 train".
_ORDER = re.compile(r"^\s*(?:please\s+)?(?:order|buy|book|reserve|schedule|cancel|renew|pay\s+for)\s+"
                    r"(?!(?:me|you|it|this|that|them|us|him|her)\b)\w", re.IGNORECASE)
# A request to the other side to do something: "Can you remind me to book the tickets?"
_REQUEST = re.compile(
    r"^\s*(?:\w+[,!]?\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:remind|book|schedule|send|call|email|"
    r"order|buy|add|set\s+up|cancel|reserve|note|write\s+down|pick\s+up|bring)\b",
    re.IGNORECASE,
)


def is_action(sentence: str) -> bool:
    """An intent with a concrete act, or a request for one; thanks or cheering around it do not
    matter ("Thanks! I'll send you the recipe")."""
    text = _norm(sentence)
    if _REQUEST.search(text) or _ORDER.search(text):
        return True
    if cues(text).question or _HEDGE.search(text):
        return False
    if any(_act(m.group(1), "going to" in m.group(0).lower()) for m in _INTENT.finditer(text)):
        return True
    if _PLAN.search(text):
        # A plan told with its facts ("I'm planning a week in Lisbon with my partner Tomás in late
        # May") is what the conversation is about, a key fact; a plan alone is something to do.
        return not is_key_fact(text)
    return any({"-".join(m.group(1).lower().split()[:n]) for n in (1, 2)} & _JOINT_ACTS for m in _LETS.finditer(text))


# Constraints and corrections ------------------------------------------------------------------

_PREFERENCE = re.compile(
    r"\bI\s+(?:really\s+|much\s+|always\s+)?prefer\b|\bI'd\s+(?:much\s+)?rather\b|\bI\s+would\s+rather\b|"
    r"\b(?:I|we)\s+(?:really\s+)?(?:don't|do\s+not|never|can't|cannot|won't)\s+(?:like|eat|drink|stand|"
    r"use|fly|drive|take)\b|\bI\s+(?:hate|dislike|avoid|can't\s+stand)\b|"
    r"\bI(?:'m|\s+am)\s+(?:not\s+(?:really\s+|much\s+|big\s+on|a\s+(?:big\s+)?fan\s+of|into)|(?:a\s+)?(?:big\s+|huge\s+)?"
    r"fan\b|(?:severely\s+|really\s+|very\s+)?(?:allergic|intolerant|lactose\s+intolerant|vegan|vegetarian|"
    r"gluten-free|sober|teetotal))|\bI\s+(?:got|am|was|became)\s+allergic\b|"
    r"\bmy\s+(?:\w+\s+){0,2}favou?rites?\s+(?:[\w'-]+\s+){0,4}(?:is|are)\b|\bfavou?rites?\s+of\s+mine\b|"
    r"(?:\b(?:is|are|be)|'s)\s+(?:also\s+|definitely\s+|still\s+)?(?:one\s+of\s+)?my\s+(?:all-time\s+|new\s+)?"
    r"favou?rites?\b(?!\s+(?:part|moment|memory|memories|thing\s+about))|\bI've\s+always\s+(?:liked|loved|preferred)\b|"
    r"\bat\s+the\s+top\s+of\s+my\s+list\b|\bis\s+my\s+(?:thing|jam|go-to)\b|"
    r"\b(?:I|we)\s+(?:really\s+|also\s+|just\s+)?(?:love|like|enjoy)\s+(?!(?:this|that|these|those|the|your|his|her|"
    r"their|our|my|how|it|when|what|where|you|him|them|seeing|hearing|having|being|to)\b)(?:\w+ing\b|(?:[\w-]+\s+"
    r"(?:and\s+)?){0,3}(?:movies|films|music|books|novels|games|food|shows|series|genres?)\b|[a-z]+\s*[.!]?$)|"
    r"\bI(?:'m|\s+am)\s+(?:really\s+|more\s+|so\s+|big\s+|totally\s+)into\b|\bI\s+(?:will\s+)?always\s+(?:love|prefer|choose|go\s+for)\b|"
    r"^\s*(?:please\s+)?(?:don't|do\s+not|never|always|only)\s+(?:call|text|email|message|send|schedule|book|"
    r"contact|tell|use|mention|bring|ask|wake|remind)\b|\bplease\s+(?:don't|do\s+not|always|never|only|stop|avoid|"
    r"make\s+sure)\b|\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\bmake\s+sure\s+(?:you|to)\s+(?:never|always|don't)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"(?:^|[.!?]\s+)actually,?\s+(?:I'm|I\s+am|I'll|I\s+will|we'll|it's|it\s+is|it\s+was|that's|the|my|we're|I\s+don't|"
    r"I\s+can't|no\b|"
    r"I\s+(?:prefer|meant|changed|switched))|\bI\s+meant\b|\bcorrection\b|\bto\s+clarify\b|\bscratch\s+that\b|"
    r"\bI\s+(?:misspoke|misread|misheard)\b|\b\d[\d,.:]*(?:\s+[A-Za-z]+)?,?\s+not\s+\d|\bthat'?s\s+(?:not\s+right|wrong|incorrect)\b|\bI\s+was\s+wrong\b|"
    r"^\s*(?:no|nope|sorry|oops),?\s+(?:it'?s|it\s+is|the|my|I\s+said|I\s+meant|I'm|I\s+am|we're|not)\b|"
    r"\b(?:changed|change)\s+(?:my\s+mind|of\s+plans?)\b|\bnot\s+[\w'-]+(?:\s+[\w'-]+){0,2},?\s+but\s+(?:\w+\s+)?"
    r"(?-i:\d|[A-Z][a-z])|\bno\s+longer\b|\bany\s*more\b(?=.*\b(?:now|instead)\b)|\binstead\s+of\b.*\bnow\b|"
    r"\b(?:I'm|I\s+am|we're)\s+\w+\s+now\b(?=.*\b(?:actually|anymore|no\s+longer)\b)",
    re.IGNORECASE,
)


def is_correction(sentence: str) -> bool:
    text = _norm(sentence)
    return not cues(text).question and bool(_CORRECTION.search(text))


def is_constraint(sentence: str) -> bool:
    text = _norm(sentence)
    if cues(text).question:
        return False
    return bool(_PREFERENCE.search(text)) or is_correction(text)


# Questions -----------------------------------------------------------------------------------

_GREETING_QUESTION = re.compile(
    r"^\s*(?:\w+[,!]?\s+){0,3}?(?:how(?:'s|\s+is|\s+are|'re|\s+have|'ve)\s+(?:you|ya|it|things|everything|life)"
    r"(?:\s+\w+){0,3}|what(?:'s|\s+is)\s+up|how\s+(?:you\s+)?(?:been|doing)|what's\s+new|how\s+was\s+your\s+"
    r"(?:day|weekend))\s*[?!.]*$",
    re.IGNORECASE,
)
_TAG_QUESTION = re.compile(
    r"(?:,\s*|\b)(?:right|huh|eh|isn't\s+it|aren't\s+they|don't\s+you\s+think|wasn't\s+it|ya\s+know|you\s+know)"
    r"\s*\?+\s*$|^\s*(?:who|what)\s+(?:doesn't|does\s+not|wouldn't)\b",
    re.IGNORECASE,
)


def is_question(sentence: str) -> bool:
    text = _norm(sentence)
    return cues(text).question and not _GREETING_QUESTION.match(text) and not _TAG_QUESTION.search(text)

"""A small LLM's yes or no on whether a query needs the web, when no keyword rule fired.

Owns: the prompt (a function returning the messages) and its strict parsing: anything but a
clear "yes" is no, and so is an error or a timeout. One short call through the `openai` client.
"""

from __future__ import annotations

import re
from typing import Any


def web_search_prompt(query: str) -> list[dict[str, str]]:
    """The messages asking whether `query` needs current information from the web."""
    return [
        {"role": "system", "content": "You decide whether a chat assistant must search the web to answer the "
                                      "user's message. Say yes only when it needs current or external facts "
                                      "the assistant cannot know (news, prices, releases, schedules, people or "
                                      "companies it has not heard about). Say no for chit-chat, opinions, "
                                      "writing help, reasoning, and anything about the user or the conversation. "
                                      "Answer with one word: yes or no."},
        {"role": "user", "content": query},
    ]


def parse_yes(answer: str | None) -> bool:
    """True only for a clear yes ("yes", "Yes.", " YES! ")."""
    return re.fullmatch(r"\s*yes\s*[.!]?\s*", answer or "", flags=re.IGNORECASE) is not None


class SmallLLM:
    """Asks a small model; callable as the decider's yes/no: query -> (yes, why)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 2.0) -> None:
        import openai  # imported only when a small LLM is configured: importing it is slow

        self.model = model
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0)

    @classmethod
    def from_settings(cls, settings: Any) -> "SmallLLM | None":
        if not settings.web_slm_model:
            return None
        key = settings.web_slm_api_key.get_secret_value() if settings.web_slm_api_key else None
        return cls(settings.web_slm_model, base_url=settings.web_slm_base_url, api_key=key,
                   timeout_s=settings.web_slm_timeout_s)

    def __call__(self, query: str) -> tuple[bool, str]:
        import openai

        try:
            reply = self.client.chat.completions.create(model=self.model, messages=web_search_prompt(query),
                                                        max_tokens=3, temperature=0)
            answer = reply.choices[0].message.content if reply.choices else None
        except (openai.OpenAIError, ValueError) as exc:
            return False, f"error ({type(exc).__name__}), so no"
        yes = parse_yes(answer)
        return yes, f"answered {answer!r}" + ("" if yes else ", not a clear yes")

    def close(self) -> None:
        self.client.close()

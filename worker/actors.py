"""The actors: each turns a queue message into one call of memctx.dispatch.run_job."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import dramatiq

from memctx.pipeline import dispatch
from memctx.app import App
from memctx.worker.broker import QUEUE_NAME


@dataclass(frozen=True)
class Actors:
    update_conversation: dramatiq.Actor

    def send(self, job: dispatch.Job) -> None:
        """The dispatcher's `send`: one queue message per conversation job."""
        self.update_conversation.send(str(job.user_id), str(job.conversation_id), job.close, job.force)


def declare(broker: dramatiq.Broker, app: App) -> Actors:
    """Bind the actors to this broker and this process's App."""

    def update_conversation(user_id: str, conversation_id: str, close: bool = False, force: bool = False) -> None:
        dispatch.run_job(app, UUID(user_id), UUID(conversation_id), close=close, force=force)

    return Actors(update_conversation=dramatiq.actor(
        update_conversation, broker=broker, actor_name="memctx.update_conversation", queue_name=QUEUE_NAME,
        max_retries=5, min_backoff=1_000, max_backoff=60_000, time_limit=10 * 60_000))

"""The Dramatiq broker, chosen by `Settings.broker`.

postgres (default): dramatiq-postgres on the memctx database itself, queue tables in schema
`memctx_queue` (created by migration 0003), nothing else to run. redis / rabbitmq: for scale-out
across machines, at `Settings.broker_url`. stub: in-process, for tests.
"""

from __future__ import annotations

import dramatiq

from memctx.config import Settings

QUEUE_SCHEMA = "memctx_queue"
QUEUE_NAME = "memctx"


def make_broker(settings: Settings, database_url: str) -> dramatiq.Broker:
    if settings.broker == "postgres":
        from dramatiq_postgres import PostgresBroker

        # No results backend: memctx jobs write their results to memctx tables.
        broker = PostgresBroker(url=database_url, schema=QUEUE_SCHEMA, results=False, poll_interval=1.0,
                                heartbeat_interval=5.0, heartbeat_ttl=30.0)
    elif settings.broker == "redis":
        from dramatiq.brokers.redis import RedisBroker

        broker = RedisBroker(url=_need_url(settings))
    elif settings.broker == "rabbitmq":
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        broker = RabbitmqBroker(url=_need_url(settings))
    else:
        from dramatiq.brokers.stub import StubBroker

        broker = StubBroker()
    return broker


def _need_url(settings: Settings) -> str:
    if not settings.broker_url:
        raise ValueError(f"MEMCTX_BROKER={settings.broker} needs MEMCTX_BROKER_URL")
    return settings.broker_url

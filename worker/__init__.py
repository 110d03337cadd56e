"""worker: the Dramatiq side of memctx — broker setup from Settings and thin actors.

`memctx.worker.broker.make_broker` picks Postgres (dramatiq-postgres, same database), Redis or RabbitMQ;
`memctx.worker.actors.declare` binds the actors, each of which calls one memctx function;
`memctx.worker.main.run` is what `memctx worker` runs.
"""

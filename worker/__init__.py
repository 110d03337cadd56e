"""worker: the Dramatiq side of memctx — broker setup from Settings and thin actors.

`worker.broker.make_broker` picks Postgres (dramatiq-postgres, same database), Redis or RabbitMQ;
`worker.actors.declare` binds the actors, each of which calls one memctx function;
`worker.main.run` is what `memctx worker` runs.
"""

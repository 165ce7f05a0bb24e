"""A fleet of workers on DBOS Transact: the engine URL, the queue's client, the worker.

Only the fleet commands import this package's queue and worker (dbos is the `fleet`
extra); `claudeloop run` never does.
"""

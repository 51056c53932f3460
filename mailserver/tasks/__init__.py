"""James's task model: long admin operations run asynchronously, reported through ``/tasks``.

A task is submitted on any node (stored ``waiting`` with its type and JSON parameters), claimed
by the ``TaskWorker`` of any node (a conditional write: exactly one wins), run on a thread, and
its report (status, dates, ``additionalInformation``) is readable from every node. Cancellation
is cooperative; a worker that dies is detected through its heartbeat and its tasks end ``failed``.
"""

"""The running server: settings from the environment, backends, roles, and ``mailserver serve``.

A role is one long-running part of the server (``smtp``, ``spooler``, ``outgoing``,
``webadmin``); ``serve`` runs any subset of them in one process over one set of backends.
"""

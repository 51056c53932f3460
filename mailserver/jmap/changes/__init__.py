"""JMAP change logs (James's ``mailbox_change`` and ``email_change``): what ``/changes`` reads."""

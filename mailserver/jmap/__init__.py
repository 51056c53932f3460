"""JMAP (RFC 8620 core, RFC 8621 mail) over the mailbox manager."""

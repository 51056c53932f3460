"""What the protocol servers (SMTP, IMAP) share: an asyncio server on a loop thread of its own,
the connection caps and the STARTTLS context. Generic: it knows no protocol, so both servers and
``runtime`` import it."""

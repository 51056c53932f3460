"""A runner of James's IMAP protocol scripts (MPT): the script language of James's ``mpt/core``,
the set-up of its ``mpt/impl/imap-mailbox`` suites, and the declared differences of this server."""

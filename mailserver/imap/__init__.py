"""IMAP4rev1 (RFC 3501, with the cheap RFC 9051 bits) on the mailbox manager.

Why written by hand on asyncio streams: Python has no maintained IMAP *server* library.
``twisted.mail.imap4`` is the only complete one; it would bring the whole Twisted reactor into a
process whose other protocols run on asyncio (aiosmtpd, uvicorn), its mailbox interfaces
(``IMailbox``/``IMessage``) would need an adapter as large as this package, and its
maintenance is minimal. Client libraries (``imaplib``, ``imapclient``, ``aioimaplib``) only
parse server responses. So the protocol lives here, one idea per module:

* ``reader``     reads one command off the socket: lines, synchronizing and non-synchronizing
                 literals, with size limits enforced before anything is buffered;
* ``parser``     turns the command into tokens (atoms, quoted strings, literals, lists);
* ``sequence``   sequence sets and their resolution to sequence numbers and uids;
* ``response``   quoting, literals, flag lists;
* ``names``      mailbox names on the wire (modified UTF-7) and LIST patterns;
* ``mime``       a MIME tree over the raw bytes (sections are byte-exact slices);
* ``envelope``, ``bodystructure``, ``fetch``  FETCH items;
* ``search``     SEARCH criteria evaluated by scanning metadata, headers and content;
* ``selected``   the selected mailbox: sequence number <-> uid map and untagged updates;
* ``watcher``    wakes IDLE sessions when their mailbox changes;
* ``list_request``, ``listing``, ``special_use``  LIST's extended arguments and its entries;
* ``esearch``    SEARCH RETURN options and the ``* ESEARCH`` reply;
* ``base_subject``, ``sort``, ``thread``  SORT and THREAD (RFC 5256);
* ``session``, ``commands_*``  the state machine and the command handlers;
* ``server``     the asyncio server, connection cap, maintenance mode, its thread.

SUBSCRIBE/LSUB keep their rows in ``mailbox.subscriptions`` (James's SubscriptionManager is a
mailbox service too, used by the vault's restore and the admin tasks). Every read and write goes
through ``MailboxManager``; its blocking calls run in a bounded thread pool, never on the event loop.
"""

from mailserver.imap.config import ImapConfig
from mailserver.imap.server import ImapServer, ImapServerThread

__all__ = ["ImapConfig", "ImapServer", "ImapServerThread"]

"""SORT, UID SORT, THREAD and UID THREAD (RFC 5256), a mixin of ``Session``.

The search keys select messages as SEARCH does; the headers SORT and THREAD compare come from the
same ``Content`` the search used, so a message's header is read once (through the server's header
cache, as FETCH ENVELOPE reads it) whether the search needed it or not.
"""

from __future__ import annotations

from mailserver.blob.api import BlobNotFound
from mailserver.imap.commands_messages import MessageCommands
from mailserver.imap.parser import Args, Command
from mailserver.imap.response import number
from mailserver.imap.search import Candidate, Query
from mailserver.imap.sort import parse_criteria, parse_search, sort
from mailserver.imap.thread import ordered_subject, parse_algorithm, references_threads, render, thread_message
from mailserver.mailbox.errors import MessageNotFound

_GONE = (MessageNotFound, BlobNotFound)


class SortCommands(MessageCommands):
    async def cmd_sort(self, command: Command, args: Args) -> str:
        criteria = parse_criteria(args.paren_list("sort criteria"))
        query = parse_search(args.rest(), "SORT")
        by_uid = command.name == "UID SORT"

        def run() -> list[int]:
            ordered = sort(self._matching(query), criteria)
            return [c.meta.uid if by_uid else c.seq for c in ordered]

        numbers = await self.blocking(run)
        await self.send(b"* SORT" + b"".join(b" " + number(n) for n in numbers) + b"\r\n")
        return "OK SORT completed"

    async def cmd_thread(self, command: Command, args: Args) -> str:
        algorithm = parse_algorithm(args.next("thread algorithm"))
        query = parse_search(args.rest(), "THREAD")
        by_uid = command.name == "UID THREAD"

        def run() -> bytes:
            messages = [thread_message(c, c.meta.uid if by_uid else c.seq) for c in self._matching(query)]
            threads = ordered_subject(messages) if algorithm == "ORDEREDSUBJECT" else references_threads(messages)
            return render(threads)

        await self.send(await self.blocking(run))
        return "OK THREAD completed"

    def _matching(self, query: Query) -> list[Candidate]:
        """Blocking: the selected messages the query matches, their headers read (or being read)
        once; a message expunged meanwhile is left out."""
        selected = self._sel()
        uids = list(selected.uids)
        largest_uid = uids[-1] if uids else 0
        found = []
        for seq, uid in enumerate(uids, start=1):
            meta = selected.known[uid]
            candidate = Candidate(meta, seq, self._content(meta), uid in selected.recent, len(uids), largest_uid)
            try:
                if query.predicate(candidate):
                    _ = candidate.content.fields   # read now: a vanished header is skipped here, not mid-sort
                    found.append(candidate)
            except _GONE:
                continue
        return found

"""SORT, UID SORT, THREAD and UID THREAD (RFC 5256), a mixin of ``Session``.

The search keys select messages as SEARCH does; the headers SORT and THREAD compare come from the
same ``Content`` the search used, so a message's header is read at most once (through the server's
header cache, as FETCH ENVELOPE reads it), and not at all for ARRIVAL and SIZE with a search on
flags, sizes, dates or uids.
"""

from __future__ import annotations

from mailserver.imap.commands_messages import MessageCommands
from mailserver.imap.parser import Args, Command
from mailserver.imap.response import number
from mailserver.imap.sort import SortRow, parse_criteria, parse_search, sort, sort_row
from mailserver.imap.thread import (
    ThreadTooCostly,
    ordered_subject,
    parse_algorithm,
    references_threads,
    render,
    thread_message,
)


class SortCommands(MessageCommands):
    async def cmd_sort(self, command: Command, args: Args) -> str:
        criteria = parse_criteria(args.paren_list("sort criteria"))
        query = parse_search(args.rest(), "SORT")
        by_uid = command.name == "UID SORT"

        matching = self._matcher(query, lambda c: sort_row(c, criteria))

        def run() -> list[SortRow]:
            return sort(matching(), criteria)

        ordered = await self.blocking(run)
        await self._modseq_query_seen(query)
        line = b"* SORT" + b"".join(b" " + number(r.uid if by_uid else r.seq) for r in ordered)
        if query.modseq and ordered:   # RFC 7162 3.1.5: the highest modseq of the messages found
            line += b" (MODSEQ " + number(max(r.mod_seq for r in ordered)) + b")"
        await self.send(line + b"\r\n")
        return "OK SORT completed"

    async def cmd_thread(self, command: Command, args: Args) -> str:
        algorithm = parse_algorithm(args.next("thread algorithm"))
        query = parse_search(args.rest(), "THREAD")
        by_uid = command.name == "UID THREAD"

        matching = self._matcher(query, lambda c: thread_message(c, c.meta.uid if by_uid else c.seq))

        def run() -> bytes:
            messages = matching()
            threads = ordered_subject(messages) if algorithm == "ORDEREDSUBJECT" else references_threads(messages)
            return render(threads)

        try:
            reply = await self.blocking(run)
        except ThreadTooCostly as exc:
            return f"NO [LIMIT] {exc}"
        await self._modseq_query_seen(query)
        await self.send(reply)
        return "OK THREAD completed"

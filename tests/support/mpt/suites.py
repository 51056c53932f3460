"""The IMAP suites of James's ``mpt/impl/imap-mailbox/core`` (3.8.1): for each, the set-up its Java
class does (``BasicImapCommands``: greeting, LOGIN, SELECT INBOX, ``SelectedStateSetup``) and the
scripts it runs. James runs most scripts once per locale; the protocol does not depend on the
locale here, so each runs once.
"""

from __future__ import annotations

from dataclasses import dataclass

from .script import ALL_SESSIONS, Client, Element, Server

USER, PASSWORD = "imapuser", "password"


@dataclass(frozen=True)
class Suite:
    name: str
    scripts: tuple[str, ...]
    welcome: bool = True          # BasicImapCommands.welcome
    login: bool = True            # BasicImapCommands.authenticate
    select_inbox: bool = False    # BasicImapCommands.selectInbox
    prepare_mailbox: bool = False  # BasicImapCommands.prepareMailbox: SelectedStateSetup / SelectedStateCleanup


def _split(names: str) -> tuple[str, ...]:
    return tuple(names.split())


SUITES: tuple[Suite, ...] = (
    Suite("NonAuthenticatedState", _split("Authenticate Capability Login Logout Noop ValidAuthenticated ValidSelected"),
          login=False),
    Suite("AuthenticatedState", _split(
        "Append AppendExamineInbox AppendExpunge AppendSelectInbox Capability Create Delete ExamineEmpty Id "
        "ListMailboxes ListNamespace ListSubscribed Logout Namespace Noop Rights SelectAppend SelectEmpty Status "
        "StringArgs Subscribe ValidNonAuthenticated")),
    Suite("SelectedInbox", _split(
        "Append Capability Create Delete ExamineEmpty ListMailboxes ListNamespace ListSubscribed Logout Noop "
        "SelectEmpty Status StringArgs Subscribe ValidNonAuthenticated"), select_inbox=True),
    Suite("SelectedState", _split(
        "Check Copy Expunge FetchMultipleMessages FetchPeek FetchSingleMessage Namespace Replace Search "
        "SearchSaveDate Store Uid"), prepare_mailbox=True),
    Suite("ConcurrentSessions", _split(
        "ConcurrentAppendUIDToMSNMapping ConcurrentCrossExpunge ConcurrentDeleteSelected ConcurrentExistsResponse "
        "ConcurrentExpungeResponse ConcurrentExpungeUIDToMSNMapping ConcurrentFetchResponse "
        "ConcurrentRenameSelected ConcurrentRenameSelectedSub")),
    Suite("Security", _split("BadTag BogusCommand IllegalTag JustTag LoginThreeStrikes NoCommand NoTag SharedMailbox"),
          welcome=False, login=False),
    Suite("Copy", ("Copy",), prepare_mailbox=True),
    Suite("Events", ("AppendToSelected",), prepare_mailbox=True),
    Suite("Expunge", ("ExpungeBasics",), prepare_mailbox=True),
    Suite("Fetch", _split(
        "FetchBodyNoSection FetchEnvelope FetchInternalDate FetchRFC822 FetchRFC822Header FetchRFC822Mixed "
        "FetchRFC822Text FetchSaveDate FetchText"), prepare_mailbox=True),
    Suite("FetchBodySection", _split("FetchMultipartAlternative FetchMultipartMixed FetchMultipartMixedComplex"),
          prepare_mailbox=True),
    Suite("FetchBodyStructure", _split(
        "FetchMultipartBodyStructure FetchSimpleBodyStructure FetchStructureComplex FetchStructureEmbedded"),
          prepare_mailbox=True),
    Suite("FetchHeaders", _split("FetchHeaderFields FetchHeaderFieldsNot"), prepare_mailbox=True),
    Suite("PartialFetch", _split("BodyPartialFetch HeaderPartialFetch MimePartialFetch TextPartialFetch"),
          prepare_mailbox=True),
    Suite("Listing", _split("ListPercentWildcard ListPlus XList")),
    Suite("MailboxWithLongNameError", ("CreateErrorWithLongName",), prepare_mailbox=True),
    Suite("Move", _split("Move MoveNoMSG"), prepare_mailbox=True),
    Suite("Recent", ("Recent",)),
    Suite("Rename", _split("Rename RenameHierarchy RenameSelected"), prepare_mailbox=True),
    Suite("Search", _split("SearchAtoms SearchCombinations SearchOptionAggregations SearchOptionSave")),
    Suite("Select", ("SelectUnseen",)),
    Suite("UidSearch", _split("UidSearchAtoms UidSearchCombinations")),
    Suite("UserFlagsSupport", ("UserFlagsSupport",)),
    # Extensions: RFC 4314 ACL, RFC 5464 METADATA, RFC 2087 QUOTA, RFC 7162 CONDSTORE, RFC 8474 OBJECTID,
    # AUTHENTICATE PLAIN with an authorization identity, a shared mailbox listing.
    Suite("ACLCommands", _split("ACLCommandsOnOtherUser ACLCommandsOnOwner"), welcome=False, login=False),
    Suite("AuthenticatePlain", ("AuthenticatePlain",), login=False),
    Suite("Condstore", _split("CondstoreDisable CondstoreEnable")),
    Suite("ListingWithSharingTest", ("ListWithSharedMailbox",)),
    Suite("MailboxAnnotation", _split("Metadata MetadataWithBinaryData MetadataWithLimitation"), prepare_mailbox=True),
    Suite("ObjectId", ("ObjectId",), prepare_mailbox=True),
    Suite("QuotaTest", ("Quota",), prepare_mailbox=True),
)


def pre_elements(suite: Suite) -> list[Element]:
    """What ``BasicImapCommands`` adds before a script, for every session (``SelectedStateSetup`` aside)."""
    elements: list[Element] = []
    if suite.welcome:
        elements.append(Server(ALL_SESSIONS, "BasicImapCommands.welcome", "\\* OK IMAP4rev1 Server ready"))
    if suite.login:
        elements += [Client(ALL_SESSIONS, "BasicImapCommands.authenticate", f"a001 LOGIN {USER} {PASSWORD}"),
                     Server(ALL_SESSIONS, "BasicImapCommands.authenticate", "a001 OK .*")]
    if suite.select_inbox:
        where = "BasicImapCommands.selectInbox"
        elements.append(Client(ALL_SESSIONS, where, "abcd SELECT inbox"))
        elements += [Server(ALL_SESSIONS, where, pattern) for pattern in (
            "\\* OK \\[MAILBOXID \\(.+\\)\\] Ok",
            "\\* FLAGS \\(\\\\Answered \\\\Deleted \\\\Draft \\\\Flagged \\\\Seen\\)",
            "\\* \\d+ EXISTS",
            "\\* \\d+ RECENT",
            "\\* OK \\[UIDVALIDITY \\d+\\].*",
            "\\* OK \\[PERMANENTFLAGS \\(\\\\Answered \\\\Deleted \\\\Draft \\\\Flagged \\\\\\Seen( \\\\\\*)?\\)\\].*",
            "\\* OK \\[HIGHESTMODSEQ \\d+\\].*",
            "\\* OK \\[UIDNEXT 1\\].*",
            "abcd OK \\[READ-WRITE\\] SELECT completed.",
        )]
    return elements


def post_elements(suite: Suite) -> list[Element]:
    if suite.select_inbox:
        return [Client(ALL_SESSIONS, "BasicImapCommands.closeInbox", "a CLOSE"),
                Server(ALL_SESSIONS, "BasicImapCommands.closeInbox", ".*")]
    return []

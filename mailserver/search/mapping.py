"""James's mailbox index: field names (``JsonMessageConstants``), mapping (``DefaultMailboxMappingFactory``)
and analysis settings (``IndexCreationFactory``), as JSON bodies for OpenSearch.

Pure data: the DAGs that create a new index for an alias swap take ``index_body(...)`` and
may change shards, replicas or analysis; the mapping stays James's (``dynamic: strict``,
routing required).
"""

from __future__ import annotations

import copy
from typing import Any

# Field names (JsonMessageConstants)
MESSAGE_ID = "messageId"
UID = "uid"
MAILBOX_ID = "mailboxId"
THREAD_ID = "threadId"
IS_UNREAD = "isUnread"
IS_FLAGGED = "isFlagged"
IS_ANSWERED = "isAnswered"
IS_DRAFT = "isDraft"
IS_RECENT = "isRecent"
IS_DELETED = "isDeleted"
HEADERS = "headers"
FROM = "from"
TO = "to"
CC = "cc"
BCC = "bcc"
SUBJECT = "subject"
DATE = "date"
SIZE = "size"
TEXT_BODY = "textBody"
HTML_BODY = "htmlBody"
SENT_DATE = "sentDate"
SAVE_DATE = "saveDate"
ATTACHMENTS = "attachments"
MIME_MESSAGE_ID = "mimeMessageID"
USER = "user"
MODSEQ = "modSeq"
USER_FLAGS = "userFlags"
MEDIA_TYPE = "mediaType"
SUBTYPE = "subtype"
HAS_ATTACHMENT = "hasAttachment"
# EMailer, HEADER and Attachment sub-fields
NAME = "name"
ADDRESS = "address"
DOMAIN = "domain"
VALUE = "value"
TEXT_CONTENT = "textContent"
CONTENT_DISPOSITION = "contentDisposition"
FILE_NAME = "fileName"
FILE_EXTENSION = "fileExtension"
RAW = "raw"

CASE_INSENSITIVE = "case_insensitive"
KEEP_MAIL_AND_URL = "keep_mail_and_url"
DATE_FORMAT = "uuuu-MM-dd'T'HH:mm:ssX||uuuu-MM-dd'T'HH:mm:ssXXX||uuuu-MM-dd'T'HH:mm:ssXXXXX"

_RAW_KEYWORD = {RAW: {"type": "keyword", "normalizer": CASE_INSENSITIVE}}


def _emailer(name_raw: bool = True) -> dict[str, Any]:
    name: dict[str, Any] = {"type": "text", "analyzer": KEEP_MAIL_AND_URL}
    if name_raw:
        name["fields"] = copy.deepcopy(_RAW_KEYWORD)
    return {"properties": {
        NAME: name,
        DOMAIN: {"type": "text", "analyzer": "simple", "search_analyzer": "keyword"},
        ADDRESS: {"type": "text", "analyzer": "standard", "search_analyzer": KEEP_MAIL_AND_URL,
                  "fields": copy.deepcopy(_RAW_KEYWORD)},
    }}


def _date() -> dict[str, Any]:
    return {"type": "date", "format": DATE_FORMAT}


MAILBOX_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "_routing": {"required": True},
    "properties": {
        MESSAGE_ID: {"type": "keyword", "store": True},
        THREAD_ID: {"type": "keyword"},
        UID: {"type": "long", "store": True},
        MODSEQ: {"type": "long"},
        SIZE: {"type": "long"},
        IS_ANSWERED: {"type": "boolean"},
        IS_DELETED: {"type": "boolean"},
        IS_DRAFT: {"type": "boolean"},
        IS_FLAGGED: {"type": "boolean"},
        IS_RECENT: {"type": "boolean"},
        IS_UNREAD: {"type": "boolean"},
        DATE: _date(),
        SENT_DATE: _date(),
        SAVE_DATE: _date(),
        USER_FLAGS: {"type": "keyword", "normalizer": CASE_INSENSITIVE},
        MEDIA_TYPE: {"type": "keyword"},
        SUBTYPE: {"type": "keyword"},
        FROM: _emailer(),
        HEADERS: {"type": "nested", "properties": {
            NAME: {"type": "keyword"},
            VALUE: {"type": "text", "analyzer": KEEP_MAIL_AND_URL},
        }},
        SUBJECT: {"type": "text", "analyzer": KEEP_MAIL_AND_URL, "fields": copy.deepcopy(_RAW_KEYWORD)},
        TO: _emailer(),
        CC: _emailer(),
        BCC: _emailer(name_raw=False),   # as James: bcc.name has no raw sub-field
        MAILBOX_ID: {"type": "keyword", "store": True},
        MIME_MESSAGE_ID: {"type": "keyword"},
        USER: {"type": "keyword"},
        TEXT_BODY: {"type": "text", "analyzer": "standard"},
        HTML_BODY: {"type": "text", "analyzer": "standard"},
        HAS_ATTACHMENT: {"type": "boolean"},
        ATTACHMENTS: {"properties": {
            FILE_NAME: {"type": "text", "analyzer": "standard"},
            TEXT_CONTENT: {"type": "text", "analyzer": "standard"},
            MEDIA_TYPE: {"type": "keyword"},
            SUBTYPE: {"type": "keyword"},
            FILE_EXTENSION: {"type": "keyword"},
            CONTENT_DISPOSITION: {"type": "keyword"},
        }},
    },
}

ANALYSIS: dict[str, Any] = {
    "normalizer": {CASE_INSENSITIVE: {"type": "custom", "char_filter": [], "filter": ["lowercase", "asciifolding"]}},
    "analyzer": {KEEP_MAIL_AND_URL: {"type": "custom", "tokenizer": "uax_url_email",
                                     "filter": ["lowercase", "stop"]}},
}


def index_settings(shards: int = 5, replicas: int = 1, analysis: dict[str, Any] | None = None) -> dict[str, Any]:
    """James's generated settings: shard and replica counts and the custom analysis."""
    return {"number_of_shards": shards, "number_of_replicas": replicas,
            "analysis": copy.deepcopy(ANALYSIS if analysis is None else analysis)}


def index_body(shards: int = 5, replicas: int = 1, analysis: dict[str, Any] | None = None,
               mapping: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body of ``PUT /<index>``: settings and James's mailbox mapping (copies, safe to edit)."""
    return {"settings": index_settings(shards, replicas, analysis),
            "mappings": copy.deepcopy(MAILBOX_MAPPING if mapping is None else mapping)}

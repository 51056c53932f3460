"""``/dlp/rules/{senderDomain}`` (James's ``DLPConfigurationRoutes``): the DLP rules of a sender domain.

GET answers ``{"rules": [...]}`` (James's item fields); PUT replaces the rules (204); DELETE
clears them (204); ``.../rules/{ruleId}`` answers one rule. The domain must be a local one
(404 ``'<domain>' is not managed by this James server``, type InvalidArgument, as James). A body
that is not James's DTO is 400 ``JSON payload of the request is not valid``; a repeated id is 400
``'id' duplicates are not allowed in DLP rules``.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.dlp.store import DlpConfigurationStore, DlpRule, DuplicateRuleIds
from mailserver.domains.api import DomainList
from mailserver.model.address import Domain, InvalidAddress
from mailserver.webadmin.errors import INVALID_ARGUMENT, WebAdminError, bad_request
from mailserver.webadmin.json_payload import INVALID_JSON, json_document

BOOLEANS = {"targetsSender": "targets_sender", "targetsRecipients": "targets_recipients",
            "targetsContent": "targets_content"}


def rules_of(body: bytes) -> list[DlpRule]:
    document = json_document(body)
    items = document.get("rules") if isinstance(document, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise bad_request("a {\"rules\": [...]} object is expected", INVALID_JSON)
    return [_rule(item) for item in items]


def _rule(item: dict[str, Any]) -> DlpRule:
    rule_id, expression, explanation = item.get("id"), item.get("expression"), item.get("explanation")
    if not isinstance(rule_id, str) or not isinstance(expression, str):
        raise bad_request("'id' and 'expression' are mandatory strings", INVALID_JSON)
    if explanation is not None and not isinstance(explanation, str):
        raise bad_request("'explanation' is a string", INVALID_JSON)
    flags: dict[str, bool] = {}
    for name, field in BOOLEANS.items():
        value = item.get(name)
        if value is not None and not isinstance(value, bool):
            raise bad_request(f"'{name}' is a boolean", INVALID_JSON)
        flags[field] = bool(value)
    try:
        return DlpRule(rule_id, expression, explanation, **flags)
    except re.error as exc:
        raise bad_request(f"invalid expression {expression!r}: {exc}", INVALID_JSON) from exc


def router(store: DlpConfigurationStore, domains: DomainList) -> APIRouter:
    api = APIRouter(tags=["dlp"])

    def local(raw: str) -> str:
        try:
            name = Domain.of(raw).name
        except InvalidAddress as exc:
            raise bad_request(str(exc)) from exc
        if not domains.contains(name):
            raise WebAdminError(404, f"'{name}' is not managed by this James server", type_=INVALID_ARGUMENT)
        return name

    @api.get("/dlp/rules/{sender_domain}", summary="The DLP rules of a sender domain")
    def list_rules(sender_domain: str) -> dict[str, Any]:
        return {"rules": [rule.as_item() for rule in store.list(local(sender_domain))]}

    @api.put("/dlp/rules/{sender_domain}", status_code=204, summary="Replace the DLP rules of a sender domain")
    async def store_rules(sender_domain: str, request: Request) -> Response:
        domain = await run_in_threadpool(local, sender_domain)
        rules = rules_of(await request.body())
        try:
            await run_in_threadpool(store.store, domain, rules)
        except DuplicateRuleIds:
            raise bad_request(None, "'id' duplicates are not allowed in DLP rules") from None
        return Response(status_code=204)

    @api.delete("/dlp/rules/{sender_domain}", status_code=204, summary="Clear the DLP rules of a sender domain")
    def clear_rules(sender_domain: str) -> Response:
        store.clear(local(sender_domain))
        return Response(status_code=204)

    @api.get("/dlp/rules/{sender_domain}/rules/{rule_id}", summary="One DLP rule of a sender domain")
    def fetch_rule(sender_domain: str, rule_id: str) -> dict[str, Any]:
        domain = local(sender_domain)
        rule = store.fetch(domain, rule_id)
        if rule is None:
            raise WebAdminError(404, f"There is no rule '{rule_id}' for '{domain}' managed by this James server",
                                type_=INVALID_ARGUMENT)
        return rule.as_item()

    return api

"""``/users/{user}/identities``: James's ``UserIdentitiesRoutesTest`` examples on memory adapters."""

from __future__ import annotations

import json
import uuid
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.identities.api import server_set
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.model.address import MailAddress, Username
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

BOB = "bob@domain.tld"
PATH = f"/users/{BOB}/identities"
CREATION = {"name": "create name 1", "email": BOB, "textSignature": "create textSignature1",
            "htmlSignature": "create htmlSignature1", "sortOrder": 99,
            "bcc": [{"name": "create bcc 1", "email": "create_boss_bcc_1@domain.tld"}],
            "replyTo": [{"name": "create replyTo 1", "email": "create_boss1@domain.tld"}]}
SERVER_SET = {"name": BOB, "email": BOB, "id": str(server_set(MailAddress.of(BOB)).id), "mayDelete": False,
              "textSignature": "", "htmlSignature": "", "sortOrder": 100, "bcc": [], "replyTo": []}


@pytest.fixture
def client():
    ctx = make_context()
    ctx.identities = IdentityRepository(MemoryCustomIdentityStore(), CanSendFrom(ctx.rrt).addresses)
    return TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)


def created(client) -> dict:
    assert client.post(PATH, content=json.dumps(CREATION)).status_code == 201
    return next(i for i in client.get(PATH).json() if i["mayDelete"])


def test_the_list_holds_the_server_set_identity(client):
    response = client.get(PATH)
    assert response.status_code == 200
    assert response.json() == [SERVER_SET]


def test_a_created_identity_is_listed_as_james_writes_it(client):
    identity = created(client)
    assert identity == {**{k: v for k, v in CREATION.items()}, "id": identity["id"], "mayDelete": True}
    assert len(client.get(PATH).json()) == 2


def test_missing_optional_properties_take_james_s_defaults(client):
    assert client.post(PATH, content=json.dumps({"email": BOB})).status_code == 201
    custom = next(i for i in client.get(PATH).json() if i["mayDelete"])
    assert custom == {"name": "", "email": BOB, "id": custom["id"], "mayDelete": True, "textSignature": "",
                      "htmlSignature": "", "sortOrder": 100, "bcc": [], "replyTo": []}


def test_the_default_is_the_deletable_identity_of_lowest_sort_order(client):
    assert client.get(PATH, params={"default": "true"}).status_code == 404
    assert error(client.get(PATH, params={"default": "true"}))["message"] == "Default identity can not be found"
    client.post(PATH, content=json.dumps({**CREATION, "sortOrder": 2, "name": "second"}))
    client.post(PATH, content=json.dumps({**CREATION, "sortOrder": 1, "name": "first"}))
    assert [i["name"] for i in client.get(PATH, params={"default": "true"}).json()] == ["first"]


def test_an_invalid_default_parameter_is_400(client):
    response = client.get(PATH, params={"default": "invalid"})
    assert response.status_code == 400
    assert error(response)["details"] == "Invalid 'default' query parameter"


@pytest.mark.parametrize("body, message", [
    ('{"sortOrder": 99}', "Invalid arguments supplied in the user request"),
    ("{not json", "JSON payload of the request is not valid"),
    ('{"email": "bob@domain.tld", "bcc": [{"email": "not an address"}]}', "JSON payload of the request is not valid"),
])
def test_an_invalid_creation_is_400(client, body, message):
    response = client.post(PATH, content=body)
    assert response.status_code == 400
    assert error(response)["message"] == message
    assert client.get(PATH).json() == [SERVER_SET]


def test_creating_for_an_address_the_user_may_not_send_from_is_400(client):
    response = client.post(PATH, content=json.dumps({**CREATION, "email": "alice@domain.tld"}))
    assert response.status_code == 400
    assert client.get(PATH).json() == [SERVER_SET]


def test_update_changes_the_fields_given_and_replaces_the_address_lists(client):
    identity = created(client)
    body = {"name": "Bob", "sortOrder": 1, "replyTo": [{"name": "My Boss", "email": "boss@domain.tld"}]}
    assert client.put(f"{PATH}/{identity['id']}", content=json.dumps(body)).status_code == 204
    updated = next(i for i in client.get(PATH).json() if i["id"] == identity["id"])
    assert updated == {**identity, "name": "Bob", "sortOrder": 1, "bcc": [],
                       "replyTo": [{"name": "My Boss", "email": "boss@domain.tld"}]}


def test_updating_a_server_set_identity_keeps_it_not_deletable(client):
    assert client.put(f"{PATH}/{SERVER_SET['id']}", content='{"name": "Robert"}').status_code == 204
    assert client.get(PATH).json() == [{**SERVER_SET, "name": "Robert"}]


def test_updating_an_unknown_identity_is_404(client):
    unknown = uuid.uuid4()
    response = client.put(f"{PATH}/{unknown}", content='{"name": "x"}')
    assert response.status_code == 404
    assert error(response)["message"] == f"IdentityId '{unknown}' can not be found"


def test_delete_removes_a_stored_identity_and_refuses_a_server_set_one(client):
    identity = created(client)
    assert client.delete(f"{PATH}/{identity['id']}").status_code == 204
    assert client.get(PATH).json() == [SERVER_SET]
    response = client.delete(f"{PATH}/{SERVER_SET['id']}")
    assert response.status_code == 403
    assert error(response) == {"statusCode": 403, "type": "InvalidArgument", "details": None,
                               "message": f"IdentityId '{SERVER_SET['id']}' can not be deleted"}


def test_a_malformed_identity_id_is_400(client):
    assert client.delete(f"{PATH}/not-a-uuid").status_code == 400


def test_the_user_is_read_leniently(client):
    assert client.get(f"/users/{Username(BOB).value.upper()}/identities").status_code == 200

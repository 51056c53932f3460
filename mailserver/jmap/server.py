"""The JMAP HTTP server: uvicorn on a thread of its own, over TLS when a certificate is configured."""

from __future__ import annotations

import uvicorn

from mailserver.events.api import EventBus
from mailserver.jmap.account import MailServices
from mailserver.jmap.app import JmapContext, create_app
from mailserver.jmap.authentication import Authenticator
from mailserver.jmap.config import JmapConfig
from mailserver.jmap.push.hub import PushHub
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.serving.uvicorn_thread import UvicornThread
from mailserver.users.api import UsersRepository

MAX_HEADER_BYTES = 16 * 1024


class JmapServer(UvicornThread):
    def __init__(self, config: JmapConfig, users: UsersRepository, services: MailServices,
                 throttle: AuthThrottle | None = None, push_bus: EventBus | None = None) -> None:
        """``push_bus``: where the state changes are dispatched (None: no EventSource nor WebSocket)."""
        app = create_app(JmapContext(Authenticator(config.auth, users), services, config.limits, config.base_url,
                                     throttle or AuthThrottle.off(),
                                     push=PushHub(push_bus) if push_bus is not None else None))
        # h11 bounds an incomplete request head, as WebAdmin's server does; HTTPS with a certificate.
        super().__init__(uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port, http="h11",
                                                       h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                                                       ws="websockets-sansio",
                                                       ws_max_size=config.limits.max_size_request,
                                                       log_config=None, access_log=False,
                                                       ssl_certfile=config.tls_cert, ssl_keyfile=config.tls_key)),
                         "jmap")

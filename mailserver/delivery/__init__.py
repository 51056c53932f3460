"""Remote delivery: workers consuming the ``outgoing`` queue and delivering over SMTP."""

from mailserver.delivery.client import AttemptResult, Failure, SmtpDeliverer
from mailserver.delivery.config import DeliveryConfig, parse_delay_times, reconcile
from mailserver.delivery.resolver import DnsResolver, DomainNotFound, MxHost, ResolutionError, Resolver, StaticResolver
from mailserver.delivery.worker import RemoteDeliveryWorker

__all__ = ["AttemptResult", "DeliveryConfig", "DnsResolver", "DomainNotFound", "Failure", "MxHost",
           "RemoteDeliveryWorker", "ResolutionError", "Resolver", "SmtpDeliverer", "StaticResolver",
           "parse_delay_times", "reconcile"]

"""SMTP intake on aiosmtpd: relay control, AUTH, back-pressure, durable hand-off to the spool queue."""

from mailserver.smtp.backpressure import BackPressure, HealthCondition, MaintenanceCondition, SpoolSizeCondition
from mailserver.smtp.config import SmtpConfig
from mailserver.smtp.handler import IntakeHandler
from mailserver.smtp.server import SmtpServer, SmtpServerThread

__all__ = ["BackPressure", "HealthCondition", "IntakeHandler", "MaintenanceCondition", "SmtpConfig", "SmtpServer",
           "SmtpServerThread", "SpoolSizeCondition"]

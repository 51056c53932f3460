"""One router per James route family; each is built from the ``WebAdminContext``."""

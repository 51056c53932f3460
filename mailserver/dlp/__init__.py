"""Data leak prevention rules per sender domain, as James's ``DLPConfigurationStore``."""

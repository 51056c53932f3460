"""Vacation (out-of-office) settings per account, as James's ``VacationRepository``."""

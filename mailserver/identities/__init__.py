"""JMAP identities: the server-set ones (one per address a user may send from) merged with the
custom ones users and admins store, as James's ``IdentityRepository``."""

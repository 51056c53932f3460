"""User accounts: the ``UsersRepository`` port, password hashing, memory and Cassandra adapters."""

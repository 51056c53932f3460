"""Drop lists: senders (addresses or whole domains) refused globally, for a domain or for a user."""

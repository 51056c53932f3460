"""Mail repositories (``cassandra://var/mail/error/`` ...): where failed mails wait for an admin."""

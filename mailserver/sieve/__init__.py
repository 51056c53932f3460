"""Sieve: what is kept of it so far, the size limits of users' Sieve scripts."""

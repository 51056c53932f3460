"""Recipient rewrite table: mapping model, the storage port, its adapters, and the resolver."""

"""Plugging the vault into a mailbox layer: the pre-deletion hook when the vault is enabled."""

from __future__ import annotations

from mailserver.mailbox.wiring import MailboxContext
from mailserver.vault.api import Clock, DeletedMessageVault, utc_now
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.hook import DeletedMessageVaultHook


def install_vault(context: MailboxContext, vault: DeletedMessageVault, config: VaultConfiguration, *,
                  clock: Clock = utc_now) -> DeletedMessageVaultHook | None:
    """With ``config.enabled``, every definitive deletion of ``context.manager`` first goes to ``vault``."""
    if not config.enabled:
        return None
    hook = DeletedMessageVaultHook(vault, context.mailboxes, context.messages, context.blobs, clock=clock)
    context.manager.pre_deletion_hooks.append(hook)
    return hook

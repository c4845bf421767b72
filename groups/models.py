"""Groups with join policies, memberships, and private chats between two accounts."""
from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import F, Q

from arkme.accounts.models import Account, AccountIdentity
from arkme.kernel.ids import new_chat_id, new_group_id


class JoinPolicy(models.TextChoices):
    OPEN = "open", "Open"
    APPROVAL = "approval", "Approval required"


class Role(models.TextChoices):
    MEMBER = "member", "Member"
    ADMIN = "admin", "Admin"


class Group(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_group_id, editable=False)
    name = models.CharField(max_length=100)
    join_policy = models.CharField(max_length=10, choices=JoinPolicy.choices, default=JoinPolicy.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    # Kept by database triggers on every membership insert, delete and move (migration
    # groups.0002), so it stays exact through the services, the admin, cascades, bulk loads
    # and raw SQL, and a group's size is read, not counted, on every call.
    member_count = models.PositiveIntegerField(default=0, editable=False,
                                               help_text="Members, kept by the database.")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Saving a loaded group writes every column; the count it holds may be stale by now,
        # and only the triggers may write it.
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [field.name for field in self._meta.concrete_fields
                                       if not field.primary_key and field.name != "member_count"]
        super().save(*args, **kwargs)


class Membership(models.Model):
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="memberships")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "account"], name="membership_once_per_group"),
        ]

    def __str__(self) -> str:
        return f"{self.account} in {self.group} ({self.role})"


class PrivateChat(models.Model):
    """A one-to-one chat. The pair is stored once, lower account id first."""

    public_id = models.CharField(max_length=40, unique=True, default=new_chat_id, editable=False)
    account_low = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    account_high = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    last_activity_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-last_activity_at"]
        constraints = [
            models.UniqueConstraint(fields=["account_low", "account_high"], name="private_chat_pair_once"),
            models.CheckConstraint(condition=Q(account_low__lt=F("account_high")), name="private_chat_pair_ordered"),
        ]
        indexes = [
            models.Index(fields=["account_low", "-last_activity_at"], name="chat_low_activity"),
            models.Index(fields=["account_high", "-last_activity_at"], name="chat_high_activity"),
        ]

    def __str__(self) -> str:
        return f"{self.account_low} ↔ {self.account_high}"

    def other(self, account: AccountIdentity) -> Account:
        return self.account_high if self.account_low_id == account.pk else self.account_low


class ChatPartner(models.Model):
    """One row per person per private chat, naming the other person: the chat seen from one side.

    A chat stores its pair once, so "my chats" is two index reads merged (the lower and the
    higher side); these rows make it one, read newest first from one index, and let a name
    search probe ``(person, partner)`` directly. Database triggers (migration groups.0003)
    write them from ``PrivateChat`` on every insert, activity update and delete, so they stay
    exact through the services, the admin, cascades, bulk loads and raw SQL; the application
    never writes them. ``chat_public_id`` is copied (it never changes) so a candidate's ref
    needs no read of the chat.
    """

    chat = models.ForeignKey(PrivateChat, on_delete=models.CASCADE, related_name="+")
    chat_public_id = models.CharField(max_length=40, editable=False)
    # Both served by the indexes below (the unique pair leads with the person).
    person = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+", db_index=False)
    partner = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+", db_index=False)
    last_activity_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["person", "partner"], name="chat_partner_once"),
        ]
        indexes = [
            # Newest first, the chat's id breaking ties as the product orders them, and the
            # columns a candidate needs after them, so a window of chats is read from the index.
            models.Index(fields=["person", "-last_activity_at", "-chat", "partner", "chat_public_id"],
                         name="chat_partner_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.person_id} → {self.partner_id}"


class ChatMessage(models.Model):
    """A message in a private chat. Invitation links arrive this way, delivered by a task."""

    chat = models.ForeignKey(PrivateChat, on_delete=models.CASCADE, related_name="messages")
    sender = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"message in {self.chat}"


class InvitationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REVOKED = "revoked", "Revoked"


class Invitation(models.Model):
    """A private, single-use link to join an approval group, bound to group and invitee.

    Only a hash of the token is stored; the link exists in the invitee's private chat.
    """

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="invitations")
    inviter = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    status = models.CharField(max_length=10, choices=InvitationStatus.choices, default=InvitationStatus.PENDING)
    message = models.ForeignKey(ChatMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "invitee"], condition=Q(status="pending"),
                                    name="one_pending_invitation_per_invitee"),
        ]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.group} ({self.status})"


class JoinRequestStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DECLINED = "declined", "Declined"


class JoinRequest(models.Model):
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="join_requests")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="join_requests")
    invitation = models.ForeignKey(Invitation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=JoinRequestStatus.choices, default=JoinRequestStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "account"], condition=Q(status="pending"),
                                    name="one_pending_join_request"),
        ]

    def __str__(self) -> str:
        return f"{self.account} → {self.group} ({self.status})"

"""The demo world: a few accounts, an extension, two groups and private chats. Idempotent."""
from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from arkme.accounts.models import Account
from arkme.conversations.clients import dsh_client_create, dsh_client_rotate
from arkme.conversations.models import DshClient
from galleries.models import Extension
from galleries.services.account_images import account_image_create, image_ref_for
from galleries.services.extensions import extension_create
from groups.models import Group, JoinPolicy, Role
from groups.services import membership_ensure, private_chat_ensure

DEMO_PEOPLE = {"alice": "Alice Liddell", "bob": "Bob Builder", "carol": "Carol Danvers", "dave": "Dave Bowman"}
DEMO_CLIENT = "demo-dsh"
DEMO_ADMIN = "admin"
DEMO_WORKSPACE = "demo"


def demo_png(size: tuple[int, int], colour: tuple[int, int, int], label: int = 0) -> bytes:
    """A small, plainly drawn PNG so the demo needs no files of its own."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, colour)
    draw = ImageDraw.Draw(image)
    w, h = size
    draw.ellipse((w // 4, h // 4, 3 * w // 4, 3 * h // 4), fill=(255, 255, 255))
    for i in range(label):
        draw.rectangle((20 + i * 40, 20, 44 + i * 40, 44), fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _workspace() -> None:
    folder = settings.ARKME_WORKSPACE_ROOT / DEMO_WORKSPACE
    folder.mkdir(parents=True, exist_ok=True)
    colours = [(200, 40, 40), (40, 160, 60), (40, 80, 200)]
    for number, colour in enumerate(colours, start=1):
        path = folder / f"preview-{number}.png"
        if not path.exists():
            path.write_bytes(demo_png((640, 400), colour, number))


def _login(username: str, logins: dict[str, str], *, new_password: bool, **defaults: Any) -> AbstractBaseUser:
    """The web login; a new one (or any with ``new_password``) gets a random password, kept
    in ``logins`` to be printed once and stored only as Django's hash."""
    user, created = get_user_model().objects.get_or_create(username=username, defaults=defaults)
    if created or new_password:
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        logins[username] = password
    return user


def _account(username: str, display_name: str, logins: dict[str, str], *, new_password: bool) -> Account:
    user = _login(username, logins, new_password=new_password)
    account, _ = Account.objects.get_or_create(user=user, defaults={"display_name": display_name})
    return account


def _extension(owner: Account, name: str) -> Extension:
    return Extension.objects.filter(owner=owner, name=name).first() or extension_create(owner=owner, name=name)


def _group(name: str, policy: str) -> Group:
    group, _ = Group.objects.get_or_create(name=name, defaults={"join_policy": policy})
    return group


def demo_world(*, new_passwords: bool = False) -> dict[str, Any]:
    """Create what is missing and answer the handles. ``logins`` holds the passwords set by
    this run only: those of new logins, or all of them with ``new_passwords``."""
    logins: dict[str, str] = {}
    with transaction.atomic():
        _login(DEMO_ADMIN, logins, new_password=new_passwords, is_staff=True, is_superuser=True)
        accounts = {name: _account(name, display, logins, new_password=new_passwords)
                    for name, display in DEMO_PEOPLE.items()}
        alice, bob = accounts["alice"], accounts["bob"]
        extensions = {"alice-ext": _extension(alice, "alice-ext"), "bob-ext": _extension(bob, "bob-ext")}
        groups = {"open-group": _group("open-group", JoinPolicy.OPEN),
                  "approval-group": _group("approval-group", JoinPolicy.APPROVAL)}
        for group in groups.values():
            membership_ensure(group=group, account=alice, role=Role.ADMIN)
        membership_ensure(group=groups["open-group"], account=bob)
        for other in ("bob", "carol", "dave"):
            private_chat_ensure(a=alice, b=accounts[other])
        logos = {
            "alice-logo": account_image_create(owner=alice, name="alice-logo", data=demo_png((512, 512), (230, 120, 20))),
            "bob-logo": account_image_create(owner=bob, name="bob-logo", data=demo_png((512, 512), (20, 120, 230))),
        }
        if DshClient.objects.filter(name=DEMO_CLIENT).exists():
            _, key = dsh_client_rotate(name=DEMO_CLIENT, reactivate=True)
        else:
            _, key = dsh_client_create(name=DEMO_CLIENT)
    settings.ARKME_WORKSPACE_ROOT.mkdir(parents=True, exist_ok=True)
    _workspace()
    return {
        "dsh_key": key,
        "accounts": {name: account.public_id for name, account in accounts.items()},
        "extensions": {name: ext.public_id for name, ext in extensions.items()},
        "groups": {name: group.public_id for name, group in groups.items()},
        "image_refs": {name: image_ref_for(image) for name, image in logos.items()},
        "workspace_root": str(settings.ARKME_WORKSPACE_ROOT),
        "workspace": DEMO_WORKSPACE,
        "logins": logins,
    }

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "arkme.accounts"
    label = "accounts"
    verbose_name = "Arkme accounts"

from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "arkme.conversations"
    label = "conversations"
    verbose_name = "DSH conversations"

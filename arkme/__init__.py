"""The core below every domain: the kernel, accounts and conversations.

Nothing is imported here: importing the kernel loads no more than the kernel (no Celery app,
no settings).
"""

"""The DSH client's staff page, with the tools whose approvals its sessions take on Arkme's page.

The client's page belongs to the conversations app, which cannot know the catalog; the
registry registers it again with the choice of tools (only tools whose approval is
pre-execute, or every one).
"""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin
from django.forms import ModelForm
from django.http import HttpRequest

from arkme.conversations.admin import DshClientAdmin
from arkme.conversations.models import DshClient

from .approval_page import EVERY_TOOL, page_tool_names, page_tools_problems


class DshClientForm(forms.ModelForm):
    approval_page_tools = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple,
        label="Approval page tools",
        help_text="Approvals of these tools, in this client's sessions, are taken on Arkme's own page by the "
                  "signed-in account (besides ARKME_APPROVAL_PAGE_TOOLS).")

    class Meta:
        model = DshClient
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast(forms.MultipleChoiceField, self.fields["approval_page_tools"])
        field.choices = [(EVERY_TOOL, "Every tool whose approval is pre-execute"),
                         *((name, name) for name in page_tool_names())]

    def clean_approval_page_tools(self) -> list[str]:
        names = list(self.cleaned_data.get("approval_page_tools") or [])
        problems = page_tools_problems(names)
        if problems:
            raise forms.ValidationError(problems)
        return names


admin.site.unregister(DshClient)


@admin.register(DshClient)
class DshClientWithPageToolsAdmin(DshClientAdmin):
    form = DshClientForm

    def get_fields(self, request: HttpRequest, obj: DshClient | None = None) -> tuple[str, ...]:
        return ("name", "profiles", "approval_page_tools", "key_prefix", "created_at", "revoked_at")

    def save_model(self, request: HttpRequest, obj: DshClient, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:  # a new client is made by the service that issues its key, without the list
            DshClient.objects.filter(pk=obj.pk).update(approval_page_tools=obj.approval_page_tools)

from django.urls import path

from . import approval

urlpatterns = [
    path("<str:handle>", approval.approval_page, name="approval-page"),
    path("<str:handle>/images/<int:index>", approval.approval_image, name="approval-page-image"),
]

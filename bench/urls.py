from django.urls import path

from arkme.urls import urlpatterns as product

from .bare import BareSessionView

urlpatterns = [path("bench/bare/<str:session>", BareSessionView.as_view()), *product]

"""The floor and bare views' URLconf, apart from the product's (``bench.middleware``): a
product request resolves exactly as it does in production, and a floor request pays no
resolution of the product's patterns."""
from django.urls import path

from .bare import BareSessionView, FloorCandidatesView
from .web_floors import FloorContextView, FloorSessionView

urlpatterns = [
    path("bench/bare/<str:session>", BareSessionView.as_view()),
    path("bench/floor/<str:session>/candidates", FloorCandidatesView.as_view()),
    path("bench/floor/session/<str:session>", FloorSessionView.as_view()),
    path("bench/floor/<str:session>/context", FloorContextView.as_view()),
]

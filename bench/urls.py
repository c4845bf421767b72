from django.urls import path

from arkme.urls import urlpatterns as product

from .bare import BareSessionView, FloorCandidatesView

urlpatterns = [
    path("bench/bare/<str:session>", BareSessionView.as_view()),
    path("bench/floor/<str:session>/candidates", FloorCandidatesView.as_view()),
    *product,
]

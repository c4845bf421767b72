from django.urls import path

from . import views

app_name = "groups"

urlpatterns = [
    path("join/<str:token>", views.join, name="join"),
    path("chats/", views.chats, name="chats"),
]

"""Sessions, the signed-in user and messages exist on browser pages and nowhere on the paths
machines call; the admin's sign-in keeps its CSRF check and its session."""
from __future__ import annotations

import re

import pytest
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.test import Client
from django.urls import path


def _flash(request: HttpRequest) -> HttpResponse:
    messages.info(request, "saved")
    return redirect("/page/read")


def _read(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"messages": [str(message) for message in messages.get_messages(request)],
                         "signed_in": request.user.is_authenticated})


def _what_was_set_up(request: HttpRequest) -> JsonResponse:
    return JsonResponse({name: hasattr(request, attribute) for name, attribute in
                         (("session", "session"), ("user", "user"), ("messages", "_messages"))})


urlpatterns = [
    path("page/flash", _flash),
    path("page/read", _read),
    path("page/probe", _what_was_set_up),
    path("dsh/v1/probe", _what_was_set_up),
    path("healthz", _what_was_set_up),
]


@pytest.fixture
def browser(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_user("someone", password="pw-123456"))
    return client


@pytest.mark.urls(__name__)
def test_a_browser_page_has_the_session_the_user_and_messages(browser):
    assert browser.get("/page/probe").json() == {"session": True, "user": True, "messages": True}
    response = browser.get("/page/flash", follow=True)
    assert response.json() == {"messages": ["saved"], "signed_in": True}


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("machine_path", ["/dsh/v1/probe", "/healthz"])
def test_a_machine_path_sets_none_of_them_up_even_with_a_session_cookie(browser, machine_path,
                                                                      django_assert_num_queries):
    assert browser.cookies.get("sessionid")
    with django_assert_num_queries(0):
        response = browser.get(machine_path)
    assert response.json() == {"session": False, "user": False, "messages": False}
    assert "Set-Cookie" not in response.headers
    assert "Cookie" not in response.headers.get("Vary", "")


@pytest.mark.urls(__name__)
def test_the_machine_paths_come_from_settings(browser, settings):
    settings.ARKME_MACHINE_PATHS = ("/page/",)
    assert browser.get("/page/probe").json() == {"session": False, "user": False, "messages": False}
    assert browser.get("/dsh/v1/probe").json() == {"session": True, "user": True, "messages": True}


def test_the_admin_sign_in_keeps_its_csrf_check_and_session(db):
    get_user_model().objects.create_superuser("staff", "staff@example.com", "pw-123456")
    browser = Client(enforce_csrf_checks=True)
    form = browser.get("/admin/login/?next=/admin/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.content.decode()).group(1)
    credentials = {"username": "staff", "password": "pw-123456", "next": "/admin/"}
    assert browser.post("/admin/login/", credentials).status_code == 403
    signed_in = browser.post("/admin/login/", {**credentials, "csrfmiddlewaretoken": token})
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == "/admin/"
    assert browser.get("/admin/").status_code == 200

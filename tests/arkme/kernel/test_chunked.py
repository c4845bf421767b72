"""A chunked request body reaches Django with its length, as if it had been declared."""
from __future__ import annotations

import json

import pytest

from arkme.conversations.models import CapturedAttachment, Message
from arkme.kernel.chunked import ChunkedBodies, request_body_limit
from config.wsgi import application
from tests.support import images
from tests.support.errors import Answer, assert_error
from tests.support.wsgi import environ as wsgi_environ
from tests.support.wsgi import requests_keep_the_connection


def environ(path: str, body: bytes, *, content_type: str = "application/json", chunked: bool = True,
            terminated: bool = True, **headers: str) -> dict:
    """What gunicorn hands the application: for a chunked body, the decoded bytes, no length."""
    env = wsgi_environ("POST", path, body, CONTENT_TYPE=content_type, **headers)
    if chunked:
        del env["CONTENT_LENGTH"]
        env["HTTP_TRANSFER_ENCODING"] = "chunked"
        if terminated:
            env["wsgi.input_terminated"] = True
    return env


class Recorder:
    def __call__(self, environ, start_response):
        self.length = environ.get("CONTENT_LENGTH")
        self.body = environ["wsgi.input"].read(int(self.length or 0))
        start_response("200 OK", [])
        return [b""]


def run(app, env) -> tuple[str, dict]:
    answer: dict = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(headers)

    raw = b"".join(app(env, start_response))
    return answer["status"], json.loads(raw) if raw else {}


def answer_of(app, env) -> Answer:
    """The application's answer with its headers, to be read as a test client's response is."""
    started: dict = {}

    def start_response(status, headers, exc_info=None):
        started["status"], started["headers"] = status, dict(headers)

    raw = b"".join(app(env, start_response))
    return Answer(int(started["status"].split()[0]), started["headers"], raw)


def test_a_chunked_body_gets_its_length():
    recorder = Recorder()
    run(ChunkedBodies(recorder), environ("/x", b'{"arguments": {}}'))
    assert recorder.length == "17" and recorder.body == b'{"arguments": {}}'


def test_a_declared_length_and_a_server_that_does_not_decode_chunks_are_left_alone():
    recorder = Recorder()
    run(ChunkedBodies(recorder), environ("/x", b"{}", chunked=False))
    assert recorder.length == "2" and recorder.body == b"{}"
    undecoded = environ("/x", b"2\r\n{}\r\n0\r\n\r\n", terminated=False)
    run(ChunkedBodies(recorder), undecoded)
    assert recorder.length is None and undecoded["wsgi.input"].tell() == 0


def test_a_body_past_the_limit_is_cut_one_byte_past_it(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    recorder = Recorder()
    run(ChunkedBodies(recorder), environ("/x", b"x" * 5000))
    assert recorder.length == "1001"
    assert request_body_limit("multipart/form-data; boundary=b") > settings.ARKME_ATTACHMENT_MAX_BYTES


@pytest.fixture
def served(dsh, session):
    """After the fixtures' own requests: Django's test client connects the connection clean-up
    again when each of its requests ends, and on PostgreSQL that would close the connection
    holding the test's transaction at the next direct call."""
    with requests_keep_the_connection():
        yield


def test_a_chunked_execute_runs(served, dsh, session):
    env = environ(f"/dsh/v1/sessions/{session}/tools/arkme_context/execute", b'{"arguments": {}}',
                  HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
    status, body = run(application, env)
    assert status == "200 OK" and "account" in body["result"]


def test_a_chunked_json_body_past_the_limit_is_413(served, dsh, session, settings):
    body = json.dumps({"id": "m1", "text": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)}).encode()
    env = environ(f"/dsh/v1/sessions/{session}/messages", body, HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
    assert_error(answer_of(application, env), 413, "payload_too_large")
    assert not Message.objects.exists()


def test_a_chunked_multipart_message_keeps_its_attachments(served, dsh, session):
    png = images.png()
    body = (b"--B0UND\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\nm1\r\n"
            b"--B0UND\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhello\r\n"
            b"--B0UND\r\nContent-Disposition: form-data; name=\"attachments\"; filename=\"a.png\"\r\n"
            b"Content-Type: image/png\r\n\r\n" + png + b"\r\n--B0UND--\r\n")
    env = environ(f"/dsh/v1/sessions/{session}/messages", body, content_type="multipart/form-data; boundary=B0UND",
                  HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
    status, answer = run(application, env)
    assert status == "201 Created" and answer == {"id": "m1", "attachments": 1}
    assert Message.objects.get().text == "hello" and CapturedAttachment.objects.count() == 1
